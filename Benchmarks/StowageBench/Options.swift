import Foundation

/// A Stowage store the benchmark drives through `ModelContext`.
enum StoreKind: String, CaseIterable, Codable, Sendable {
    case memory
    case json
    case logFull = "log-full"
    case logRelaxed = "log-relaxed"
    /// `PostgresStore`, on the server `--postgres` names; not run unless asked for.
    case postgres
    /// `PostgresStore` with `keepsHistory`: what the history costs.
    case postgresHistory = "postgres-history"

    /// The stores run when `--stores` names none.
    static let defaults: [StoreKind] = [.memory, .json, .logFull, .logRelaxed]

    /// The peer with the matching durability: SQLite, or libpq for PostgreSQL.
    var peer: PeerKind {
        switch self {
        case .memory: .memory
        case .json, .logFull: .walFull
        case .logRelaxed: .walNormal
        case .postgres, .postgresHistory: .libpq
        }
    }

    var title: String {
        switch self {
        case .memory: "Memory store"
        case .json: "JSON store"
        case .logFull: "Log store, .full"
        case .logRelaxed: "Log store, .relaxed"
        case .postgres: "PostgresStore"
        case .postgresHistory: "PostgresStore, keepsHistory"
        }
    }

    /// What a save promises, in the store's terms.
    var durability: String {
        switch self {
        case .memory: "nothing persisted"
        case .json: "temp file, fsync, rename, directory fsync per save"
        case .logFull: "one pwrite and fdatasync per save"
        case .logRelaxed: "one pwrite per save, no sync"
        case .postgres: "one transaction per save, committed as the server is configured"
        case .postgresHistory: "one transaction per save, with its history row, committed in order"
        }
    }

    /// Whether the store is a `PostgresStore`.
    var isPostgres: Bool { self == .postgres || self == .postgresHistory }

    /// Whether the store has a file to close, reopen and measure.
    var persists: Bool { self != .memory }

    init?(argument: String) {
        switch argument {
        case "log": self = .logFull
        default: self.init(rawValue: argument)
        }
    }
}

/// The SQLite side of a comparison.
enum PeerKind: String, CaseIterable, Codable, Sendable {
    case memory = "sqlite-memory"
    case walFull = "sqlite-wal-full"
    case walNormal = "sqlite-wal-normal"
    /// The same work through libpq directly, on the same server as `PostgresStore`.
    case libpq

    var title: String {
        switch self {
        case .memory: "SQLite :memory:"
        case .walFull: "SQLite WAL, synchronous=FULL"
        case .walNormal: "SQLite WAL, synchronous=NORMAL"
        case .libpq: "libpq, prepared statements"
        }
    }

    /// The peer's name in a table's columns.
    var shortName: String { self == .libpq ? "libpq" : "SQLite" }

    var synchronous: String? {
        switch self {
        case .memory, .libpq: nil
        case .walFull: "FULL"
        case .walNormal: "NORMAL"
        }
    }

    var persists: Bool { self != .memory }
}

struct UsageError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}

struct BenchError: Error, CustomStringConvertible {
    let message: String
    init(_ message: String) { self.message = message }
    var description: String { message }
}

/// The sizes of the fixed-count phases; the same for both sides of a comparison.
struct WorkloadShape: Codable, Sendable, Hashable {
    var n: Int
    var pointFetches: Int
    var rangeFetches: Int
    var singleSaves: Int
    var seed: UInt64 = 42
    /// Notes of random letters (the default) or one letter repeated.
    var randomNotes = true
    /// The workload as an app writes it (`--as-written`): point fetches through `#Predicate`
    /// with no limit, every property of every fetched row read, updates by fetch, change and
    /// save, and the transaction phases. The default is the tuned workload.
    var asWritten = false

    /// Saves in the live-results phase: as many as the single-row saves, at most 1000, and
    /// fewer past N = 100,000, where the peer's query after each save reads every row.
    var observeSaves: Int { min(singleSaves, max(20, min(1000, 100_000_000 / max(1, n)))) }
    /// Saves in the re-fetch phase, which reads every row after each save on both sides.
    var refetchSaves: Int { min(observeSaves, max(10, min(100, 10_000_000 / max(1, n)))) }
}

extension WorkloadShape {
    /// Reads a shape as any run wrote it: results.json files written before a field existed
    /// lack it, and it takes its default (`--report` draws old runs again).
    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        n = try container.decode(Int.self, forKey: .n)
        pointFetches = try container.decode(Int.self, forKey: .pointFetches)
        rangeFetches = try container.decode(Int.self, forKey: .rangeFetches)
        singleSaves = try container.decode(Int.self, forKey: .singleSaves)
        seed = try container.decodeIfPresent(UInt64.self, forKey: .seed) ?? 42
        randomNotes = try container.decodeIfPresent(Bool.self, forKey: .randomNotes) ?? true
        asWritten = try container.decodeIfPresent(Bool.self, forKey: .asWritten) ?? false
    }
}

let usage = """
    usage: stowage-bench [options]

      --n LIST              row counts, comma-separated; k and M suffixes allowed
                            (default 10000,100000,1000000)
      --stores LIST         memory,json,log-full,log-relaxed,postgres,postgres-history (default:
                            the first four; `log` = log-full; postgres-history keeps history)
      --store S             the same as --stores S
      --runs R              timed runs per cell, after one warm-up run (default 5)
      --large-runs R        timed runs when N >= 1,000,000 (default min(R, 3))
      --json-max-n N        largest N the JSON store runs at (default 100000)
      --point-fetches K     point fetches by id (default 10000)
      --range-fetches K     range fetches (default 1000)
      --single-saves K      single-row saves (default 1000; the JSON store defaults to
                            500,000 / N of them, between 20 and 1000)
      --sqlite-cache-mib M  SQLite page cache for file databases, and the same budget for
                            the log stores' block cache (default 1024; 0 keeps SQLite's
                            default of 2 MiB and the log store's of 32 MiB)
      --block-kib K         the log stores' block size (LogStoreConfiguration.blockBytes;
                            default 4)
      --uniform-notes       notes of one repeated letter instead of random letters (LZ4
                            shrinks them to almost nothing, which flatters bytes on disk)
      --btree               also run btree-bench (next to this executable) and include its tables
      --migration           also run migration-bench (next to this executable) at the largest N
                            and include its table: migration time and peak memory beside SQLite
      --out DIR             write results.md, results.json, chart.svg (ratios against SQLite)
                            and scaling.svg (time per operation against N) to DIR
      --report FILE         run nothing: read a results.json an earlier run wrote and write
                            results.md, chart.svg and scaling.svg again from it, to --out DIR
                            (default: the folder FILE is in)
      --as-written          the workload as an app writes it, at default settings on both
                            sides (implies --sqlite-cache-mib 0): point fetches through
                            #Predicate on the unique id, every property of every fetched row
                            read, updates by fetch, change and save every 1000, and 10,000
                            fetch-and-change steps saved once and saved every 100
      --postgres CONNINFO   the PostgreSQL server the postgres store and its libpq peer run on,
                            as libpq key=value pairs (host=/run/postgresql user=bench); each
                            run makes a database of its own there and drops it afterwards
                            (STOWAGE_BENCH_POSTGRES in the environment does the same)
      --save-latency R      run nothing else: single-row saves on PostgreSQL (needs --postgres),
                            ModelContext beside libpq's one INSERT and beside libpq with 15 and
                            30 µs of the app's own work per save, in chunks of 300 that take
                            turns in one process for R rounds (100 take under a minute);
                            ratios are paired with the same round's libpq chunk
      --quick               N = 2000, 1 run after the warm-up, every default store (a smoke test)
      -h, --help            this text

    Progress goes to stderr; the tables to stdout. Each (store, N) cell and its SQLite peer
    run in child processes of their own, so each peak resident memory is its own.
    """

/// `LogStoreConfiguration.blockBytes`'s default, in KiB.
let defaultBlockKiB = 4

struct Options {
    var ns = [10_000, 100_000, 1_000_000]
    var stores = StoreKind.defaults
    var runs = 5
    var largeRuns: Int?
    var jsonMaxN = 100_000
    var pointFetches = 10_000
    var rangeFetches = 1000
    var singleSaves: Int?
    var sqliteCacheMiB = 1024
    var blockKiB = defaultBlockKiB
    var btree = false
    var migration = false
    var randomNotes = true
    var asWritten = false
    var out: String?
    /// `--report`: the results.json to draw the report from, instead of running anything.
    var report: String?
    /// `--save-latency R`: run only ``SaveLatency`` for R rounds.
    var saveLatencyRounds: Int?
    /// Set in a child: the one cell to run.
    var cell: CellSpec?

    var runsForLarge: Int { largeRuns ?? min(runs, 3) }

    func runs(at n: Int) -> Int { n >= 1_000_000 ? runsForLarge : runs }

    func shape(store: StoreKind, n: Int) -> WorkloadShape {
        let singles: Int
        if let singleSaves {
            singles = singleSaves
        } else if store == .json {
            // Every JSON save rewrites the whole file (and syncs it and its directory), so
            // keep the rows rewritten near 500k: 250 saves at N = 2000, 20 at N = 100,000.
            singles = max(20, min(1000, 500_000 / max(1, n)))
        } else {
            singles = 1000
        }
        return WorkloadShape(
            n: n, pointFetches: pointFetches, rangeFetches: rangeFetches, singleSaves: singles,
            randomNotes: randomNotes,
            asWritten: asWritten)
    }

    init(_ arguments: [String]) throws {
        var i = 0
        while i < arguments.count {
            let flag = arguments[i]
            func value() throws -> String {
                i += 1
                guard i < arguments.count else { throw UsageError(message: "\(flag) needs a value") }
                return arguments[i]
            }
            func count(_ text: String, minimum: Int = 1) throws -> Int {
                guard let number = Self.parseCount(text), number >= minimum else {
                    throw UsageError(message: "\(flag): '\(text)' is not a whole number >= \(minimum)")
                }
                return number
            }
            switch flag {
            case "--n":
                let text = try value()
                ns = try text.split(separator: ",", omittingEmptySubsequences: false).map {
                    try count(String($0).trimmingCharacters(in: .whitespaces), minimum: 100)
                }
            case "--stores", "--store":
                let text = try value()
                var chosen: [StoreKind] = []
                for name in text.split(separator: ",", omittingEmptySubsequences: false) {
                    let trimmed = name.trimmingCharacters(in: .whitespaces)
                    guard let store = StoreKind(argument: trimmed) else {
                        throw UsageError(
                            message:
                                "unknown store '\(trimmed)' (memory, json, log-full, log-relaxed, postgres, "
                                + "postgres-history)")
                    }
                    if !chosen.contains(store) { chosen.append(store) }
                }
                stores = chosen
            case "--runs": runs = try count(try value())
            case "--large-runs": largeRuns = try count(try value())
            case "--json-max-n": jsonMaxN = try count(try value(), minimum: 0)
            case "--point-fetches": pointFetches = try count(try value())
            case "--range-fetches": rangeFetches = try count(try value())
            case "--single-saves": singleSaves = try count(try value())
            case "--sqlite-cache-mib": sqliteCacheMiB = try count(try value(), minimum: 0)
            case "--block-kib": blockKiB = try count(try value(), minimum: 1)
            case "--btree": btree = true
            case "--migration": migration = true
            case "--uniform-notes": randomNotes = false
            case "--as-written": asWritten = true
            case "--out": out = try value()
            case "--report": report = try value()
            case "--postgres": setenv(PostgresBench.variable, try value(), 1)
            case "--save-latency": saveLatencyRounds = try count(try value())
            case "--quick":
                ns = [2000]
                runs = 1
            case "--cell": cell = try CellSpec(parsing: try value())
            case "--help", "-h": throw HelpRequested()
            default: throw UsageError(message: "unknown option \(flag) (see --help)")
            }
            i += 1
        }
        guard !ns.isEmpty else { throw UsageError(message: "--n needs at least one row count") }
        if cell == nil, stores.contains(where: \.isPostgres) || saveLatencyRounds != nil, PostgresBench.server == nil {
            throw UsageError(
                message: "the postgres store and --save-latency need a server: --postgres CONNINFO (see --help)")
        }
        // Default settings on both sides: SQLite's page cache and the log store's block cache.
        if asWritten { sqliteCacheMiB = 0 }
    }

    /// `2000`, `10k`, `1M`, `1_000_000`.
    static func parseCount(_ text: String) -> Int? {
        var digits = text.replacingOccurrences(of: "_", with: "")
        var scale = 1
        if digits.hasSuffix("k") || digits.hasSuffix("K") {
            scale = 1000
            digits.removeLast()
        } else if digits.hasSuffix("M") || digits.hasSuffix("m") {
            scale = 1_000_000
            digits.removeLast()
        }
        guard let number = Int(digits) else { return nil }
        let (product, overflow) = number.multipliedReportingOverflow(by: scale)
        return overflow ? nil : product
    }
}

struct HelpRequested: Error {}

/// What one child process runs: one side (a store or an SQLite peer) at one shape.
struct CellSpec: Codable, Sendable, Hashable {
    /// A `StoreKind` or `PeerKind` raw value.
    var system: String
    var shape: WorkloadShape
    var runs: Int
    var sqliteCacheMiB: Int
    /// The log stores' block size in KiB.
    var blockKiB = defaultBlockKiB
    /// Waits for a line on standard input before each run (the warm-up too) and prints
    /// `ran K` after it, so that the parent can alternate a store's runs with its peer's.
    var lockstep = false

    var store: StoreKind? { StoreKind(rawValue: system) }
    var peer: PeerKind? { PeerKind(rawValue: system) }

    init(
        system: String, shape: WorkloadShape, runs: Int, sqliteCacheMiB: Int, blockKiB: Int = defaultBlockKiB,
        lockstep: Bool = false
    ) {
        self.system = system
        self.shape = shape
        self.runs = runs
        self.sqliteCacheMiB = sqliteCacheMiB
        self.blockKiB = blockKiB
        self.lockstep = lockstep
    }

    /// `system=log-full,n=10000,runs=5,point=10000,range=1000,singles=1000,cache=1024`
    var argument: String {
        "system=\(system),n=\(shape.n),runs=\(runs),point=\(shape.pointFetches),range=\(shape.rangeFetches),"
            + "singles=\(shape.singleSaves),seed=\(shape.seed),notes=\(shape.randomNotes ? "random" : "uniform"),"
            + "cache=\(sqliteCacheMiB),block=\(blockKiB),step=\(lockstep ? 1 : 0),app=\(shape.asWritten ? 1 : 0)"
    }

    init(parsing text: String) throws {
        var fields: [String: String] = [:]
        for pair in text.split(separator: ",") {
            let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2 else { throw UsageError(message: "--cell: bad field '\(pair)'") }
            fields[parts[0]] = parts[1]
        }
        func number(_ key: String) throws -> Int {
            guard let text = fields[key], let value = Int(text), value >= 0 else {
                throw UsageError(message: "--cell: missing or bad \(key)")
            }
            return value
        }
        guard let system = fields["system"], StoreKind(rawValue: system) != nil || PeerKind(rawValue: system) != nil
        else { throw UsageError(message: "--cell: missing or unknown system") }
        self.system = system
        shape = WorkloadShape(
            n: try number("n"), pointFetches: try number("point"), rangeFetches: try number("range"),
            singleSaves: try number("singles"), seed: UInt64(try number("seed")),
            randomNotes: fields["notes"] != "uniform", asWritten: fields["app"] == "1")
        runs = try number("runs")
        sqliteCacheMiB = try number("cache")
        blockKiB = fields["block"] == nil ? defaultBlockKiB : try number("block")
        lockstep = fields["step"] == "1"
        guard shape.n >= 100 else { throw UsageError(message: "--cell: n must be at least 100") }
    }
}
