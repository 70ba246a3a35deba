import Foundation
import Stowage

// stowage-bench: Stowage's stores beside SQLite on the same rows, in the same process.
//
//   swift run -c release stowage-bench [--n 100000] [--runs 5] [--quick] [--store memory|log|log-relaxed]
//
// Every figure is the median of several runs after a warm-up run. Ratios are SQLite's time
// divided by Stowage's, so a ratio above 1 means Stowage is faster.

struct Options {
    var n = 100_000
    var runs = 5
    var store = "memory"
    /// Single-row saves to time; the JSON store rewrites its whole file for each, so it
    /// defaults to fewer at large N.
    var singleSaves: Int?

    init(_ arguments: [String]) throws {
        var i = 0
        while i < arguments.count {
            let flag = arguments[i]
            func value() throws -> String {
                i += 1
                guard i < arguments.count else { throw UsageError(message: "\(flag) needs a value") }
                return arguments[i]
            }
            switch flag {
            case "--n": n = Int(try value()) ?? n
            case "--runs": runs = Int(try value()) ?? runs
            case "--store": store = try value()
            case "--single-saves": singleSaves = Int(try value())
            case "--quick":
                n = 10_000
                runs = 3
            case "--help", "-h":
                print(
                    "usage: stowage-bench [--n N] [--runs R] [--quick] [--store memory|log|log-relaxed|json] [--single-saves K]"
                )
                exit(0)
            default: throw UsageError(message: "unknown option \(flag)")
            }
            i += 1
        }
    }
}

struct UsageError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}

/// Seconds taken by `body`.
func time(_ body: () throws -> Void) rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.isEmpty ? .nan : sorted[sorted.count / 2]
}

/// Peak resident memory of this process, in MiB.
func peakRSS() -> Double {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return .nan }
    for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
        let kb = line.split(separator: " ").dropFirst().first.flatMap { Double($0) } ?? .nan
        return kb / 1024
    }
    return .nan
}

/// One phase's timings on both sides.
struct Phase {
    let name: String
    let operations: Int
    var stowage: [Double] = []
    var sqlite: [Double] = []
}

let options: Options
do {
    options = try Options(Array(CommandLine.arguments.dropFirst()))
} catch {
    FileHandle.standardError.write(Data("stowage-bench: \(error)\n".utf8))
    exit(2)
}

let workload = Workload(
    count: options.n, seed: 42,
    singleSaves: options.singleSaves ?? (options.store == "json" && options.n > 10_000 ? 20 : 1000))
let directory = FileManager.default.temporaryDirectory.appendingPathComponent("stowage-bench-\(getpid())")
try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: directory) }

var phases: [String: Phase] = [:]
var order: [String] = []
@MainActor func record(_ name: String, operations: Int, stowage: Double? = nil, sqlite: Double? = nil) {
    if phases[name] == nil {
        phases[name] = Phase(name: name, operations: operations)
        order.append(name)
    }
    if let stowage { phases[name]?.stowage.append(stowage) }
    if let sqlite { phases[name]?.sqlite.append(sqlite) }
}

@MainActor func storeURL(run: Int) -> URL { directory.appendingPathComponent("run\(run).store") }

@MainActor func makeContainer(run: Int) throws -> ModelContainer {
    switch options.store {
    case "memory":
        return try ModelContainer(for: Trip.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
    case "json":
        let configuration = JSONStoreConfiguration(
            name: "bench", schema: Schema([Trip.self]), fileURL: storeURL(run: run))
        return try ModelContainer(for: [Trip.self], configurations: [configuration])
    case "log", "log-relaxed":
        let configuration = LogStoreConfiguration(
            name: "bench", schema: Schema([Trip.self]), url: storeURL(run: run),
            durability: options.store == "log" ? .full : .relaxed)
        return try ModelContainer(for: [Trip.self], configurations: [configuration])
    default:
        throw UsageError(message: "unknown store \(options.store)")
    }
}

func makeTrip(_ row: TripRow) -> Trip {
    Trip(
        id: row.id, destination: row.destination, startDate: row.startDate, budget: row.budget, flag: row.flag,
        note: row.note)
}

/// The rows left after every phase: all rows and the single-row saves, less the deleted destinations.
let expectedDeleted = (workload.rows + workload.singles).filter { workload.doomedDestinations.contains($0.destination) }
    .count
let expectedFinalCount = workload.rows.count + workload.singles.count - expectedDeleted

let updateName = "update \(workload.updates.count) rows (10%) in saves of 1000"
let singlesName = "\(workload.singles.count) single-row durable saves"
let deleteName = "batch delete of 10 destinations (\(expectedDeleted) rows)"
let reopenName = "close, reopen and count"
let openName = "of which open and count"
var bytesOnDisk: (stowage: [Double], sqlite: [Double]) = ([], [])

/// Every phase up to the reopen, on one container. Its contexts and models are gone when it returns.
@MainActor func stowagePhases(_ container: ModelContainer, recordTimes: Bool) throws {
    let writer = ModelContext(container)
    var inserted: [Trip] = []
    inserted.reserveCapacity(workload.rows.count)
    let insert = try time {
        for row in workload.rows {
            let trip = makeTrip(row)
            writer.insert(trip)
            inserted.append(trip)
        }
        try writer.save()
    }
    // The identifiers play the part of SQLite's integer primary key in the update phase.
    let updateIDs = stride(from: 0, to: inserted.count, by: 10).map { inserted[$0].persistentModelID }
    precondition(updateIDs.allSatisfy { !$0.isTemporary } && updateIDs.count == workload.updates.count)
    inserted = []
    let reader = ModelContext(container)
    var found = 0
    let repeats = ProcessInfo.processInfo.environment["STOWAGE_BENCH_PROFILE_POINT"] != nil ? 20 : 1
    let point = try time {
        for id in Array(repeating: workload.lookupIDs, count: repeats).joined() {
            var descriptor = FetchDescriptor<Trip>(predicate: #Predicate { $0.id == id })
            descriptor.fetchLimit = 1
            found += try reader.fetch(descriptor).count
        }
    }
    precondition(found == workload.lookupIDs.count * repeats, "point fetches found \(found)")
    let equalityReader = ModelContext(container)
    var equalityRows = 0
    let equality = try time {
        for destination in workload.destinations {
            equalityRows += try equalityReader.fetch(
                FetchDescriptor<Trip>(predicate: #Predicate { $0.destination == destination })
            ).count
        }
    }
    precondition(equalityRows == workload.rows.count)
    let rangeReader = ModelContext(container)
    let range = try time {
        for start in workload.rangeStarts {
            var descriptor = FetchDescriptor<Trip>(
                predicate: #Predicate { $0.startDate > start }, sortBy: [SortDescriptor(\.startDate)])
            descriptor.fetchLimit = 20
            _ = try rangeReader.fetch(descriptor)
        }
    }
    var counted = 0
    let count = try time {
        for i in 0..<10 {
            let threshold = Double(i * 100)
            counted += try reader.fetchCount(
                FetchDescriptor<Trip>(predicate: #Predicate { $0.budget > threshold && $0.flag == false }))
        }
    }
    let updater = ModelContext(container)
    let update = try time {
        var start = 0
        while start < updateIDs.count {
            let end = min(start + 1000, updateIDs.count)
            for i in start..<end {
                guard let trip = try updater.existingModel(for: updateIDs[i]) as? Trip else {
                    throw UsageError(message: "not a Trip")
                }
                trip.budget = workload.updates[i].budget + 1
            }
            try updater.save()
            start = end
        }
    }
    let single = ModelContext(container)
    let singles = try time {
        for row in workload.singles {
            single.insert(makeTrip(row))
            try single.save()
        }
    }
    let deleter = ModelContext(container)
    let doomed = workload.doomedDestinations
    var deleted = 0
    let delete = try time {
        try deleter.delete(model: Trip.self, where: #Predicate { doomed.contains($0.destination) })
        deleted = deleter.deletedModelsArray.count
        try deleter.save()
    }
    precondition(deleted == expectedDeleted, "deleted \(deleted), expected \(expectedDeleted)")
    if recordTimes {
        record("insert \(options.n) in one save", operations: options.n, stowage: insert)
        record("10k point fetches by id", operations: workload.lookupIDs.count, stowage: point)
        record("equality fetch on destination (x100)", operations: workload.destinations.count, stowage: equality)
        record("1000 range fetches, sorted, limit 20", operations: workload.rangeStarts.count, stowage: range)
        record("count, unindexed predicate (x10)", operations: 10, stowage: count)
        record(updateName, operations: workload.updates.count, stowage: update)
        record(singlesName, operations: workload.singles.count, stowage: singles)
        record(deleteName, operations: expectedDeleted, stowage: delete)
    }
    _ = counted
}

@MainActor func runStowage(run: Int, recordTimes: Bool) throws {
    var container: ModelContainer? = try makeContainer(run: run)
    if let container { try stowagePhases(container, recordTimes: recordTimes) }
    guard options.store != "memory" else {
        // Nothing to reopen: the memory store's records go with its container.
        container = nil
        return
    }
    var reopenedCount = 0
    let close = time { container = nil }  // closes the store: it must release its lock, or the open below fails
    let open = try time {
        let again = try makeContainer(run: run)
        reopenedCount = try ModelContext(again).fetchCount(FetchDescriptor<Trip>())
        container = again
    }
    precondition(reopenedCount == expectedFinalCount, "reopened \(reopenedCount), expected \(expectedFinalCount)")
    container = nil
    let size = (try FileManager.default.attributesOfItem(atPath: storeURL(run: run).path)[.size] as? NSNumber)?
        .int64Value
    if recordTimes {
        record(reopenName, operations: 1, stowage: close + open)
        record(openName, operations: 1, stowage: open)
        bytesOnDisk.stowage.append(Double(size ?? 0))
    }
}

@MainActor func runSQLite(run: Int, recordTimes: Bool) throws {
    let path = directory.appendingPathComponent("peer\(run).sqlite").path
    let synchronous = options.store == "log" || options.store == "json" ? "FULL" : "NORMAL"
    var peer = try SQLitePeer(path: path, synchronous: synchronous)
    let insert = try time { try peer.insert(workload.rows) }
    var found = 0
    let point = try time {
        for id in workload.lookupIDs where try peer.fetch(id: id) != nil { found += 1 }
    }
    precondition(found == workload.lookupIDs.count)
    var equalityRows = 0
    let equality = try time {
        for destination in workload.destinations { equalityRows += try peer.fetch(destination: destination).count }
    }
    precondition(equalityRows == workload.rows.count)
    let range = try time {
        for start in workload.rangeStarts { _ = try peer.fetch(after: start, limit: 20) }
    }
    var counted = 0
    let count = try time {
        for i in 0..<10 { counted += try peer.countUnindexed(budgetAbove: Double(i * 100)) }
    }
    let update = try time { try peer.updateBudgets(workload.updates, batch: 1000) }
    let singles = try time {
        for row in workload.singles { try peer.insertOne(row) }
    }
    var deleted = 0
    let delete = try time { deleted = try peer.delete(destinations: workload.doomedDestinations) }
    precondition(deleted == expectedDeleted, "SQLite deleted \(deleted), expected \(expectedDeleted)")
    var reopenedCount = 0
    let close = time { peer.close() }
    let open = try time {
        peer = try SQLitePeer(path: path, synchronous: synchronous, reopen: true)
        reopenedCount = try peer.count()
    }
    precondition(reopenedCount == expectedFinalCount, "SQLite reopened \(reopenedCount)")
    let size = try peer.bytesOnDisk()
    if recordTimes {
        record("insert \(options.n) in one save", operations: options.n, sqlite: insert)
        record("10k point fetches by id", operations: workload.lookupIDs.count, sqlite: point)
        record("equality fetch on destination (x100)", operations: workload.destinations.count, sqlite: equality)
        record("1000 range fetches, sorted, limit 20", operations: workload.rangeStarts.count, sqlite: range)
        record("count, unindexed predicate (x10)", operations: 10, sqlite: count)
        record(updateName, operations: workload.updates.count, sqlite: update)
        record(singlesName, operations: workload.singles.count, sqlite: singles)
        record(deleteName, operations: expectedDeleted, sqlite: delete)
        record(reopenName, operations: 1, sqlite: close + open)
        record(openName, operations: 1, sqlite: open)
        bytesOnDisk.sqlite.append(Double(size))
    }
    _ = counted
}

let machine =
    "\(ProcessInfo.processInfo.activeProcessorCount) cores, \(ProcessInfo.processInfo.physicalMemory >> 30) GiB"
print("stowage-bench: store \(options.store), N = \(options.n), \(options.runs) runs + 1 warm-up, \(machine)")
do {
    for run in 0...options.runs {
        let label = run == 0 ? "warm-up" : "run \(run)/\(options.runs)"
        FileHandle.standardError.write(Data("  \(label): Stowage…".utf8))
        try runStowage(run: run, recordTimes: run > 0)
        FileHandle.standardError.write(Data(" SQLite…".utf8))
        try runSQLite(run: run, recordTimes: run > 0)
        FileHandle.standardError.write(Data(" done\n".utf8))
    }
} catch {
    FileHandle.standardError.write(Data("stowage-bench: \(error)\n".utf8))
    exit(1)
}

print("")
print("| operation | Stowage (ms) | SQLite (ms) | Stowage ops/s | speed vs SQLite |")
print("|---|---:|---:|---:|---:|")
for name in order {
    guard let phase = phases[name] else { continue }
    let q = median(phase.sqlite)
    guard !phase.stowage.isEmpty else {
        print(String(format: "| %@ | n/a | %.1f | n/a | n/a |", name, q * 1000))
        continue
    }
    let s = median(phase.stowage)
    let opsPerSecond = Double(phase.operations) / s
    print(String(format: "| %@ | %.1f | %.1f | %.0f | %.2f× |", name, s * 1000, q * 1000, opsPerSecond, q / s))
}
let mib = 1024.0 * 1024.0
if bytesOnDisk.stowage.isEmpty {
    print(String(format: "| bytes on disk after the phases (MiB) | n/a | %.1f | | |", median(bytesOnDisk.sqlite) / mib))
} else {
    // For bytes the ratio is the same way round: above 1 means Stowage uses less.
    let s = median(bytesOnDisk.stowage)
    let q = median(bytesOnDisk.sqlite)
    print(String(format: "| bytes on disk after the phases (MiB) | %.1f | %.1f | | %.2f× |", s / mib, q / mib, q / s))
}
print("")
print(String(format: "peak resident memory: %.0f MiB", peakRSS()))
