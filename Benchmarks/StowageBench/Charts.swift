import Foundation

// The report's two pictures, drawn as SVG from a `Report` (a run's, or one read back from
// results.json with `--report`):
//
// - chart.svg: for each N a panel of ratios against SQLite, a row per operation and a bar
//   per store, each bar drawn from 1× on a log scale: right where Stowage is faster, left
//   where it is slower.
// - scaling.svg: a small chart per operation of its time per row (or per fetch, save, …)
//   against N, both axes logarithmic, a line per store and a dashed one for its SQLite
//   peer: a flat line costs the same per row at every N, a rising one grows faster than
//   linearly.

let storeColors: [StoreKind: String] = [
    .memory: "#4e79a7", .json: "#f28e2b", .logFull: "#e15759", .logRelaxed: "#59a14f", .postgres: "#b07aa1",
    .postgresHistory: "#ff9da7",
]

func xmlEscape(_ text: String) -> String {
    text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
        .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
}

/// A number as an SVG attribute: two decimals at most.
private func n2(_ value: Double) -> String { String(format: "%.2f", value) }

private let chartStyle = """
    <style>
    text { font-family: Helvetica, Arial, sans-serif; fill: #222; }
    .title { font-size: 17px; font-weight: bold; }
    .panel { font-size: 14px; font-weight: bold; }
    .note { font-size: 11px; fill: #555; }
    .legend { font-size: 12px; }
    .label { font-size: 12px; }
    .sublabel { font-size: 10px; fill: #777; }
    .tick { font-size: 10px; fill: #666; }
    .value { font-size: 9px; fill: #333; }
    .side { font-size: 10px; font-weight: bold; fill: #888; }
    .grid { stroke: #e4e4e4; stroke-width: 1; }
    .one { stroke: #333; stroke-width: 1.5; }
    .frame { fill: none; stroke: #bbb; stroke-width: 1; }
    </style>
    """

private func svgDocument(width: Double, height: Double, body: [String]) -> String {
    """
    <?xml version="1.0" encoding="UTF-8"?>
    <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" \
    viewBox="0 0 \(Int(width)) \(Int(height))">
    \(chartStyle)
    <rect x="0" y="0" width="\(Int(width))" height="\(Int(height))" fill="white"/>
    \(body.joined(separator: "\n"))
    </svg>

    """
}

extension Report {
    /// The run's setting in one line, for the charts' subtitles.
    var settingLine: String {
        "\(machine.cpu), \(machine.cores) cores; \(toolchain) \(buildConfiguration); SQLite \(sqliteVersion); "
            + "\(date); medians of \(plural(runs, "run"))"
            + (ns.contains { $0 >= 1_000_000 } ? " (\(runsAtOneMillion) at N ≥ 1M)" : "") + " after a warm-up"
    }

    /// The phases any comparison has, in the workload's order.
    var chartPhases: [PhaseKey] {
        PhaseKey.allCases.filter { key in comparisons.contains { c in c.phases.contains { $0.key == key } } }
    }

    /// The stores with a comparison, in the order asked for.
    var chartStores: [StoreKind] { stores.filter { store in comparisons.contains { $0.store == store } } }

    /// A legend of the stores' colours, from `x` at `y`; returns the y below it.
    func legend(x: Double, y: Double, width: Double, dashed: Bool, into body: inout [String]) -> Double {
        var legendX = x
        var y = y
        for store in chartStores {
            let color = storeColors[store] ?? "#888"
            let text = "\(store.rawValue) (faces \(store.peer.title))"
            let itemWidth = 34 + Double(text.count) * 6.3 + 22
            if legendX + itemWidth > width - 10 {
                legendX = x
                y += 18
            }
            if dashed {
                body.append(
                    "<line x1=\"\(n2(legendX))\" y1=\"\(n2(y - 4))\" x2=\"\(n2(legendX + 14))\" y2=\"\(n2(y - 4))\" "
                        + "stroke=\"\(color)\" stroke-width=\"2.5\"/>"
                        + "<line x1=\"\(n2(legendX + 16))\" y1=\"\(n2(y - 4))\" x2=\"\(n2(legendX + 30))\" "
                        + "y2=\"\(n2(y - 4))\" stroke=\"\(color)\" stroke-width=\"1.5\" stroke-dasharray=\"3 2\"/>")
            } else {
                body.append(
                    "<rect x=\"\(n2(legendX))\" y=\"\(n2(y - 10))\" width=\"30\" height=\"11\" fill=\"\(color)\"/>")
            }
            body.append(
                "<text x=\"\(n2(legendX + 34))\" y=\"\(n2(y))\" class=\"legend\">\(xmlEscape(text))</text>")
            legendX += itemWidth
        }
        return y
    }

    // MARK: Ratios

    /// For each N a panel of ratios against SQLite: a row per operation, a bar per store
    /// drawn from 1× on a log scale (right: Stowage faster; left: slower).
    var ratioChartSVG: String {
        let phases = chartPhases
        let stores = chartStores
        let panels = ns.filter { n in comparisons.contains { $0.n == n } }
        let labelWidth = 210.0
        let panelWidth = 300.0
        let panelGap = 46.0
        let width = max(760, labelWidth + Double(panels.count) * (panelWidth + panelGap) + 10)
        let barHeight = 7.0
        let barGap = 1.5
        let rowGap = 9.0
        let rowHeight = Double(stores.count) * (barHeight + barGap) - barGap + rowGap

        // The ratio axis: whole decades around the data, from 1/100 to 100 at most; a bar
        // past either end stops at the edge with an arrowhead, and its label says its value.
        let ratios = comparisons.flatMap { $0.phases.map(\.ratio) }.filter { $0.isFinite && $0 > 0 }
        let lowExponent = max(-2, min(-1, floor(log10(ratios.min() ?? 0.1))))
        let highExponent = min(2, max(1, ceil(log10(ratios.max() ?? 10))))
        let low = pow(10, lowExponent)
        let high = pow(10, highExponent)

        var body: [String] = []
        var y = 24.0
        body.append(
            "<text x=\"10\" y=\"\(n2(y))\" class=\"title\">Stowage beside SQLite: how many times faster, per "
                + "operation and store</text>")
        y += 18
        body.append("<text x=\"10\" y=\"\(n2(y))\" class=\"note\">\(xmlEscape(settingLine))</text>")
        y += 15
        body.append(
            "<text x=\"10\" y=\"\(n2(y))\" class=\"note\">Each bar is SQLite's median time over Stowage's, drawn "
                + "from 1× on a log scale: to the right Stowage is faster, to the left slower. Each store faces "
                + "SQLite at the durability it promises.</text>")
        y += 24
        y = legend(x: 10, y: y, width: width, dashed: false, into: &body) + 30

        let panelTop = y + 16
        let plotTop = panelTop + 16
        let plotHeight = Double(phases.count) * rowHeight + 4
        // Row labels, shared by every panel.
        for (row, key) in phases.enumerated() {
            let middle = plotTop + 2 + Double(row) * rowHeight + (rowHeight - rowGap) / 2
            body.append(
                "<text x=\"\(n2(labelWidth - 8))\" y=\"\(n2(middle))\" class=\"label\" text-anchor=\"end\">"
                    + "\(xmlEscape(key.short))</text>")
            let count = key.ratioCaption(comparisons)
            body.append(
                "<text x=\"\(n2(labelWidth - 8))\" y=\"\(n2(middle + 12))\" class=\"sublabel\" "
                    + "text-anchor=\"end\">\(xmlEscape(count))</text>")
            if row > 0 {
                let lineY = plotTop + 2 + Double(row) * rowHeight - rowGap / 2
                body.append(
                    "<line x1=\"10\" y1=\"\(n2(lineY))\" x2=\"\(n2(width - 10))\" y2=\"\(n2(lineY))\" "
                        + "stroke=\"#f0f0f0\"/>")
            }
        }
        for (index, n) in panels.enumerated() {
            let left = labelWidth + 14 + Double(index) * (panelWidth + panelGap)
            let right = left + panelWidth
            func x(_ ratio: Double) -> Double {
                let t = (log10(min(high, max(low, ratio))) - lowExponent) / (highExponent - lowExponent)
                return left + t * panelWidth
            }
            let here = comparisons.filter { $0.n == n }
            body.append(
                "<text x=\"\(n2(left + panelWidth / 2))\" y=\"\(n2(panelTop - 10))\" class=\"panel\" "
                    + "text-anchor=\"middle\">N = \(formatCount(n)) rows</text>")
            body.append(
                "<text x=\"\(n2(x(1) - 6))\" y=\"\(n2(panelTop + 6))\" class=\"side\" text-anchor=\"end\">"
                    + "◂ Stowage slower</text>")
            body.append(
                "<text x=\"\(n2(x(1) + 6))\" y=\"\(n2(panelTop + 6))\" class=\"side\">Stowage faster ▸</text>")
            // Grid: 1-2-5 in each decade; labels at decades and at 2× and 0.5×.
            var exponent = lowExponent
            while exponent <= highExponent {
                for step in [1.0, 2.0, 5.0] {
                    let value = pow(10, exponent) * step
                    guard value <= high * 1.0001 else { continue }
                    let gx = x(value)
                    body.append(
                        "<line x1=\"\(n2(gx))\" y1=\"\(n2(plotTop))\" x2=\"\(n2(gx))\" "
                            + "y2=\"\(n2(plotTop + plotHeight))\" class=\"grid\"/>")
                    if step == 1 || abs(value - 2) < 1e-9 || abs(value - 0.5) < 1e-9 {
                        let label = value >= 1 ? "\(Int(value.rounded()))×" : String(format: "%g×", value)
                        body.append(
                            "<text x=\"\(n2(gx))\" y=\"\(n2(plotTop + plotHeight + 13))\" class=\"tick\" "
                                + "text-anchor=\"middle\">\(label)</text>")
                    }
                }
                exponent += 1
            }
            body.append(
                "<rect x=\"\(n2(left))\" y=\"\(n2(plotTop))\" width=\"\(n2(panelWidth))\" "
                    + "height=\"\(n2(plotHeight))\" class=\"frame\"/>")
            for (row, key) in phases.enumerated() {
                var barY = plotTop + 2 + Double(row) * rowHeight
                for store in stores {
                    defer { barY += barHeight + barGap }
                    guard let comparison = here.first(where: { $0.store == store }),
                        let phase = comparison.phases.first(where: { $0.key == key })
                    else { continue }
                    let color = storeColors[store] ?? "#888"
                    let one = x(1)
                    let end = x(phase.ratio)
                    let clipped = phase.ratio < low || phase.ratio > high
                    let tip =
                        "\(store.rawValue) vs \(comparison.peer.title), \(phase.title), N=\(n): "
                        + "Stowage \(formatMilliseconds(phase.stowageSeconds)) ms, SQLite "
                        + "\(formatMilliseconds(phase.sqliteSeconds)) ms, \(formatRatio(phase.ratio))"
                    body.append(
                        "<rect class=\"bar\" data-n=\"\(n)\" data-phase=\"\(key.rawValue)\" "
                            + "data-store=\"\(store.rawValue)\" data-ratio=\"\(phase.ratio)\" "
                            + "x=\"\(n2(min(one, end)))\" y=\"\(n2(barY))\" width=\"\(n2(max(1, abs(end - one))))\" "
                            + "height=\"\(n2(barHeight))\" fill=\"\(color)\"><title>\(xmlEscape(tip))</title></rect>")
                    if clipped {
                        // An arrowhead past the end of the axis.
                        let direction = phase.ratio < low ? -1.0 : 1.0
                        let tipX = end + direction * 6
                        body.append(
                            "<path d=\"M\(n2(end)) \(n2(barY - 1)) L\(n2(tipX)) \(n2(barY + barHeight / 2)) "
                                + "L\(n2(end)) \(n2(barY + barHeight + 1)) Z\" fill=\"\(color)\"/>")
                    }
                    let label = formatRatio(phase.ratio)
                    if phase.ratio >= 1 {
                        let labelX = clipped ? end - 8 : end + 3
                        body.append(
                            "<text x=\"\(n2(labelX))\" y=\"\(n2(barY + barHeight - 0.5))\" class=\"value\""
                                + (clipped ? " text-anchor=\"end\"" : "") + ">\(label)</text>")
                    } else {
                        let labelX = clipped ? end + 8 : end - 3
                        body.append(
                            "<text x=\"\(n2(labelX))\" y=\"\(n2(barY + barHeight - 0.5))\" class=\"value\""
                                + (clipped ? "" : " text-anchor=\"end\"") + ">\(label)</text>")
                    }
                }
            }
            body.append(
                "<line x1=\"\(n2(x(1)))\" y1=\"\(n2(plotTop - 4))\" x2=\"\(n2(x(1)))\" "
                    + "y2=\"\(n2(plotTop + plotHeight + 2))\" class=\"one\"/>")
            let missing = stores.filter { store in !here.contains { $0.store == store } }
            if !missing.isEmpty {
                body.append(
                    "<text x=\"\(n2(left + panelWidth / 2))\" y=\"\(n2(plotTop + plotHeight + 28))\" class=\"note\" "
                        + "text-anchor=\"middle\">not run at this N: "
                        + "\(xmlEscape(missing.map(\.rawValue).joined(separator: ", ")))</text>")
            }
            _ = right
        }
        let height = plotTop + plotHeight + 42
        return svgDocument(width: width, height: height, body: body)
    }

    // MARK: Scaling

    /// A small chart per operation: time per operation against N, log–log, a solid line per
    /// store and a dashed one for its SQLite peer.
    var scalingChartSVG: String {
        let phases = chartPhases
        let stores = chartStores
        let columns = 4
        let cellWidth = 300.0
        let cellHeight = 230.0
        let plotLeft = 62.0
        let plotRight = 18.0
        let plotTop = 40.0
        let plotBottom = 34.0
        let width = Double(columns) * cellWidth + 20
        let allNs = ns.filter { n in comparisons.contains { $0.n == n } }

        var body: [String] = []
        var y = 24.0
        body.append(
            "<text x=\"10\" y=\"\(n2(y))\" class=\"title\">How each operation's cost grows with N: time per "
                + "row (or fetch, save), log–log</text>")
        y += 18
        body.append("<text x=\"10\" y=\"\(n2(y))\" class=\"note\">\(xmlEscape(settingLine))</text>")
        y += 15
        body.append(
            "<text x=\"10\" y=\"\(n2(y))\" class=\"note\">Solid: the Stowage store; dashed: its SQLite peer. Each "
                + "phase's time is divided by the rows it touches, or by its fetches or saves where those touch a "
                + "few rows whatever N is.</text>")
        y += 15
        body.append(
            "<text x=\"10\" y=\"\(n2(y))\" class=\"note\">A flat line: each row (fetch, save) costs the same at "
                + "every N, so the phase grows linearly or not at all. A rising line: each costs more as the store "
                + "grows, so the phase grows faster than that.</text>")
        y += 24
        y = legend(x: 10, y: y, width: width, dashed: true, into: &body) + 16
        let top = y

        for (index, key) in phases.enumerated() {
            let cellX = 10 + Double(index % columns) * cellWidth
            let cellY = top + Double(index / columns) * cellHeight
            let left = cellX + plotLeft
            let right = cellX + cellWidth - plotRight
            let plotY = cellY + plotTop
            let bottom = cellY + cellHeight - plotBottom
            // Seconds per operation, for both sides of every store at every N.
            var series: [(store: StoreKind, side: String, points: [(n: Int, seconds: Double)])] = []
            var operationCounts = Set<Int>()
            for store in stores {
                var stowage: [(Int, Double)] = []
                var sqlite: [(Int, Double)] = []
                for comparison in comparisons where comparison.store == store {
                    guard let phase = comparison.phases.first(where: { $0.key == key }), phase.operations > 0
                    else { continue }
                    operationCounts.insert(phase.operations)
                    let units = key.scalingUnits(operations: phase.operations, n: comparison.n)
                    stowage.append((comparison.n, phase.stowageSeconds / units))
                    sqlite.append((comparison.n, phase.sqliteSeconds / units))
                }
                guard !stowage.isEmpty else { continue }
                series.append((store, "stowage", stowage.sorted { $0.0 < $1.0 }.map { (n: $0.0, seconds: $0.1) }))
                series.append((store, "sqlite", sqlite.sorted { $0.0 < $1.0 }.map { (n: $0.0, seconds: $0.1) }))
            }
            let values = series.flatMap { $0.points.map(\.seconds) }.filter { $0 > 0 && $0.isFinite }
            guard !values.isEmpty else { continue }
            let counts = operationCounts.sorted()
            let unit = key.scalingUnit
            body.append(
                "<text x=\"\(n2(cellX + 8))\" y=\"\(n2(cellY + 16))\" class=\"label\" font-weight=\"bold\">"
                    + "\(xmlEscape(key.short))</text>")
            body.append(
                "<text x=\"\(n2(cellX + 8))\" y=\"\(n2(cellY + 30))\" class=\"sublabel\">"
                    + "\(xmlEscape(key.scalingCaption(counts: counts)))</text>")

            let lowExponent = floor(log10(values.min()!))
            let highExponent = max(lowExponent + 1, ceil(log10(values.max()!)))
            func py(_ seconds: Double) -> Double {
                let t = (log10(seconds) - lowExponent) / (highExponent - lowExponent)
                return bottom - t * (bottom - plotY)
            }
            let nLow = log10(Double(allNs.first ?? 1))
            let nHigh = log10(Double(allNs.last ?? 10))
            func px(_ n: Int) -> Double {
                guard nHigh > nLow else { return (left + right) / 2 }
                return left + 10 + (log10(Double(n)) - nLow) / (nHigh - nLow) * (right - left - 20)
            }
            // Axes and grid: a line per decade of time, a tick per N.
            var exponent = lowExponent
            while exponent <= highExponent {
                let gy = py(pow(10, exponent))
                body.append(
                    "<line x1=\"\(n2(left))\" y1=\"\(n2(gy))\" x2=\"\(n2(right))\" y2=\"\(n2(gy))\" class=\"grid\"/>")
                body.append(
                    "<text x=\"\(n2(left - 4))\" y=\"\(n2(gy + 3))\" class=\"tick\" text-anchor=\"end\">"
                        + "\(durationLabel(exponent))</text>")
                exponent += 1
            }
            for n in allNs {
                let gx = px(n)
                body.append(
                    "<line x1=\"\(n2(gx))\" y1=\"\(n2(plotY))\" x2=\"\(n2(gx))\" y2=\"\(n2(bottom))\" class=\"grid\"/>")
                body.append(
                    "<text x=\"\(n2(gx))\" y=\"\(n2(bottom + 13))\" class=\"tick\" text-anchor=\"middle\">"
                        + "\(shortCount(n))</text>")
            }
            body.append(
                "<rect x=\"\(n2(left))\" y=\"\(n2(plotY))\" width=\"\(n2(right - left))\" "
                    + "height=\"\(n2(bottom - plotY))\" class=\"frame\"/>")
            body.append(
                "<text x=\"\(n2((left + right) / 2))\" y=\"\(n2(bottom + 26))\" class=\"tick\" "
                    + "text-anchor=\"middle\">N (rows)</text>")
            for line in series {
                let color = storeColors[line.store] ?? "#888"
                let points = line.points.map { (px($0.n), py($0.seconds)) }
                let dash = line.side == "sqlite" ? " stroke-dasharray=\"4 3\"" : ""
                let strokeWidth = line.side == "sqlite" ? "1.5" : "2.5"
                if points.count > 1 {
                    let d = points.enumerated().map {
                        "\($0.offset == 0 ? "M" : "L")\(n2($0.element.0)) \(n2($0.element.1))"
                    }
                    .joined(separator: " ")
                    body.append(
                        "<path class=\"line\" data-phase=\"\(key.rawValue)\" data-store=\"\(line.store.rawValue)\" "
                            + "data-side=\"\(line.side)\" d=\"\(d)\" fill=\"none\" stroke=\"\(color)\" "
                            + "stroke-width=\"\(strokeWidth)\"\(dash)/>")
                }
                for (point, (cx, cy)) in zip(line.points, points) {
                    let tip =
                        "\(line.side == "sqlite" ? "\(line.store.peer.title) (peer of \(line.store.rawValue))" : line.store.rawValue), "
                        + "\(key.short), N=\(point.n): \(durationText(point.seconds)) per \(unit)"
                    let fill = line.side == "sqlite" ? "white" : color
                    body.append(
                        "<circle class=\"point\" data-n=\"\(point.n)\" data-phase=\"\(key.rawValue)\" "
                            + "data-store=\"\(line.store.rawValue)\" data-side=\"\(line.side)\" cx=\"\(n2(cx))\" "
                            + "cy=\"\(n2(cy))\" r=\"\(line.side == "sqlite" ? "2.5" : "3")\" fill=\"\(fill)\" "
                            + "stroke=\"\(color)\" stroke-width=\"1.2\"><title>\(xmlEscape(tip))</title></circle>")
                }
            }
        }
        let rows = (phases.count + columns - 1) / columns
        let height = top + Double(rows) * cellHeight + 10
        return svgDocument(width: width, height: height, body: body)
    }
}

extension PhaseKey {
    /// What a row of the ratio chart counts: the operations each side timed.
    func ratioCaption(_ comparisons: [Comparison]) -> String {
        let counts = comparisons.compactMap { c in c.phases.first { $0.key == self }?.operations }
        let distinct = Set(counts)
        let noun = { (count: Int) in count == 1 ? String(self.unit.dropLast()) : self.unit }
        if distinct.count == 1, let count = distinct.first { return "\(formatCount(count)) \(noun(count))" }
        switch self {
        case .insert, .enumerate: return "N \(unit)"
        case .update, .delete: return "N / 10 \(unit)"
        default:
            // The JSON store runs fewer single-row saves; name the count of the others.
            let common = Dictionary(grouping: counts, by: { $0 }).max { $0.value.count < $1.value.count }?.key ?? 0
            return "\(formatCount(common)) \(noun(common)); fewer for json"
        }
    }

    /// What the scaling chart divides the phase's time by: the rows it touches, or its
    /// operations where each touches a few rows whatever N is.
    func scalingUnits(operations: Int, n: Int) -> Double {
        switch self {
        // One fetch per destination: N rows returned in all.
        case .equality: Double(max(1, n))
        // Each count tests every row.
        case .count: Double(operations) * Double(max(1, n))
        // An open reads every record's checksum (the log store), or nothing (SQLite).
        case .reopen, .open: Double(operations) * Double(max(1, n))
        default: Double(operations)
        }
    }

    /// The chart's unit, singular.
    var scalingUnit: String {
        switch self {
        case .equality: "row returned"
        case .count: "row tested"
        case .reopen, .open: "row in the store"
        case .point, .range: "fetch"
        case .singles, .observe, .refetch: "save"
        case .steps, .steps100: "step"
        default: "row"
        }
    }

    /// The chart's caption: the unit, and how many of the phase's operations there are.
    func scalingCaption(counts: [Int]) -> String {
        let fixed = counts.count == 1 ? " (\(formatCount(counts[0])) at every N)" : ""
        switch self {
        case .equality: return "time per row returned (100 fetches, N rows)"
        case .count: return "time per row tested (\(counts.first.map(formatCount) ?? "?") counts of N rows)"
        case .reopen, .open: return "time per row in the store (one open)"
        case .point, .range: return "time per fetch" + fixed
        case .singles, .observe, .refetch, .steps, .steps100:
            return "time per \(scalingUnit)" + (counts.count == 1 ? fixed : " (fewer for the JSON store)")
        default: return "time per row (\(rowsShare))"
        }
    }

    /// The share of the N rows a row-counted phase touches.
    private var rowsShare: String {
        switch self {
        case .update, .delete: "a tenth of N"
        case .imports: "10,000 rows"
        default: "N rows"
        }
    }
}

/// A power of ten of seconds as an axis label: `1 µs`, `10 ms`, `1 s`.
func durationLabel(_ exponent: Double) -> String {
    let e = Int(exponent)
    switch e {
    case ..<(-9): return String(format: "%g s", pow(10, exponent))
    case -9 ..< -6: return "\(Int(pow(10, Double(e + 9)).rounded())) ns"
    case -6 ..< -3: return "\(Int(pow(10, Double(e + 6)).rounded())) µs"
    case -3..<0: return "\(Int(pow(10, Double(e + 3)).rounded())) ms"
    default: return "\(Int(pow(10, exponent).rounded())) s"
    }
}

/// A duration in the unit that suits it.
func durationText(_ seconds: Double) -> String {
    if seconds >= 1 { return String(format: "%.2f s", seconds) }
    if seconds >= 1e-3 { return String(format: "%.2f ms", seconds * 1e3) }
    if seconds >= 1e-6 { return String(format: "%.2f µs", seconds * 1e6) }
    return String(format: "%.0f ns", seconds * 1e9)
}
