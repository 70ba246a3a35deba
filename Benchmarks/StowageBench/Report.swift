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
        out.append("![bars per operation and store](chart.svg)")
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

// MARK: - SVG

let storeColors: [StoreKind: String] = [
    .memory: "#4e79a7", .json: "#f28e2b", .logFull: "#e15759", .logRelaxed: "#59a14f",
]

func xmlEscape(_ text: String) -> String {
    text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
        .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
}

extension Report {
    /// Horizontal bars of ops/s on a log scale: a panel per N, a group per operation, and in
    /// it a pair of bars per store (Stowage solid, its SQLite peer pale).
    var chartSVG: String {
        let width = 1200.0
        let labelWidth = 250.0
        let plotLeft = labelWidth + 10
        let plotRight = width - 170
        let barHeight = 8.0
        let pairGap = 1.0
        let storeGap = 4.0
        let groupGap = 14.0
        let rates = comparisons.flatMap { $0.phases.flatMap { [$0.stowageOpsPerSecond, $0.sqliteOpsPerSecond] } }
            .filter { $0.isFinite && $0 > 0 }
        let low = floor(log10(rates.min() ?? 1))
        let high = max(low + 1, ceil(log10(rates.max() ?? 10)))
        func x(_ value: Double) -> Double {
            guard value.isFinite, value > 0 else { return plotLeft }
            let t = (log10(value) - low) / (high - low)
            return plotLeft + max(0, min(1, t)) * (plotRight - plotLeft)
        }
        func tickLabel(_ exponent: Int) -> String {
            switch exponent {
            case ..<0: return String(format: "%g", pow(10, Double(exponent)))
            case 0..<3: return String(Int(pow(10, Double(exponent))))
            case 3..<6: return "\(Int(pow(10, Double(exponent - 3))))k"
            default: return "\(Int(pow(10, Double(exponent - 6))))M"
            }
        }
        var body: [String] = []
        var y = 20.0
        body.append(
            "<text x=\"10\" y=\"\(y)\" class=\"title\">Stowage beside SQLite: operations per second, log scale "
                + "(longer bar = faster)</text>")
        y += 18
        let setting =
            "\(machine.cpu), \(machine.cores) cores; \(toolchain) \(buildConfiguration); SQLite \(sqliteVersion); "
            + "\(date); medians of \(plural(runs, "run"))"
            + (ns.contains { $0 >= 1_000_000 } ? " (\(runsAtOneMillion) at N ≥ 1M)" : "") + " after a warm-up"
        body.append("<text x=\"10\" y=\"\(y)\" class=\"note\">\(xmlEscape(setting))</text>")
        y += 16
        body.append(
            "<text x=\"10\" y=\"\(y)\" class=\"note\">Solid bar: the Stowage store through ModelContext. Pale bar "
                + "just below it: SQLite with the matching durability. The figure after a solid bar is its ops/s "
                + "and SQLite time / Stowage time (above 1× = Stowage faster).</text>")
        y += 20
        // Legend.
        var legendX = 10.0
        for store in stores {
            let color = storeColors[store] ?? "#888"
            body.append(
                "<rect x=\"\(legendX)\" y=\"\(y - 9)\" width=\"12\" height=\"10\" fill=\"\(color)\"/>"
                    + "<rect x=\"\(legendX + 14)\" y=\"\(y - 9)\" width=\"12\" height=\"10\" fill=\"\(color)\" "
                    + "fill-opacity=\"0.35\" stroke=\"\(color)\"/>")
            let text = "\(store.rawValue) / \(store.peer.title)"
            body.append("<text x=\"\(legendX + 30)\" y=\"\(y)\" class=\"legend\">\(xmlEscape(text))</text>")
            legendX += 30 + Double(text.count) * 6.4 + 18
            if legendX > width - 260 {
                legendX = 10
                y += 16
            }
        }
        y += 24
        for n in ns {
            let here = comparisons.filter { $0.n == n }
            guard !here.isEmpty else { continue }
            body.append(
                "<text x=\"10\" y=\"\(y)\" class=\"panel\">N = \(formatCount(n)) rows "
                    + "(\(here.first.map { plural($0.runs, "run") } ?? "?"))</text>")
            y += 10
            let axisY = y + 12
            let keys = PhaseKey.allCases.filter { key in here.contains { c in c.phases.contains { $0.key == key } } }
            // Height of the panel, for the grid lines.
            var panelHeight = 22.0
            for key in keys {
                let count = Double(here.filter { c in c.phases.contains { $0.key == key } }.count)
                panelHeight += count * (2 * barHeight + pairGap) + max(0, count - 1) * storeGap + groupGap
            }
            for exponent in Int(low)...Int(high) {
                let gx = x(pow(10, Double(exponent)))
                body.append(
                    "<line x1=\"\(gx)\" y1=\"\(axisY)\" x2=\"\(gx)\" y2=\"\(axisY + panelHeight - 10)\" class=\"grid\"/>"
                )
                body.append(
                    "<text x=\"\(gx)\" y=\"\(axisY - 2)\" class=\"tick\" text-anchor=\"middle\">"
                        + "\(tickLabel(exponent))/s</text>")
            }
            y = axisY + 10
            for key in keys {
                let rows = here.compactMap { c in c.phases.first { $0.key == key }.map { (c, $0) } }
                let groupHeight =
                    Double(rows.count) * (2 * barHeight + pairGap) + Double(max(0, rows.count - 1)) * storeGap
                let middle = y + groupHeight / 2
                body.append(
                    "<text x=\"\(labelWidth)\" y=\"\(middle - 2)\" class=\"label\" text-anchor=\"end\">"
                        + "\(xmlEscape(key.short))</text>")
                let opsNote = "\(key.unit)/s · \(formatCount(rows[0].1.operations)) per run"
                body.append(
                    "<text x=\"\(labelWidth)\" y=\"\(middle + 10)\" class=\"sublabel\" text-anchor=\"end\">"
                        + "\(xmlEscape(opsNote))</text>")
                for (comparison, phase) in rows {
                    let color = storeColors[comparison.store] ?? "#888"
                    let store = comparison.store.rawValue
                    let stowageWidth = max(1, x(phase.stowageOpsPerSecond) - plotLeft)
                    let sqliteWidth = max(1, x(phase.sqliteOpsPerSecond) - plotLeft)
                    let stowageTip =
                        "\(store), \(phase.title), N=\(n): \(formatMilliseconds(phase.stowageSeconds)) ms, "
                        + "\(formatRate(phase.stowageOpsPerSecond)) \(key.unit)/s"
                    let sqliteTip =
                        "\(comparison.peer.title) (peer of \(store)), \(phase.title), N=\(n): "
                        + "\(formatMilliseconds(phase.sqliteSeconds)) ms, "
                        + "\(formatRate(phase.sqliteOpsPerSecond)) \(key.unit)/s"
                    body.append(
                        "<rect class=\"bar\" data-n=\"\(n)\" data-phase=\"\(key.rawValue)\" data-store=\"\(store)\" "
                            + "data-side=\"stowage\" x=\"\(plotLeft)\" y=\"\(y)\" width=\"\(stowageWidth)\" "
                            + "height=\"\(barHeight)\" fill=\"\(color)\"><title>\(xmlEscape(stowageTip))</title></rect>"
                    )
                    body.append(
                        "<text x=\"\(plotLeft + stowageWidth + 4)\" y=\"\(y + barHeight - 1)\" class=\"value\">"
                            + "\(formatRate(phase.stowageOpsPerSecond)) · \(formatRatio(phase.ratio))</text>")
                    y += barHeight + pairGap
                    body.append(
                        "<rect class=\"bar\" data-n=\"\(n)\" data-phase=\"\(key.rawValue)\" data-store=\"\(store)\" "
                            + "data-side=\"sqlite\" x=\"\(plotLeft)\" y=\"\(y)\" width=\"\(sqliteWidth)\" "
                            + "height=\"\(barHeight)\" fill=\"\(color)\" fill-opacity=\"0.35\" stroke=\"\(color)\" "
                            + "stroke-width=\"0.5\"><title>\(xmlEscape(sqliteTip))</title></rect>")
                    body.append(
                        "<text x=\"\(plotLeft + sqliteWidth + 4)\" y=\"\(y + barHeight - 1)\" class=\"value pale\">"
                            + "\(formatRate(phase.sqliteOpsPerSecond))</text>")
                    y += barHeight + storeGap
                }
                y += groupGap - storeGap
            }
            y += 30
        }
        let height = y
        let style = """
            <style>
            text { font-family: Helvetica, Arial, sans-serif; fill: #222; }
            .title { font-size: 16px; font-weight: bold; }
            .panel { font-size: 14px; font-weight: bold; }
            .note { font-size: 11px; fill: #555; }
            .legend { font-size: 11px; }
            .label { font-size: 12px; }
            .sublabel { font-size: 10px; fill: #777; }
            .tick { font-size: 10px; fill: #777; }
            .value { font-size: 9px; }
            .pale { fill: #777; }
            .grid { stroke: #ddd; stroke-width: 1; }
            </style>
            """
        return """
            <?xml version="1.0" encoding="UTF-8"?>
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" \
            viewBox="0 0 \(Int(width)) \(Int(height))">
            \(style)
            <rect x="0" y="0" width="\(Int(width))" height="\(Int(height))" fill="white"/>
            \(body.joined(separator: "\n"))
            </svg>

            """
    }
}
