import CSQLite
import Foundation

// stowage-bench: Stowage's stores beside SQLite on the same rows, each through the API a
// user would use (ModelContext; SQLite's C API with prepared statements).
//
//   swift build -c release --product stowage-bench
//   .build/release/stowage-bench [--n 10000,100000,1000000] [--stores memory,json,log-full,log-relaxed]
//                                [--runs 5] [--quick] [--out DIR]   (see --help)
//
// One invocation runs every chosen store at every N. Each (store, N) cell runs in a child
// process (this executable with `--cell …`), and so does its SQLite peer, so that each
// process's peak resident memory is its own. The two children take turns, run by run, so
// that both sides see the same moments of a busy machine. Every figure is the median of several runs
// after a warm-up run. Ratios are SQLite's time over Stowage's: above 1 means Stowage is faster.

let arguments = Array(CommandLine.arguments.dropFirst())
let options: Options
do {
    options = try Options(arguments)
} catch is HelpRequested {
    print(usage)
    exit(0)
} catch {
    FileHandle.standardError.write(Data("stowage-bench: \(error)\n\(usage)\n".utf8))
    exit(2)
}

// A child that dies must make a write to its standard input fail, not kill this process.
signal(SIGPIPE, SIG_IGN)

if let cell = options.cell {
    exit(runCell(cell))
}

/// Writes results.md and the two charts (and results.json, given `json`) to `directory`.
func writeReport(_ report: Report, to directory: URL, json: Bool) throws {
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    if json {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try encoder.encode(report).write(to: directory.appendingPathComponent("results.json"))
    }
    try Data(report.markdown.utf8).write(to: directory.appendingPathComponent("results.md"))
    try Data(report.ratioChartSVG.utf8).write(to: directory.appendingPathComponent("chart.svg"))
    try Data(report.scalingChartSVG.utf8).write(to: directory.appendingPathComponent("scaling.svg"))
}

// `--save-latency R`: the single-row save loops alone.
if let rounds = options.saveLatencyRounds {
    do {
        print(try SaveLatency.run(rounds: rounds))
        exit(0)
    } catch {
        progress("stowage-bench: the save-latency loops failed: \(error)\n")
        exit(1)
    }
}

// `--report FILE`: the report of an earlier run, drawn again from its results.json.
if let file = options.report {
    let source = URL(fileURLWithPath: file)
    let directory = options.out.map { URL(fileURLWithPath: $0) } ?? source.deletingLastPathComponent()
    do {
        let report = try JSONDecoder().decode(Report.self, from: Data(contentsOf: source))
        try writeReport(report, to: directory, json: false)
        progress("stowage-bench: wrote results.md, chart.svg and scaling.svg to \(directory.path)\n")
        exit(0)
    } catch {
        progress("stowage-bench: cannot make the report of \(file): \(error)\n")
        exit(1)
    }
}

/// This executable, to run cells in children.
let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()

/// A cell running in a child process, one run at a time when the parent says so.
final class Child {
    let spec: CellSpec
    let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private var pending = Data()
    private var lines: [String] = []

    init(_ spec: CellSpec) {
        self.spec = spec
        process.executableURL = executable
        process.arguments = ["--cell", spec.argument]
        process.standardInput = input
        process.standardOutput = output
    }

    func start() throws { try process.run() }

    /// The next line the child prints, or nil at the end of its output.
    private func readLine() -> String? {
        while true {
            if let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                pending = Data(pending[pending.index(after: newline)...])
                return line
            }
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty {
                guard !pending.isEmpty else { return nil }
                defer { pending = Data() }
                return String(decoding: pending, as: UTF8.self)
            }
            pending.append(chunk)
        }
    }

    /// Lets the child do its next run and waits until it has.
    func step() throws {
        try input.fileHandleForWriting.write(contentsOf: Data("go\n".utf8))
        while let line = readLine() {
            if line.hasPrefix("ran ") { return }
            lines.append(line)
        }
        throw BenchError("cell \(spec.argument) stopped before its run ended")
    }

    /// Waits for the child to exit and decodes its result line.
    func finish() throws -> CellResult {
        try input.fileHandleForWriting.close()
        while let line = readLine() { lines.append(line) }
        process.waitUntilExit()
        guard process.terminationReason == .exit, process.terminationStatus == 0 else {
            throw BenchError(
                "cell \(spec.argument) exited with status \(process.terminationStatus) "
                    + "(\(process.terminationReason == .exit ? "exit" : "signal"))")
        }
        guard let line = lines.last(where: { $0.hasPrefix("{") }) else {
            throw BenchError("cell \(spec.argument) printed no result")
        }
        return try JSONDecoder().decode(CellResult.self, from: Data(line.utf8))
    }

    /// Stops a child that is still running (after a failure on the other side).
    func stop() {
        if process.isRunning { process.terminate() }
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
    }
}

/// Runs a store's cell and its peer's side by side, alternating their runs (the warm-ups
/// first) so that both sides see the same moments of a noisy machine.
func runPair(_ stowageSpec: CellSpec, _ sqliteSpec: CellSpec) throws -> (CellResult, CellResult) {
    let stowage = Child(stowageSpec)
    let sqlite = Child(sqliteSpec)
    do {
        try stowage.start()
        try sqlite.start()
        for run in 0...stowageSpec.runs {
            // Alternate which side goes first, so that neither always follows the other.
            let order = run % 2 == 0 ? [stowage, sqlite] : [sqlite, stowage]
            for child in order { try child.step() }
        }
        return (try stowage.finish(), try sqlite.finish())
    } catch {
        stowage.stop()
        sqlite.stop()
        throw error
    }
}

/// Standard output of a command, or nil if it cannot run or fails.
func commandOutput(_ arguments: [String], environment: [String: String] = [:]) -> String? {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = arguments
    if !environment.isEmpty {
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    }
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = FileHandle.nullDevice
    do { try process.run() } catch { return nil }
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { return nil }
    return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
}

func machine() -> Machine {
    var cpu = "unknown CPU"
    if let info = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8),
        let line = info.split(separator: "\n").first(where: { $0.hasPrefix("model name") }),
        let colon = line.firstIndex(of: ":")
    {
        cpu = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
    }
    var name = utsname()
    uname(&name)
    func field<T>(_ value: T) -> String {
        withUnsafeBytes(of: value) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
    }
    return Machine(
        cpu: cpu, cores: ProcessInfo.processInfo.activeProcessorCount,
        memoryBytes: ProcessInfo.processInfo.physicalMemory,
        kernel: "\(field(name.sysname)) \(field(name.release)) \(field(name.machine))")
}

var buildConfiguration: String {
    #if DEBUG
        "debug"
    #else
        "release"
    #endif
}

func toolchain() -> String {
    if let version = commandOutput(["swift", "--version"]),
        let line = version.split(separator: "\n").first(where: { $0.contains("Swift version") })
    {
        return line.trimmingCharacters(in: .whitespaces)
    }
    #if compiler(>=6.3)
        return "Swift 6.3 or later (compile-time)"
    #else
        return "Swift before 6.3 (compile-time)"
    #endif
}

/// Runs btree-bench, built next to this executable, and returns its Markdown.
func runBTreeBench(quick: Bool) -> String? {
    let path = executable.deletingLastPathComponent().appendingPathComponent("btree-bench").path
    guard FileManager.default.isExecutableFile(atPath: path) else {
        progress("  btree-bench is not built next to stowage-bench; skipped (swift build --product btree-bench)\n")
        return nil
    }
    progress("  btree-bench: B+tree vs Dictionary vs sorted Array…\n")
    var arguments = [path, "--skip-sweep"]
    if quick { arguments += ["--n", "100000", "--array-n", "10000", "--runs", "1"] }
    return commandOutput(arguments)
}

/// Runs migration-bench, built next to this executable, at `n` with `runs` runs, and
/// returns its Markdown: the migration phase.
func runMigrationBench(n: Int, runs: Int) -> String? {
    let path = executable.deletingLastPathComponent().appendingPathComponent("migration-bench").path
    guard FileManager.default.isExecutableFile(atPath: path) else {
        progress(
            "  migration-bench is not built next to stowage-bench; skipped (swift build --product migration-bench)\n")
        return nil
    }
    progress("  migration-bench: schema migrations at N = \(formatCount(n))…\n")
    return commandOutput([path, "--n", String(n), "--runs", String(runs)])
}

func printTable(_ comparison: Comparison) {
    print("")
    print(
        "## \(comparison.store.title), N = \(formatCount(comparison.n)), vs \(comparison.peer.title) "
            + "(median of \(plural(comparison.runs, "run")))")
    print("")
    print(comparison.markdownTable)
    fflush(nil)
}

let started = DispatchTime.now().uptimeNanoseconds
// The revision the run starts from (later commits do not change the binary that runs).
let gitRevision = commandOutput(["git", "rev-parse", "HEAD"]) ?? "unknown"
let gitStatus = commandOutput(
    ["git", "status", "--porcelain", "--untracked-files=no"], environment: ["GIT_OPTIONAL_LOCKS": "0"])
let date = ISO8601DateFormatter().string(from: Date())
var comparisons: [Comparison] = []
var skipped: [String] = []
var failures: [String] = []

let cellCount = options.ns.reduce(0) { total, n in
    total + options.stores.filter { $0 != .json || n <= options.jsonMaxN }.count
}
progress(
    "stowage-bench: stores \(options.stores.map(\.rawValue).joined(separator: ", ")); "
        + "N \(options.ns.map(formatCount).joined(separator: ", ")); \(plural(options.runs, "run"))"
        + (options.ns.contains { $0 >= 1_000_000 } ? " (\(options.runsForLarge) at N >= 1M)" : "")
        + " + 1 warm-up; \(cellCount) cells; \(buildConfiguration) build\n")
#if DEBUG
    progress("  (a debug build: the figures mean nothing; build with -c release to time anything)\n")
#endif
var cellIndex = 0
for n in options.ns {
    for store in options.stores {
        if store == .json && n > options.jsonMaxN {
            skipped.append("the JSON store at N = \(formatCount(n)) (it stops at \(formatCount(options.jsonMaxN)))")
            continue
        }
        cellIndex += 1
        let shape = options.shape(store: store, n: n)
        let runs = options.runs(at: n)
        progress(
            "[\(cellIndex)/\(cellCount)] \(store.rawValue) vs \(store.peer.title), N = \(formatCount(n)), "
                + "\(plural(runs, "run"))\n")
        do {
            let (stowage, sqlite) = try runPair(
                CellSpec(
                    system: store.rawValue, shape: shape, runs: runs, sqliteCacheMiB: options.sqliteCacheMiB,
                    blockKiB: options.blockKiB, lockstep: true),
                CellSpec(
                    system: store.peer.rawValue, shape: shape, runs: runs, sqliteCacheMiB: options.sqliteCacheMiB,
                    lockstep: true))
            let peerSettings =
                store.peer == .libpq
                ? PostgresBench.server.map(PostgresBench.describe) ?? "PostgreSQL"
                : store.peer.persists
                    ? "WAL, synchronous=\(store.peer.synchronous ?? "?"), "
                        + (options.sqliteCacheMiB == 0
                            ? "default page cache" : "cache_size up to \(options.sqliteCacheMiB) MiB")
                    : ":memory: database"
            let comparison = Comparison(store: store, peerSettings: peerSettings, stowage: stowage, sqlite: sqlite)
            comparisons.append(comparison)
            printTable(comparison)
        } catch {
            failures.append("\(store.rawValue) at N = \(formatCount(n)): \(error)")
            progress("  FAILED: \(error)\n")
        }
    }
}

let btreeText = options.btree ? runBTreeBench(quick: options.ns.allSatisfy { $0 <= 10_000 }) : nil
let migrationN = options.ns.max() ?? 100_000
let migrationText =
    options.migration
    ? runMigrationBench(n: migrationN, runs: migrationN >= 1_000_000 ? options.runsForLarge : options.runs) : nil
let report = Report(
    date: date, machine: machine(), toolchain: toolchain(), buildConfiguration: buildConfiguration,
    sqliteVersion: String(cString: sqlite3_libversion()), gitRevision: gitRevision,
    gitWorkingTreeModified: gitStatus.map { !$0.isEmpty }, command: ["stowage-bench"] + arguments, ns: options.ns,
    runs: options.runs, runsAtOneMillion: options.runsForLarge, stores: options.stores, jsonMaxN: options.jsonMaxN,
    sqliteCacheMiB: options.sqliteCacheMiB, notes: options.randomNotes ? "random" : "uniform",
    enumerateBatchSize: enumerateBatchSize, comparisons: comparisons, skipped: skipped, failures: failures,
    btreeBench: btreeText, migrationBench: migrationText,
    totalSeconds: Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9)

if let btreeText {
    print("")
    print(btreeText)
}
if let migrationText {
    print("")
    print(migrationText)
}

if let out = options.out {
    do {
        let directory = URL(fileURLWithPath: out)
        try writeReport(report, to: directory, json: true)
        progress("stowage-bench: wrote results.md, results.json, chart.svg and scaling.svg to \(directory.path)\n")
    } catch {
        progress("stowage-bench: cannot write to \(out): \(error)\n")
        exit(1)
    }
}
progress(String(format: "stowage-bench: done in %.0f s\n", report.totalSeconds))
exit(failures.isEmpty ? 0 : 1)
