import StowageInspection

/// `inspect --map`'s strip: the log file drawn as one character per column of bytes.
struct LogMap {
    let text: String
    let columns: Int
    let bytesPerColumn: Int64

    /// The character of each kind of region.
    private static let glyph: [ToolRegion.Kind: Character] = [
        .header: "H", .live: "#", .dead: ".", .checkpoint: "C", .damaged: "!", .reserved: "_",
    ]
    /// The kinds in the order that breaks a tie in a column: the ones a reader looks for
    /// (damage, checkpoints) before the common ones, so that an even split still shows them.
    private static let kinds: [ToolRegion.Kind] = [.damaged, .checkpoint, .header, .live, .dead, .reserved]

    /// Each column is the kind that covers most of its bytes. A live commit's dead share
    /// (`deadLength`) is spread evenly over its bytes, as inspect counts it.
    init(_ regions: [ToolRegion], fileSize: Int64, width: Int) {
        guard fileSize > 0 else {
            text = ""
            columns = 0
            bytesPerColumn = 0
            return
        }
        let perColumn = max(1, (fileSize + Int64(width) - 1) / Int64(width))
        let columns = Int((fileSize + perColumn - 1) / perColumn)
        let kinds = Self.kinds
        var text = ""
        var r = 0
        for column in 0..<columns {
            let start = Int64(column) * perColumn
            let end = min(fileSize, start + perColumn)
            var bytes: [ToolRegion.Kind: Int64] = [:]
            while r < regions.count, regions[r].offset + regions[r].length <= start { r += 1 }
            var i = r
            while i < regions.count, regions[i].offset < end {
                let region = regions[i]
                let overlap = min(end, region.offset + region.length) - max(start, region.offset)
                if overlap > 0 {
                    if region.kind == .live, region.deadLength > 0, region.length > 0 {
                        let dead = overlap * region.deadLength / region.length
                        bytes[.dead, default: 0] += dead
                        bytes[.live, default: 0] += overlap - dead
                    } else {
                        bytes[region.kind, default: 0] += overlap
                    }
                }
                i += 1
            }
            let best = kinds.max { a, b in
                let x = bytes[a] ?? 0
                let y = bytes[b] ?? 0
                // On a tie the kind earlier in `kinds` wins.
                return x != y ? x < y : (kinds.firstIndex(of: a) ?? 0) > (kinds.firstIndex(of: b) ?? 0)
            }
            text.append(best.flatMap { Self.glyph[$0] } ?? " ")
        }
        self.text = text
        self.columns = columns
        self.bytesPerColumn = perColumn
    }
}
