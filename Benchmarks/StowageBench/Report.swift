import Foundation

// What a full invocation writes: the figures as a Codable report, and its Markdown and SVG forms.

func median(_ values: [Double]) -> Double? {
    guard !values.isEmpty else { return nil }
    let sorted = values.sorted()
    let middle = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

func medianBytes(_ values: [Int64]) -> Int64? {
    median(values.map(Double.init)).map { Int64($0) }
}

struct Machine: Codable, Sendable {
    var cpu: String
    var cores: Int
    var memoryBytes: UInt64
    var kernel: String
}

struct PhaseReport: Codable, Sendable {
    var key: PhaseKey
    var title: String
    var unit: String
    var operations: Int
    /// Medians, in seconds.
    var stowageSeconds: Double
    var sqliteSeconds: Double
    var stowageOpsPerSecond: Double
    var sqliteOpsPerSecond: Double
    /// SQLite's median time over Stowage's: above 1 means Stowage is faster.
    var ratio: Double
    var stowageSamples: [Double]
    var sqliteSamples: [Double]
}

struct Sides: Codable, Sendable {
    var stowage: Int64
    var sqlite: Int64
}

/// One store at one N beside its SQLite peer.
struct Comparison: Codable, Sendable {
    var store: StoreKind
    var peer: PeerKind
    var peerSettings: String
    var n: Int
    var runs: Int
    var shape: WorkloadShape
    var phases: [PhaseReport]
    /// Medians over the timed runs; nil for the memory store.
    var bytesOnDisk: Sides?
    var peakRSSBytes: Sides
    var baselineRSSBytes: Sides
    var stowageWallSeconds: Double
    var sqliteWallSeconds: Double

    init(store: StoreKind, peerSettings: String, stowage: CellResult, sqlite: CellResult) {
        self.store = store
        peer = store.peer
        self.peerSettings = peerSettings
        n = stowage.spec.shape.n
        runs = stowage.spec.runs
        shape = stowage.spec.shape
        phases = PhaseKey.allCases.compactMap { key in
            guard let s = stowage.samples(key), let q = sqlite.samples(key),
                let sm = median(s.seconds), let qm = median(q.seconds)
            else { return nil }
            return PhaseReport(
                key: key, title: s.title, unit: key.unit, operations: s.operations, stowageSeconds: sm,
                sqliteSeconds: qm, stowageOpsPerSecond: Double(s.operations) / sm,
                sqliteOpsPerSecond: Double(q.operations) / qm, ratio: qm / sm, stowageSamples: s.seconds,
                sqliteSamples: q.seconds)
        }
        if let s = medianBytes(stowage.bytesOnDisk), let q = medianBytes(sqlite.bytesOnDisk) {
            bytesOnDisk = Sides(stowage: s, sqlite: q)
        }
        peakRSSBytes = Sides(stowage: stowage.peakRSSBytes, sqlite: sqlite.peakRSSBytes)
        baselineRSSBytes = Sides(stowage: stowage.baselineRSSBytes, sqlite: sqlite.baselineRSSBytes)
        stowageWallSeconds = stowage.wallSeconds
        sqliteWallSeconds = sqlite.wallSeconds
    }
}

struct Report: Codable, Sendable {
    var tool = "stowage-bench"
    var date: String
    var machine: Machine
    var toolchain: String
    var buildConfiguration: String
    var sqliteVersion: String
    var gitRevision: String
    /// From `git status --porcelain --untracked-files=no`; nil when git could not say.
    var gitWorkingTreeModified: Bool?
    var command: [String]
    var ns: [Int]
    var runs: Int
    var runsAtOneMillion: Int
    var stores: [StoreKind]
    var jsonMaxN: Int
    var sqliteCacheMiB: Int
    var notes: String
    var enumerateBatchSize: Int
    var comparisons: [Comparison]
    var skipped: [String]
    var failures: [String]
    var btreeBench: String?
    /// migration-bench's table, when `--migration` ran it.
    var migrationBench: String?
    var totalSeconds: Double
}

// MARK: - Formatting

func formatMilliseconds(_ seconds: Double) -> String {
    let ms = seconds * 1000
    if ms >= 100 { return String(format: "%.0f", ms) }
    if ms >= 10 { return String(format: "%.1f", ms) }
    return String(format: "%.2f", ms)
}

func formatRate(_ value: Double) -> String {
    if value >= 1e6 { return String(format: "%.2fM", value / 1e6) }
    if value >= 1e4 { return String(format: "%.0fk", value / 1e3) }
    if value >= 1e3 { return String(format: "%.1fk", value / 1e3) }
    if value >= 10 { return String(format: "%.0f", value) }
    return String(format: "%.2f", value)
}

func plural(_ count: Int, _ noun: String) -> String { "\(count) \(noun)\(count == 1 ? "" : "s")" }

func formatMiB(_ bytes: Int64) -> String { String(format: "%.1f MiB", Double(bytes) / 1_048_576) }

func formatRatio(_ ratio: Double) -> String {
    if ratio >= 0.095 { return String(format: "%.2f×", ratio) }
    if ratio >= 0.001 { return String(format: "%.3f×", ratio) }
    return String(format: "%.4f×", ratio)
}

func formatCount(_ n: Int) -> String {
    let formatter = NumberFormatter()
    formatter.numberStyle = .decimal
    formatter.groupingSeparator = ","
    formatter.usesGroupingSeparator = true
    return formatter.string(from: NSNumber(value: n)) ?? "\(n)"
}

func shortCount(_ n: Int) -> String {
    if n >= 1_000_000 && n % 1_000_000 == 0 { return "\(n / 1_000_000)M" }
    if n >= 1000 && n % 1000 == 0 { return "\(n / 1000)k" }
    return "\(n)"
}

// MARK: - Markdown

extension Comparison {
    /// The table for this store at this N.
    var markdownTable: String {
        var lines = [
            "| operation | Stowage (ms) | \(peer.shortName) (ms) | Stowage ops/s | \(peer.shortName) ops/s | "
                + "speed vs \(peer.shortName) |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for phase in phases {
            lines.append(
                "| \(phase.title) | \(formatMilliseconds(phase.stowageSeconds)) | "
                    + "\(formatMilliseconds(phase.sqliteSeconds)) | \(formatRate(phase.stowageOpsPerSecond)) | "
                    + "\(formatRate(phase.sqliteOpsPerSecond)) | \(formatRatio(phase.ratio)) |")
        }
        if let bytes = bytesOnDisk {
            let ratio = Double(bytes.sqlite) / Double(max(1, bytes.stowage))
            lines.append(
                "| bytes on disk after the phases | \(formatMiB(bytes.stowage)) | \(formatMiB(bytes.sqlite)) | | | "
                    + String(format: "%.2f× smaller", ratio) + " |")
        }
        lines.append(
            "| peak resident memory (process) | \(formatMiB(peakRSSBytes.stowage)) | \(formatMiB(peakRSSBytes.sqlite)) "
                + "| | | |")
        lines.append(
            "| of which the generated rows, before any store | \(formatMiB(baselineRSSBytes.stowage)) | "
                + "\(formatMiB(baselineRSSBytes.sqlite)) | | | |")
        return lines.joined(separator: "\n")
    }
}

extension Report {
    var peerLines: [String] {
        stores.map { store in
            "- **\(store.rawValue)** (\(store.durability)) faces **\(store.peer.title)**"
                + (store.peer.persists ? "" : " (nothing persisted, no reopen phase on either side)")
                + (comparisons.first { $0.store == store }.map { "; \($0.peerSettings)" } ?? "")
        }
    }

    var markdown: String {
        var out: [String] = []
        out.append("# stowage-bench results")
        out.append("")
        out.append("- Date: \(date)")
        out.append(
            "- Machine: \(machine.cpu), \(machine.cores) cores, "
                + String(format: "%.0f GiB", Double(machine.memoryBytes) / 1_073_741_824) + ", \(machine.kernel)")
        out.append("- Toolchain: \(toolchain), \(buildConfiguration) build; SQLite \(sqliteVersion)")
        out.append(
            "- Git revision: \(gitRevision)"
                + (gitWorkingTreeModified == true ? " (with uncommitted changes in the working tree)" : ""))
        out.append("- Command: `\(command.joined(separator: " "))`")
        out.append(
            "- N: \(ns.map(formatCount).joined(separator: ", ")); medians of \(plural(runs, "run")) "
                + (ns.contains { $0 >= 1_000_000 } ? "(\(runsAtOneMillion) at N ≥ 1,000,000) " : "")
                + "after one warm-up run, on each side; the JSON store stops at N = \(formatCount(jsonMaxN))")
        out.append(
            "- Notes: 100 bytes of \(notes == "random" ? "random letters" : "one repeated letter"); "
                + "SQLite page cache: \(sqliteCacheMiB == 0 ? "SQLite's default" : "up to \(sqliteCacheMiB) MiB")")
        out.append(String(format: "- Total time: %.0f s", totalSeconds))
        out.append("")
        out.append(
            "Ratios are SQLite's median time over Stowage's: **above 1 means Stowage is faster**. ops/s is "
                + "operations over the median time (an operation is a row, a fetch, a count, a save or an open, "
                + "as the phase says). Each store and each SQLite peer runs in a child process of its own, so "
                + "the peak resident memory is that process's `VmHWM` (warm-up and all runs included). The two "
                + "processes take turns run by run (both warm-ups, then run 1 of each, and so on, alternating which "
                + "goes first), so that a burst of load on a shared machine falls on both sides alike. The "
                + "generated rows, which both sides hold, are shown as the baseline. Bytes on disk are the store's "
                + "files (Stowage) and the database plus WAL after a truncating checkpoint (SQLite), after every "
                + "phase.")
        out.append("")
        out.append(
            "The peers (SQLite in WAL mode unless in memory; prepared statements, rows read into Swift structs):")
        out.append("")
        out.append(contentsOf: peerLines)
        out.append("")
        if !skipped.isEmpty {
            out.append("Skipped: " + skipped.joined(separator: "; ") + ".")
            out.append("")
        }
        if !failures.isEmpty {
            out.append("**Failures:** " + failures.joined(separator: "; "))
            out.append("")
        }
        out.append("![ratios against SQLite per operation and store, a panel per N](chart.svg)")
        out.append("")
        out.append("![time per operation against N, log-log, per phase and store](scaling.svg)")
        out.append("")
        // Ratios at a glance, one table per store.
        out.append("## Speed vs SQLite at a glance")
        out.append("")
        for store in stores {
            let columns = comparisons.filter { $0.store == store }.sorted { $0.n < $1.n }
            guard !columns.isEmpty else { continue }
            out.append("### \(store.rawValue) vs \(store.peer.title)")
            out.append("")
            out.append("| operation | " + columns.map { "N = \(formatCount($0.n))" }.joined(separator: " | ") + " |")
            out.append("|---|" + columns.map { _ in "---:" }.joined(separator: "|") + "|")
            for key in PhaseKey.allCases {
                let cells = columns.map { c in c.phases.first { $0.key == key }.map { formatRatio($0.ratio) } ?? "—" }
                guard cells.contains(where: { $0 != "—" }) else { continue }
                out.append("| \(key.short) | " + cells.joined(separator: " | ") + " |")
            }
            out.append("")
        }
        // Full tables per N.
        for n in ns {
            let here = comparisons.filter { $0.n == n }
            guard !here.isEmpty else { continue }
            out.append("## N = \(formatCount(n))")
            out.append("")
            for comparison in here {
                out.append(
                    "### \(comparison.store.title) vs \(comparison.peer.title) (\(plural(comparison.runs, "run")))")
                out.append("")
                out.append(comparison.markdownTable)
                out.append("")
            }
        }
        // Scaling: how each phase's time grows with N.
        if ns.count > 1 {
            out.append("## Scaling")
            out.append("")
            out.append(
                "Median ms per phase at each N, Stowage / SQLite. The fixed-count phases (point and range "
                    + "fetches, single-row saves, reopen) do the same number of operations at every N; the rest "
                    + "grow with N.")
            out.append("")
            for store in stores {
                let columns = comparisons.filter { $0.store == store }.sorted { $0.n < $1.n }
                guard columns.count > 1 else { continue }
                out.append("### \(store.rawValue)")
                out.append("")
                out.append(
                    "| operation | " + columns.map { "N = \(formatCount($0.n))" }.joined(separator: " | ") + " |")
                out.append("|---|" + columns.map { _ in "---:" }.joined(separator: "|") + "|")
                for key in PhaseKey.allCases {
                    let cells = columns.map { c in
                        c.phases.first { $0.key == key }.map {
                            "\(formatMilliseconds($0.stowageSeconds)) / \(formatMilliseconds($0.sqliteSeconds))"
                        } ?? "—"
                    }
                    guard cells.contains(where: { $0 != "—" }) else { continue }
                    out.append("| \(key.short) | " + cells.joined(separator: " | ") + " |")
                }
                out.append(
                    "| peak RSS (MiB) | "
                        + columns.map {
                            String(
                                format: "%.0f / %.0f", Double($0.peakRSSBytes.stowage) / 1_048_576,
                                Double($0.peakRSSBytes.sqlite) / 1_048_576)
                        }.joined(separator: " | ") + " |")
                if columns.contains(where: { $0.bytesOnDisk != nil }) {
                    out.append(
                        "| bytes on disk (MiB) | "
                            + columns.map { c in
                                c.bytesOnDisk.map {
                                    String(
                                        format: "%.1f / %.1f", Double($0.stowage) / 1_048_576,
                                        Double($0.sqlite) / 1_048_576)
                                } ?? "—"
                            }.joined(separator: " | ") + " |")
                }
                out.append("")
            }
        }
        if let btreeBench {
            out.append("## B+tree beside Dictionary and a sorted Array (btree-bench)")
            out.append("")
            // Demote btree-bench's own headings under this one.
            for line in btreeBench.split(separator: "\n", omittingEmptySubsequences: false) {
                if line.hasPrefix("# ") { continue }
                out.append(line.hasPrefix("#") ? "#" + line : String(line))
            }
            out.append("")
        }
        if let migrationBench {
            out.append("## Schema migrations (migration-bench)")
            out.append("")
            for line in migrationBench.split(separator: "\n", omittingEmptySubsequences: false) {
                out.append(line.hasPrefix("#") ? "#" + line : String(line))
            }
            out.append("")
        }
        return out.joined(separator: "\n")
    }
}
