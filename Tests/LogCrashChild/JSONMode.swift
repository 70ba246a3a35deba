// The JSONStore mode of the crash child (Tests/StowageTests/JSONCrashTests.swift):
//
//   LogCrashChild json-save <store-file>   saves numbered batches into a JSONStore forever,
//                                          printing "saving N" before each batch's save and
//                                          "N" once it is acknowledged (after "ready")
import Foundation
import Stowage
import StowageTestSupport

func runJSONSave(_ path: String) throws -> Never {
    let schema = Schema([CrashBatch.self])
    let configuration = JSONStoreConfiguration(name: "crash", schema: schema, fileURL: URL(fileURLWithPath: path))
    let container = try ModelContainer(for: schema, configurations: [configuration])
    var next = (try ModelContext(container).fetch(FetchDescriptor<CrashBatch>()).map(\.batch).max() ?? 0) + 1
    say("ready")
    while true {
        let context = ModelContext(container)
        insertBatch(next, into: context, withBlobs: false)
        say("saving \(next)")
        try context.save()
        say(String(next))
        next += 1
    }
}
