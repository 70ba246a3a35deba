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
            case "--quick":
                n = 10_000
                runs = 3
            case "--help", "-h":
                print("usage: stowage-bench [--n N] [--runs R] [--quick] [--store memory|log|log-relaxed]")
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

let workload = Workload(count: options.n, seed: 42)
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

@MainActor func makeContainer(run: Int) throws -> ModelContainer {
    switch options.store {
    case "memory":
        return try ModelContainer(for: Trip.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
    case "log", "log-relaxed":
        let url = directory.appendingPathComponent("run\(run).store")
        let configuration = LogStoreConfiguration(
            name: "bench", schema: Schema([Trip.self]), url: url,
            durability: options.store == "log" ? .full : .relaxed)
        return try ModelContainer(for: [Trip.self], configurations: [configuration])
    default:
        throw UsageError(message: "unknown store \(options.store)")
    }
}

@MainActor func runStowage(run: Int, recordTimes: Bool) throws {
    let container = try makeContainer(run: run)
    let writer = ModelContext(container)
    let insert = try time {
        for row in workload.rows {
            writer.insert(
                Trip(
                    id: row.id, destination: row.destination, startDate: row.startDate, budget: row.budget,
                    flag: row.flag, note: row.note))
        }
        try writer.save()
    }
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
    if recordTimes {
        record("insert \(options.n) in one save", operations: options.n, stowage: insert)
        record("10k point fetches by id", operations: workload.lookupIDs.count, stowage: point)
        record("equality fetch on destination (x100)", operations: workload.destinations.count, stowage: equality)
        record("1000 range fetches, sorted, limit 20", operations: workload.rangeStarts.count, stowage: range)
        record("count, unindexed predicate (x10)", operations: 10, stowage: count)
    }
    _ = counted
}

@MainActor func runSQLite(run: Int, recordTimes: Bool) throws {
    let peer = try SQLitePeer(
        path: directory.appendingPathComponent("peer\(run).sqlite").path,
        synchronous: options.store == "log" ? "FULL" : "NORMAL")
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
    if recordTimes {
        record("insert \(options.n) in one save", operations: options.n, sqlite: insert)
        record("10k point fetches by id", operations: workload.lookupIDs.count, sqlite: point)
        record("equality fetch on destination (x100)", operations: workload.destinations.count, sqlite: equality)
        record("1000 range fetches, sorted, limit 20", operations: workload.rangeStarts.count, sqlite: range)
        record("count, unindexed predicate (x10)", operations: 10, sqlite: count)
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
    let s = median(phase.stowage)
    let q = median(phase.sqlite)
    let opsPerSecond = Double(phase.operations) / s
    print(String(format: "| %@ | %.1f | %.1f | %.0f | %.2f× |", name, s * 1000, q * 1000, opsPerSecond, q / s))
}
print("")
print(String(format: "peak resident memory: %.0f MiB", peakRSS()))
