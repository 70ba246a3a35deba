import Foundation

/// One model of an observed result: its identifier and the values it sorts by.
struct ObservedEntry: Sendable {
    let id: PersistentIdentifier
    /// The values of the query's sort keys, most significant first.
    let keys: [SnapshotValue]
}

/// The order of an observed result: the query's sort keys, then the identifier, so that
/// no two entries are equal and a binary search finds each one.
struct EntryOrder: Sendable {
    /// Whether each sort key is ascending.
    let ascending: [Bool]

    func precedes(_ a: ObservedEntry, _ b: ObservedEntry) -> Bool {
        for (index, up) in ascending.enumerated() {
            let c = SnapshotValue.compare(a.keys[index], b.keys[index])
            if c == .orderedSame { continue }
            return up ? c == .orderedAscending : c == .orderedDescending
        }
        return a.id < b.id
    }
}

/// An ordered list of entries kept in chunks of at most ``chunkLimit``, so that inserting
/// or removing one costs O(*n* / ``chunkLimit`` + ``chunkLimit``) rather than moving every
/// entry after it. A copy shares the chunks (each an array, copied on write), so a result
/// handed to the app stays as it was while the observer changes its own copy: a change
/// copies the list of chunks and the one chunk it touches, not the entries.
struct OrderedEntries: Sendable {
    static let chunkLimit = 512

    private(set) var chunks: [[ObservedEntry]] = []
    /// `ends[i]` is the position just past chunk `i`.
    private(set) var ends: [Int] = []

    init() {}

    /// A list of `entries`, already in order.
    init(sorted entries: [ObservedEntry]) {
        var start = 0
        while start < entries.count {
            let end = Swift.min(entries.count, start + Self.chunkLimit / 2)
            chunks.append(Array(entries[start..<end]))
            start = end
        }
        rebuildEnds()
    }

    var count: Int { ends.last ?? 0 }
    var isEmpty: Bool { count == 0 }

    /// The chunk holding `position`, and the position's offset in it.
    /// - Complexity: O(log(*n* / ``chunkLimit``)).
    func locate(_ position: Int) -> (chunk: Int, offset: Int) {
        var low = 0
        var high = ends.count - 1
        while low < high {
            let mid = (low + high) / 2
            if ends[mid] <= position { low = mid + 1 } else { high = mid }
        }
        return (low, position - (low == 0 ? 0 : ends[low - 1]))
    }

    subscript(position: Int) -> ObservedEntry {
        let (chunk, offset) = locate(position)
        return chunks[chunk][offset]
    }

    /// The identifiers at `range`.
    func identifiers(in range: Range<Int>) -> [PersistentIdentifier] {
        guard !range.isEmpty else { return [] }
        var result: [PersistentIdentifier] = []
        result.reserveCapacity(range.count)
        var (chunk, offset) = locate(range.lowerBound)
        while result.count < range.count, chunk < chunks.count {
            let part = chunks[chunk]
            let take = Swift.min(part.count - offset, range.count - result.count)
            for entry in part[offset..<(offset + take)] { result.append(entry.id) }
            chunk += 1
            offset = 0
        }
        return result
    }

    /// Every identifier, in order.
    var allIdentifiers: [PersistentIdentifier] { identifiers(in: 0..<count) }

    /// Where `entry` is, or would be inserted: the number of entries that precede it.
    /// - Complexity: O(log *n*) comparisons.
    func insertionPoint(of entry: ObservedEntry, _ order: EntryOrder) -> Int {
        // The first chunk whose last entry does not precede `entry`.
        var low = 0
        var high = chunks.count
        while low < high {
            let mid = (low + high) / 2
            if let last = chunks[mid].last, order.precedes(last, entry) { low = mid + 1 } else { high = mid }
        }
        guard low < chunks.count else { return count }
        let part = chunks[low]
        var l = 0
        var h = part.count
        while l < h {
            let mid = (l + h) / 2
            if order.precedes(part[mid], entry) { l = mid + 1 } else { h = mid }
        }
        return (low == 0 ? 0 : ends[low - 1]) + l
    }

    /// Inserts `entry` in order and gives its position.
    @discardableResult
    mutating func insert(_ entry: ObservedEntry, _ order: EntryOrder) -> Int {
        let position = insertionPoint(of: entry, order)
        if chunks.isEmpty {
            chunks = [[entry]]
            ends = [1]
            return 0
        }
        let (chunk, offset) = position == count ? (chunks.count - 1, chunks[chunks.count - 1].count) : locate(position)
        chunks[chunk].insert(entry, at: offset)
        if chunks[chunk].count > Self.chunkLimit {
            let upper = Array(chunks[chunk][(Self.chunkLimit / 2)...])
            chunks[chunk].removeSubrange((Self.chunkLimit / 2)...)
            chunks.insert(upper, at: chunk + 1)
            rebuildEnds()
        } else {
            for index in chunk..<ends.count { ends[index] += 1 }
        }
        return position
    }

    /// Removes the entry equal to `entry` (same identifier, same keys), if there is one,
    /// and gives the position it had.
    @discardableResult
    mutating func remove(_ entry: ObservedEntry, _ order: EntryOrder) -> Int? {
        let position = insertionPoint(of: entry, order)
        guard position < count else { return nil }
        let (chunk, offset) = locate(position)
        guard chunks[chunk][offset].id == entry.id else { return nil }
        chunks[chunk].remove(at: offset)
        if chunks[chunk].isEmpty {
            chunks.remove(at: chunk)
            rebuildEnds()
        } else {
            for index in chunk..<ends.count { ends[index] -= 1 }
        }
        return position
    }

    private mutating func rebuildEnds() {
        ends = []
        ends.reserveCapacity(chunks.count)
        var total = 0
        for part in chunks {
            total += part.count
            ends.append(total)
        }
    }
}
