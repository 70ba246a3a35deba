import Foundation
import Stowage
import StowageInspection
import StowageTestSupport

/// The fuzz target's entry point: the input as a log store file of the format samples' schema
/// (`Formats/samples/trips-v*.stowlog`), opened as an app opens it, point-in-time and then
/// strict. The property: opening throws a `DataStoreError` or `SwiftDataError` (a clear
/// error), or gives a store whose every record fetches and reads; and after a point-in-time
/// open, which cuts a damaged tail, `ToolStore.read` (what `stowage verify` reads) finds no
/// damage in what is left. Anything else stops the run as a finding.
func fuzzLogOpen(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    for recovery in [LogStoreConfiguration.Recovery.pointInTime, .strict] {
        let url = FuzzDriver.write(data, count, as: "store.stowlog")
        do {
            let configuration = LogStoreConfiguration(schema: LogSamples.schema, url: url, recovery: recovery)
            let container = try ModelContainer(for: LogSamples.schema, configurations: [configuration])
            let context = ModelContext(container)
            var seen = 0
            for trip in try context.fetch(FetchDescriptor<LogSampleTrip>()) {
                seen &+= trip.name.utf8.count &+ trip.items.count
            }
            for item in try context.fetch(FetchDescriptor<LogSampleItem>()) { seen &+= item.name.utf8.count }
            fuzzSink = seen
            if verbose { print("\(recovery): opened, \(seen) bytes of names read") }
        } catch let error as DataStoreError {
            if verbose { print("\(recovery): \(error)") }
            continue
        } catch let error as SwiftDataError {
            if verbose { print("\(recovery): \(error)") }
            continue
        } catch {
            fatalError("opening threw something other than a store error: \(error)")
        }
        if recovery == .pointInTime, let store = try? ToolStore.read(path: url.path), let damage = store.damage {
            fatalError("a point-in-time open left damage that verify finds: \(damage.message)")
        }
    }
    return 0
}

/// Whether to say what each input did (`STOWAGE_FUZZ_VERBOSE=1`, for a run on chosen files).
let verbose = ProcessInfo.processInfo.environment["STOWAGE_FUZZ_VERBOSE"] != nil

/// Where the walk's total goes, so that the optimizer keeps the walk.
nonisolated(unsafe) var fuzzSink = 0
