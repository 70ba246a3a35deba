// migration-bench: a migration that adds two properties to every record, on Stowage's
// default store (a LogStore, default configuration) and on SQLite (WAL, synchronous=FULL,
// default cache), in the same run, each step in a child process of its own so that its
// peak resident memory is its own.
//
//   migration-bench [--n N] [--runs R]
//
// Steps, each timed from opening to a count of the records:
// - reopen: open the version 1 store and count (the baseline);
// - lightweight: open with a plan whose stage adds `rating: Int = 0` and `memo: String?`;
//   SQLite: two ALTER TABLE ... ADD COLUMN in one transaction;
// - reopen-migrated: after the lightweight step (not timed), open the result and count;
// - custom: the same stage as a custom one whose didMigrate sets every rating from the
//   record's weight, in batches of 5,000 saved one by one; SQLite: the two ALTER TABLEs and
//   an UPDATE over every row, in one transaction.
// Every step starts from a copy of the same version 1 store (the copy is not timed).
import CSQLite
import Foundation
import Stowage

enum ItemV1: VersionedSchema {
    static let versionIdentifier = Schema.Version(1, 0, 0)
    static var models: [any PersistentModel.Type] { [Item.self] }
    @Model final class Item {
        @Attribute(.unique) var code: Int
        var name: String
        var weight: Int
        init(code: Int, name: String, weight: Int) {
            self.code = code
            self.name = name
            self.weight = weight
        }
    }
}

enum ItemV2: VersionedSchema {
    static let versionIdentifier = Schema.Version(2, 0, 0)
    static var models: [any PersistentModel.Type] { [Item.self] }
    @Model final class Item {
        @Attribute(.unique) var code: Int
        var name: String
        var weight: Int
        var rating: Int = 0
        var memo: String?
        init(code: Int, name: String, weight: Int) {
            self.code = code
            self.name = name
            self.weight = weight
        }
    }
}

enum LightweightPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [ItemV1.self, ItemV2.self] }
    static var stages: [MigrationStage] { [.lightweight(fromVersion: ItemV1.self, toVersion: ItemV2.self)] }
}

enum CustomPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [ItemV1.self, ItemV2.self] }
    static var stages: [MigrationStage] {
        [
            .custom(
                fromVersion: ItemV1.self, toVersion: ItemV2.self, willMigrate: nil,
                didMigrate: { context in
                    let count = try context.fetchCount(FetchDescriptor<ItemV2.Item>())
                    var start = 0
                    while start <= count {
                        let low = start
                        let high = start + 5000
                        let batch = try context.fetch(
                            FetchDescriptor<ItemV2.Item>(predicate: #Predicate { $0.code >= low && $0.code < high }))
                        for item in batch { item.rating = item.weight * 2 }
                        try context.save()
                        start = high
                    }
                })
        ]
    }
}

func status(_ field: String) -> Int64 {
    guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
    for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
        return (line.split(separator: " ").dropFirst().first.flatMap { Int64($0) } ?? 0) * 1024
    }
    return 0
}

func seconds(_ body: () throws -> Void) rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

func sqlite(_ db: OpaquePointer?, _ sql: String) {
    var message: UnsafeMutablePointer<CChar>?
    if sqlite3_exec(db, sql, nil, nil, &message) != SQLITE_OK {
        FileHandle.standardError.write(Data("SQLite: \(sql): \(message.map { String(cString: $0) } ?? "?")\n".utf8))
        exit(1)
    }
}

func sqliteCount(_ db: OpaquePointer?) -> Int {
    var statement: OpaquePointer?
    sqlite3_prepare_v2(db, "SELECT count(*) FROM item", -1, &statement, nil)
    defer { sqlite3_finalize(statement) }
    return sqlite3_step(statement) == SQLITE_ROW ? Int(sqlite3_column_int64(statement, 0)) : -1
}

func openSQLite(_ path: String) -> OpaquePointer? {
    var db: OpaquePointer?
    guard sqlite3_open(path, &db) == SQLITE_OK else { exit(1) }
    sqlite(db, "PRAGMA journal_mode=WAL")
    sqlite(db, "PRAGMA synchronous=FULL")
    return db
}

/// A child's step: prints "<seconds> <peak bytes> <count>".
func step(_ name: String, _ path: String) throws {
    var count = 0
    let url = URL(fileURLWithPath: path)
    let elapsed: Double = try seconds {
        switch name {
        case "stowage-reopen":
            let schema = Schema(versionedSchema: ItemV1.self)
            let container = try ModelContainer(
                for: schema, configurations: [LogStoreConfiguration(schema: schema, url: url)])
            count = try ModelContext(container).fetchCount(FetchDescriptor<ItemV1.Item>())
        case "stowage-lightweight", "stowage-custom":
            let schema = Schema(versionedSchema: ItemV2.self)
            let plan: any SchemaMigrationPlan.Type = name == "stowage-custom" ? CustomPlan.self : LightweightPlan.self
            let container = try ModelContainer(
                for: schema, migrationPlan: plan, configurations: [LogStoreConfiguration(schema: schema, url: url)])
            count = try ModelContext(container).fetchCount(FetchDescriptor<ItemV2.Item>())
        case "stowage-reopen-migrated":
            let schema = Schema(versionedSchema: ItemV2.self)
            let container = try ModelContainer(
                for: schema, configurations: [LogStoreConfiguration(schema: schema, url: url)])
            count = try ModelContext(container).fetchCount(FetchDescriptor<ItemV2.Item>())
        case "sqlite-reopen", "sqlite-reopen-migrated":
            let db = openSQLite(path)
            count = sqliteCount(db)
            sqlite3_close(db)
        case "sqlite-lightweight", "sqlite-custom":
            let db = openSQLite(path)
            sqlite(db, "BEGIN")
            sqlite(db, "ALTER TABLE item ADD COLUMN rating INTEGER NOT NULL DEFAULT 0")
            sqlite(db, "ALTER TABLE item ADD COLUMN memo TEXT")
            if name == "sqlite-custom" { sqlite(db, "UPDATE item SET rating = weight * 2") }
            sqlite(db, "COMMIT")
            count = sqliteCount(db)
            sqlite3_close(db)
        default:
            FileHandle.standardError.write(Data("unknown step \(name)\n".utf8))
            exit(64)
        }
    }
    print("\(elapsed) \(status("VmHWM")) \(count)")
}

/// Writes the version 1 store and the SQLite database with `n` records.
func prepare(_ directory: String, n: Int) throws {
    let schema = Schema(versionedSchema: ItemV1.self)
    do {
        let container = try ModelContainer(
            for: schema,
            configurations: [LogStoreConfiguration(schema: schema, url: URL(fileURLWithPath: directory + "/v1.store"))])
        let context = ModelContext(container)
        for code in 0..<n { context.insert(ItemV1.Item(code: code, name: "item \(code)", weight: code % 97)) }
        try context.save()
    }
    let db = openSQLite(directory + "/v1.sqlite")
    sqlite(
        db,
        "CREATE TABLE item (pk INTEGER PRIMARY KEY, code INTEGER NOT NULL UNIQUE, name TEXT NOT NULL, weight INTEGER NOT NULL)"
    )
    sqlite(db, "BEGIN")
    var statement: OpaquePointer?
    sqlite3_prepare_v2(db, "INSERT INTO item (code, name, weight) VALUES (?, ?, ?)", -1, &statement, nil)
    let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
    for code in 0..<n {
        sqlite3_reset(statement)
        sqlite3_bind_int64(statement, 1, Int64(code))
        sqlite3_bind_text(statement, 2, "item \(code)", -1, transient)
        sqlite3_bind_int64(statement, 3, Int64(code % 97))
        guard sqlite3_step(statement) == SQLITE_DONE else { exit(1) }
    }
    sqlite3_finalize(statement)
    sqlite(db, "COMMIT")
    sqlite3_close(db)
}

func copyFiles(_ directory: String, from: String, to: String) throws {
    let fm = FileManager.default
    for name in try fm.contentsOfDirectory(atPath: directory) where name.hasPrefix(to) {
        try fm.removeItem(atPath: directory + "/" + name)
    }
    for name in try fm.contentsOfDirectory(atPath: directory) where name.hasPrefix(from) && !name.hasSuffix(".lock") {
        try fm.copyItem(atPath: directory + "/" + name, toPath: directory + "/" + to + name.dropFirst(from.count))
    }
}

func child(_ arguments: [String]) -> (Double, Int64, Int) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    process.arguments = arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    try? process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    let parts = String(decoding: data, as: UTF8.self).split(whereSeparator: \.isWhitespace)
    guard process.terminationStatus == 0, parts.count == 3 else {
        FileHandle.standardError.write(Data("step \(arguments) failed\n".utf8))
        exit(1)
    }
    return (Double(parts[0]) ?? 0, Int64(parts[1]) ?? 0, Int(parts[2]) ?? 0)
}

let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "--step", arguments.count == 3 {
    try step(arguments[1], arguments[2])
    exit(0)
}
if arguments.first == "--prepare", arguments.count == 3, let n = Int(arguments[2]) {
    try prepare(arguments[1], n: n)
    exit(0)
}
var n = 1_000_000
var runs = 3
var index = 0
while index < arguments.count {
    switch arguments[index] {
    case "--n":
        n =
            Int(
                arguments[index + 1].replacingOccurrences(of: "k", with: "000").replacingOccurrences(
                    of: "M", with: "000000")) ?? n
    case "--runs": runs = Int(arguments[index + 1]) ?? runs
    default:
        print("usage: migration-bench [--n N] [--runs R]")
        exit(64)
    }
    index += 2
}

let directory = FileManager.default.temporaryDirectory.appendingPathComponent("migration-bench-\(getpid())").path
try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(atPath: directory) }
FileHandle.standardError.write(Data("preparing \(n) records...\n".utf8))
try prepare(directory, n: n)

struct Samples {
    var seconds: [Double] = []
    var peaks: [Int64] = []
}
func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.isEmpty
        ? 0
        : sorted.count % 2 == 1
            ? sorted[sorted.count / 2]
            : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}
let phases = ["reopen", "lightweight", "reopen-migrated", "custom"]
var samples: [String: Samples] = [:]
for run in 0..<runs {
    for phase in phases {
        let sides = run % 2 == 0 ? ["stowage", "sqlite"] : ["sqlite", "stowage"]
        for side in sides {
            let (from, to) = side == "stowage" ? ("v1.store", "work.store") : ("v1.sqlite", "work.sqlite")
            try copyFiles(directory, from: from, to: to)
            if phase == "reopen-migrated" {
                // The lightweight stage first, not timed: then a plain open of the result.
                _ = child(["--step", "\(side)-lightweight", directory + "/" + to])
            }
            let (elapsed, peak, count) = child(["--step", "\(side)-\(phase)", directory + "/" + to])
            guard count == n else {
                FileHandle.standardError.write(Data("\(side) \(phase) counted \(count) of \(n)\n".utf8))
                exit(1)
            }
            samples["\(side)-\(phase)", default: Samples()].seconds.append(elapsed)
            samples["\(side)-\(phase)", default: Samples()].peaks.append(peak)
            FileHandle.standardError.write(Data("run \(run + 1) \(side) \(phase): \(Int(elapsed * 1000)) ms\n".utf8))
        }
    }
}
print("## Migration, N = \(n), median of \(runs) runs (each step in a process of its own)")
print("")
print("| step | Stowage (ms) | SQLite (ms) | speed vs SQLite | Stowage peak (MiB) | SQLite peak (MiB) |")
print("|---|---:|---:|---:|---:|---:|")
let names = [
    "reopen": "open and count (no migration)",
    "lightweight": "add two properties (lightweight stage; SQLite: 2 ALTER TABLE ADD COLUMN)",
    "reopen-migrated": "open and count after that stage (no migration)",
    "custom": "add two properties and set one on every row (custom stage; SQLite: + UPDATE)",
]
for phase in phases {
    let a = samples["stowage-\(phase)"] ?? Samples()
    let b = samples["sqlite-\(phase)"] ?? Samples()
    let ms = { (x: Double) in String(format: "%.1f", x * 1000) }
    let mib = { (x: [Int64]) in String(format: "%.0f", Double(x.max() ?? 0) / 1_048_576) }
    print(
        "| \(names[phase]!) | \(ms(median(a.seconds))) | \(ms(median(b.seconds))) | "
            + String(format: "%.2f×", median(b.seconds) / max(median(a.seconds), 1e-9))
            + " | \(mib(a.peaks)) | \(mib(b.peaks)) |")
}
