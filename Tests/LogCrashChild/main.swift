// The child process of the LogStore crash tests (Tests/StowageTests/LogCrashTests.swift).
//
// The saving modes print "ready" once the store is open, then "saving N" before each
// batch's save and "N" once the save has returned: a kill that lands after a "saving N"
// with no "N" after it landed while batch N was being saved.
//
//   LogCrashChild save <store-file> [chunk]
//                                       saves numbered batches forever, printing each
//                                       acknowledged batch number (after "ready"), and
//                                       writes a checkpoint after every third batch; with
//                                       `chunk`, commits over that many bytes are written in
//                                       pieces, frame last (`commitChunkBytes`)
//   LogCrashChild lock <store-file>     tries to open the store; prints "opened" or the
//                                       DataStoreError code, e.g. "storeLocked"
//   LogCrashChild read <store-file>     opens the store read-only (allowsSave: false);
//                                       prints "opened <batches>" or the DataStoreError code
//   LogCrashChild migrate <store-file> log|json
//                                       opens the store with ParcelPlan (V1 to V2), prints
//                                       "migrated <parcels>"
//   LogCrashChild history <store-file> <round>
//                                       eight @ModelActor actors, each with its own context
//                                       and author ("worker N"), save batches round * 1_000_000 +
//                                       N * 10_000 + k forever, printing each acknowledged
//                                       batch number (after "ready")
//   LogCrashChild soak log|json <store-file> <seed> <round> [dead=<bytes>] [chunk=<bytes>]
//                                       two @ModelActor workers save SoakPlan batches at
//                                       once (SoakMode.swift)
//   LogCrashChild default               opens ModelContainer(for:) with no configuration
//                                       (under $XDG_DATA_HOME), saves one batch, prints
//                                       "saved <path>"
import Foundation
@_spi(Testing) import Stowage
import StowageTestSupport

func say(_ line: String) {
    print(line)
    fflush(nil)  // every stream: `stdout` itself is shared mutable state to Swift 6
}

/// The JSON store rewrites its whole document on every save, so its crash test leaves the
/// external bytes out to keep its saves quick.
func insertBatch(_ n: Int, into context: ModelContext, withBlobs: Bool = true) {
    for i in 0..<CrashBatch.size(ofBatch: n) {
        context.insert(
            CrashBatch(
                batch: n, index: i, payload: CrashBatch.payload(batch: n, row: i),
                blob: withBlobs ? CrashBatch.blob(batch: n, row: i) : Data()))
    }
}

/// One of the `history` mode's eight savers: a `@ModelActor` with a context of its own.
@ModelActor
actor BatchSaver {
    func sign(_ author: String) { modelContext.author = author }

    func save(batch: Int) throws {
        insertBatch(batch, into: modelContext, withBlobs: false)
        try modelContext.save()
    }
}

let arguments = CommandLine.arguments
guard arguments.count >= 2 else {
    say("usage: LogCrashChild save <store-file> | lock <store-file> | read <store-file> | default")
    exit(64)
}

do {
    switch arguments[1] {
    case "save" where arguments.count >= 3:
        var configuration = LogStoreConfiguration(url: URL(fileURLWithPath: arguments[2]))
        if arguments.count >= 4, let chunk = Int(arguments[3]) { configuration.commitChunkBytes = chunk }
        let container = try ModelContainer(for: Schema([CrashBatch.self]), configurations: [configuration])
        var next = (try ModelContext(container).fetch(FetchDescriptor<CrashBatch>()).map(\.batch).max() ?? 0) + 1
        say("ready")
        while true {
            let context = ModelContext(container)
            insertBatch(next, into: context)
            say("saving \(next)")
            try context.save()
            say(String(next))
            if next % 3 == 0, let store = container.storesForTesting.first as? LogStore {
                try store.checkpoint()
            }
            next += 1
        }
    case "migrate" where arguments.count >= 4:
        let schema = Schema(versionedSchema: ParcelV2.self)
        let url = URL(fileURLWithPath: arguments[2])
        let configuration: any DataStoreConfiguration =
            arguments[3] == "json"
            ? JSONStoreConfiguration(name: "parcels", schema: schema, fileURL: url)
            : LogStoreConfiguration(schema: schema, url: url)
        let container = try ModelContainer(for: schema, migrationPlan: ParcelPlan.self, configurations: [configuration])
        say("migrated \(try ModelContext(container).fetchCount(FetchDescriptor<ParcelV2.Parcel>()))")
    case "history" where arguments.count >= 4:
        let round = Int(arguments[3]) ?? 0
        let container = try ModelContainer(
            for: Schema([CrashBatch.self]),
            configurations: [LogStoreConfiguration(url: URL(fileURLWithPath: arguments[2]))])
        say("ready")
        for worker in 0..<8 {
            Task.detached {
                do {
                    let saver = BatchSaver(modelContainer: container)
                    await saver.sign("worker \(worker)")
                    for k in 0... {
                        let batch = round * 1_000_000 + worker * 10_000 + k
                        say("saving \(batch)")
                        try await saver.save(batch: batch)
                        say(String(batch))
                    }
                } catch {
                    say("error \(error)")
                    exit(1)
                }
            }
        }
        while true { sleep(1) }
    case "lock" where arguments.count >= 3:
        let configuration = LogStoreConfiguration(url: URL(fileURLWithPath: arguments[2]))
        do {
            _ = try ModelContainer(for: Schema([CrashBatch.self]), configurations: [configuration])
            say("opened")
        } catch let error as DataStoreError {
            say(error.code.rawValue)
            say(error.message)
        }
    case "read" where arguments.count >= 3:
        let configuration = LogStoreConfiguration(url: URL(fileURLWithPath: arguments[2]), allowsSave: false)
        do {
            let container = try ModelContainer(for: Schema([CrashBatch.self]), configurations: [configuration])
            let batches = Set(try ModelContext(container).fetch(FetchDescriptor<CrashBatch>()).map(\.batch))
            say("opened \(batches.count)")
        } catch let error as DataStoreError {
            say(error.code.rawValue)
            say(error.message)
        }
    case "soak" where arguments.count >= 6:
        try runSoak(arguments[2...])
    case "json-save" where arguments.count >= 3:
        try runJSONSave(arguments[2])
    case "default":
        let container = try ModelContainer(for: CrashBatch.self)
        let context = ModelContext(container)
        insertBatch(1, into: context)
        try context.save()
        say("saved " + ModelConfiguration().url.path)
    default:
        say("unknown mode \(arguments[1])")
        exit(64)
    }
} catch {
    say("error \(error)")
    exit(1)
}
