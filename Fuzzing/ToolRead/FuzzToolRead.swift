import Foundation
import StowageInspection
import StowageTestSupport

/// The fuzz target's entry point: the input as a store file that `stowage verify`, `inspect` and
/// `dump` read (`ToolStore.read`, a log or a JSON document, told apart by its bytes). The
/// property: no crash and no sanitizer report; reading fails with a `ToolFailure` or gives
/// a store, whose records, schema and history are then all walked.
func fuzzToolRead(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let path = FuzzDriver.write(data, count, as: "input").path
    guard let store = try? ToolStore.read(path: path) else { return 0 }
    var seen = store.recordCount + store.problems.count + (store.history?.count ?? 0)
    for records in store.records.values {
        for record in records {
            for value in record.values { seen &+= ToolJSON.text(value).utf8.count }
        }
    }
    if let schema = store.schema { seen &+= schema.entities.count }
    fuzzSink = seen
    return 0
}

/// Where the walk's total goes, so that the optimizer keeps the walk.
nonisolated(unsafe) var fuzzSink = 0
