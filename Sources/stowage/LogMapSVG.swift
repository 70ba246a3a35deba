import Foundation
import StowageInspection

/// `inspect --svg FILE`: the log file drawn as a picture. One strip is the whole file, each
/// region at its true share of the bytes (header, live records, dead records, checkpoints,
/// a damaged tail, reserved zeros), with the offsets below it and each kind's bytes in the
/// legend. Every region is a `rect` of class `region` with `data-kind`, `data-offset` and
/// `data-length`, and a tooltip that names it.
struct LogMapSVG {
    static let width = 1000.0
    private static let left = 20.0
    private static let right = 980.0
    private static let stripTop = 112.0
    private static let stripHeight = 64.0

    /// The kinds in the legend's order, with their colours and names.
    static let kinds: [(kind: ToolRegion.Kind, color: String, name: String)] = [
        (.header, "#8c8c8c", "header"),
        (.live, "#4e79a7", "live records"),
        (.dead, "#e3c79f", "dead records"),
        (.checkpoint, "#59a14f", "last checkpoint"),
        (.damaged, "#e15759", "damaged"),
        (.reserved, "#f2f2f2", "reserved zeros"),
    ]

    static func color(_ kind: ToolRegion.Kind) -> String { kinds.first { $0.kind == kind }?.color ?? "#888" }

    /// A checkpoint a later one superseded: dead bytes, drawn paler than the last one.
    static let supersededColor = "#b5d9a8"

    /// One drawn stretch: a region, or the live or dead share of a commit that holds both.
    struct Piece {
        var kind: ToolRegion.Kind
        var offset: Int64
        var length: Int64
        var note: String
        /// A checkpoint that a later one superseded.
        var superseded = false
    }

    /// The regions as drawn: a live commit's dead share follows its live bytes (`inspect`
    /// counts it spread over the commit; the picture puts it at the end).
    static func pieces(_ regions: [ToolRegion]) -> [Piece] {
        var pieces: [Piece] = []
        for region in regions {
            switch region.kind {
            case .live where region.deadLength > 0 && region.deadLength < region.length:
                let live = region.length - region.deadLength
                let note = "commit at \(region.offset): \(region.length) bytes, \(region.deadLength) of them dead"
                pieces.append(Piece(kind: .live, offset: region.offset, length: live, note: note))
                pieces.append(
                    Piece(kind: .dead, offset: region.offset + live, length: region.deadLength, note: note))
            case .checkpoint where region.deadLength > 0:
                pieces.append(
                    Piece(
                        kind: .checkpoint, offset: region.offset, length: region.length,
                        note: "superseded checkpoint at \(region.offset): \(region.length) bytes, dead",
                        superseded: true))
            default:
                let name = kinds.first { $0.kind == region.kind }?.name ?? region.kind.rawValue
                pieces.append(
                    Piece(
                        kind: region.kind, offset: region.offset, length: region.length,
                        note: "\(name) at \(region.offset): \(region.length) bytes"))
            }
        }
        return pieces
    }

    static func render(_ store: ToolStore, log: ToolLogDetails) -> String {
        let size = max(1, store.fileSize)
        let scale = (right - left) / Double(size)
        func x(_ offset: Int64) -> Double { left + Double(offset) * scale }
        let pieces = Self.pieces(log.regions)
        var body: [String] = []
        let name = (store.path as NSString).lastPathComponent
        body.append(
            "<text x=\"\(left)\" y=\"28\" class=\"title\">\(xml(name)): log format version \(log.formatVersion), "
                + "\(Text.count(Int(store.fileSize), "byte"))</text>")
        var facts = [
            Text.count(log.commits.count, "commit"), Text.count(log.checkpoints, "checkpoint"),
            "\(log.liveBytes) bytes live and \(log.deadBytes) dead as inspect counts them",
        ]
        if let damage = store.damage {
            facts.append("damaged from offset \(damage.offset.map(String.init) ?? "?")")
        }
        body.append("<text x=\"\(left)\" y=\"48\" class=\"note\">\(xml(facts.joined(separator: "; ")))</text>")
        body.append(
            "<text x=\"\(left)\" y=\"66\" class=\"note\">The whole file, left to right, each region at its share of "
                + "the bytes; a commit that holds live and superseded records is</text>")
        body.append(
            "<text x=\"\(left)\" y=\"82\" class=\"note\">drawn live, then dead; a superseded checkpoint is dead "
                + "bytes too, drawn paler than the last one.</text>")

        // Labels above the regions a reader looks for: checkpoints and damage.
        var labelEnd = -Double.infinity
        for piece in pieces where piece.kind == .checkpoint || piece.kind == .damaged || piece.kind == .header {
            let middle = (x(piece.offset) + x(piece.offset + piece.length)) / 2
            let text =
                piece.kind == .checkpoint
                ? (piece.superseded ? "old checkpoint" : "checkpoint")
                : piece.kind == .damaged ? "damaged" : "header"
            let textWidth = Double(text.count) * 6
            // Kept inside the picture, and lifted over a label it would run into.
            let labelX = min(right - textWidth / 2, max(left + textWidth / 2, middle))
            let lift = labelX - textWidth / 2 < labelEnd + 4 ? 13.0 : 0
            body.append(
                "<text x=\"\(f(labelX))\" y=\"\(f(stripTop - 8 - lift))\" class=\"mark\" text-anchor=\"middle\">"
                    + "\(text)</text>")
            body.append(
                "<line x1=\"\(f(middle))\" y1=\"\(f(stripTop - 5 - lift))\" x2=\"\(f(middle))\" "
                    + "y2=\"\(f(stripTop))\" stroke=\"#999\" stroke-width=\"0.8\"/>")
            if lift == 0 { labelEnd = labelX + textWidth / 2 }
        }
        // The strip.
        for piece in pieces {
            let start = x(piece.offset)
            let width = max(1, Double(piece.length) * scale)
            let outline = width >= 4 ? " stroke=\"white\" stroke-width=\"1\"" : ""
            body.append(
                "<rect class=\"region\" data-kind=\"\(piece.kind.rawValue)\" data-offset=\"\(piece.offset)\" "
                    + "data-length=\"\(piece.length)\" x=\"\(f(start))\" y=\"\(f(stripTop))\" width=\"\(f(width))\" "
                    + "height=\"\(f(stripHeight))\" fill=\"\(piece.superseded ? supersededColor : color(piece.kind))\"\(outline)>"
                    + "<title>\(xml(piece.note))</title></rect>")
        }
        body.append(
            "<rect x=\"\(left)\" y=\"\(f(stripTop))\" width=\"\(f(right - left))\" height=\"\(f(stripHeight))\" "
                + "fill=\"none\" stroke=\"#666\" stroke-width=\"1\"/>")
        // Offsets: the start, quarters, the end.
        let axisY = stripTop + stripHeight
        for quarter in 0...4 {
            let offset = store.fileSize * Int64(quarter) / 4
            let tx = x(offset)
            body.append(
                "<line x1=\"\(f(tx))\" y1=\"\(f(axisY))\" x2=\"\(f(tx))\" y2=\"\(f(axisY + 5))\" stroke=\"#666\"/>")
            let anchor = quarter == 0 ? "start" : quarter == 4 ? "end" : "middle"
            body.append(
                "<text x=\"\(f(tx))\" y=\"\(f(axisY + 17))\" class=\"tick\" text-anchor=\"\(anchor)\">"
                    + "\(byteLabel(offset))</text>")
        }
        body.append(
            "<text x=\"\(f((left + right) / 2))\" y=\"\(f(axisY + 32))\" class=\"tick\" text-anchor=\"middle\">"
                + "offset in the file</text>")
        // The legend, with each kind's bytes.
        var totals: [ToolRegion.Kind: Int64] = [:]
        var superseded: Int64 = 0
        for piece in pieces {
            if piece.superseded { superseded += piece.length } else { totals[piece.kind, default: 0] += piece.length }
        }
        var entries = kinds.compactMap { entry in
            totals[entry.kind].map { (color: entry.color, text: "\(entry.name): \(byteLabel($0))") }
        }
        if superseded > 0 {
            let index = (entries.firstIndex { $0.color == color(.checkpoint) } ?? entries.count - 1) + 1
            entries.insert(
                (supersededColor, "old checkpoints: \(byteLabel(superseded))"), at: min(index, entries.count))
        }
        var legendX = left
        let legendY = axisY + 58
        for entry in entries {
            body.append(
                "<rect x=\"\(f(legendX))\" y=\"\(f(legendY - 11))\" width=\"14\" height=\"14\" "
                    + "fill=\"\(entry.color)\" stroke=\"#999\" stroke-width=\"0.5\"/>")
            body.append("<text x=\"\(f(legendX + 20))\" y=\"\(f(legendY))\" class=\"legend\">\(xml(entry.text))</text>")
            legendX += 20 + Double(entry.text.count) * 6.6 + 22
        }
        let height = legendY + 22
        return """
            <?xml version="1.0" encoding="UTF-8"?>
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" \
            viewBox="0 0 \(Int(width)) \(Int(height))">
            <style>
            text { font-family: Helvetica, Arial, sans-serif; fill: #222; }
            .title { font-size: 16px; font-weight: bold; }
            .note { font-size: 12px; fill: #555; }
            .mark { font-size: 11px; fill: #444; }
            .tick { font-size: 11px; fill: #666; }
            .legend { font-size: 12px; }
            </style>
            <rect x="0" y="0" width="\(Int(width))" height="\(Int(height))" fill="white"/>
            \(body.joined(separator: "\n"))
            </svg>

            """
    }

    private static func f(_ value: Double) -> String { String(format: "%.2f", value) }

    private static func xml(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }

    /// Bytes as a reader counts them: `801 B`, `12.5 KiB`, `3.1 MiB`.
    static func byteLabel(_ bytes: Int64) -> String {
        if bytes < 10_000 { return "\(bytes) B" }
        if bytes < 10 << 20 { return String(format: "%.1f KiB", Double(bytes) / 1024) }
        if bytes < 10 << 30 { return String(format: "%.1f MiB", Double(bytes) / 1_048_576) }
        return String(format: "%.1f GiB", Double(bytes) / 1_073_741_824)
    }
}
