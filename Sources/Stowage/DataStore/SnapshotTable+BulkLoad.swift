import BTree
import Foundation
import IndexKey

extension SnapshotTable {
    /// One entity's records in ascending key order, as parallel arrays: what a bulk load
    /// builds the entity's directory and indexes from.
    package struct SortedRecords {
        package var keys: [Int64] = []
        package var snapshots: [DefaultSnapshot] = []
        /// Where each record is, parallel to `keys`, for a table that holds its rows by
        /// location; empty otherwise.
        package var locations: [RowLocation] = []

        package init(keys: [Int64] = [], snapshots: [DefaultSnapshot] = [], locations: [RowLocation] = []) {
            self.keys = keys
            self.snapshots = snapshots
            self.locations = locations
        }
    }

    /// One index's entries in ascending key order, as parallel arrays: sorted entries a
    /// store kept (the log's checkpoints), which a bulk load takes instead of computing them.
    package struct SortedEntries: Equatable {
        package var keys: [IndexKey] = []
        package var primaryKeys: [Int64] = []

        package init(keys: [IndexKey] = [], primaryKeys: [Int64] = []) {
            self.keys = keys
            self.primaryKeys = primaryKeys
        }
    }

    /// Fills empty entities' primary-key directories and indexes from `live` records.
    mutating func bulkLoad(_ live: [String: [Int64: DefaultSnapshot]]) {
        bulkLoad(
            sorted: live.mapValues { byKey in
                let sorted = byKey.sorted { $0.key < $1.key }
                return SortedRecords(keys: sorted.map(\.key), snapshots: sorted.map(\.value), locations: [])
            })
    }

    /// Fills empty entities' primary-key directories and indexes from live records in ascending
    /// key order, by bulk loading sorted entries. The indexes of an entity are built on
    /// separate threads. Records of an entity the schema lacks are skipped (the decoder
    /// maps entities by the stored schema, which matches this one). An entity's indexes
    /// come from `indexEntries` when it has them (sorted entries, one per record, from a
    /// checkpoint), instead of being computed from the records and sorted.
    mutating func bulkLoad(
        sorted live: [String: SortedRecords], indexEntries: [String: [SortedEntries]] = [:]
    ) {
        for (name, sorted) in live where !sorted.keys.isEmpty {
            guard var records = entities.removeValue(forKey: name) else { continue }
            let indexes = records.indexes
            let built = SendableBox(
                (
                    rows: RowDirectory(),
                    trees: [BTree<IndexKey, Int64>?](repeating: nil, count: indexes.count)
                ))
            // Task 0 builds the primary-key directory, task i + 1 index i.
            DispatchQueue.concurrentPerform(iterations: indexes.count + 1) { task in
                if task == 0 {
                    let tree =
                        sorted.locations.count == sorted.keys.count
                        ? RowDirectory(
                            sortedElements: zip(sorted.keys, sorted.locations.lazy.map { .location($0) }))
                        : RowDirectory(
                            sortedElements: zip(sorted.keys, sorted.snapshots.lazy.map { .snapshot($0) }))
                    built.withLock { $0.rows = tree }
                    return
                }
                if let entries = indexEntries[name], entries.count == indexes.count {
                    let stored = entries[task - 1]
                    let tree = BTree(sortedKeys: stored.keys, values: stored.primaryKeys)
                    built.withLock { $0.trees[task - 1] = tree }
                    return
                }
                let index = indexes[task - 1]
                // No array of the keys is kept beside the tree (40 bytes a record, with two
                // indexes building at once): they are sorted by their first bytes, and each
                // goes straight to its place in the tree's leaves, made in the order the
                // records are held.
                func key(_ position: Int) -> IndexKey {
                    index.entryKey(sorted.snapshots[position], primaryKey: sorted.keys[position])
                }
                let count = sorted.keys.count
                var rank = [Int](repeating: 0, count: count)
                for (position, record) in SnapshotTable.sortedOrder(count: count, key: key).enumerated() {
                    rank[record] = position
                }
                let tree =
                    BTree.byRank(count: count, placeholder: (IndexKey(), 0)) { put in
                        for position in 0..<count { put(rank[position], key(position), sorted.keys[position]) }
                    }
                    // Equal keys (none are expected): the last of them is kept, as saves would.
                    ?? BTree(sortedElements: (0..<count).lazy.map { (key($0), sorted.keys[$0]) })
                built.withLock { $0.trees[task - 1] = tree }
            }
            built.withLock { result in
                records.rows = result.rows
                for i in indexes.indices {
                    guard let tree = result.trees[i] else { continue }
                    records.indexes[i].tree = tree
                    records.indexes[i].hint = nil
                }
            }
            // The hints are built once the trees are, when the builds' sort orders and
            // ranks have been freed. Built inside the tasks, beside the other trees'
            // builds, a hint raised the peak memory by much more than its size; built
            // here, by about its size (see `Benchmarks/RESULTS.md`, "Measurements behind
            // the code").
            for i in records.indexes.indices { records.indexes[i].refreshHint() }
            entities[name] = records
        }
    }
}

extension SnapshotTable {
    /// The positions of `keys` in ascending key order (stable). Index keys are distinct (a
    /// non-unique index appends the primary key); should two be equal, the tree's own
    /// stable sort keeps the later one, as applying saves would.
    static func sortedOrder(of keys: [IndexKey]) -> [Int] {
        sortedOrder(count: keys.count) { keys[$0] }
    }

    /// The positions `0..<count` in ascending order of the keys `key` makes for them
    /// (stable), holding no array of the keys: each is made twice, in position order, and a
    /// third time, out of order, only if its first 16 bytes past the common prefix are
    /// another key's too.
    static func sortedOrder(count: Int, key: (Int) -> IndexKey) -> [Int] {
        guard count > 1 else { return Array(0..<count) }
        // The least and the greatest key share the prefix that every key shares.
        var least = key(0)
        var greatest = least
        var previous = least
        var ascending = true
        for position in 1..<count {
            let next = key(position)
            if next < previous { ascending = false }
            if next < least { least = next } else if greatest < next { greatest = next }
            previous = next
        }
        if ascending { return Array(0..<count) }
        // Most comparisons are settled by 16 bytes after the prefix every key shares (a
        // type tag, a common word), read as two big-endian integers and sorted beside the
        // position; only ties compare the keys. Eight bytes left whole runs tied, such as
        // every key of one value of a string index, whose primary keys come after them:
        // resolving those made their keys again in no order, a cache miss each.
        let shared = least.sharedPrefixCount(with: greatest)
        var entries: [SortEntry] = []
        entries.reserveCapacity(count)
        for position in 0..<count {
            let (high, low) = key(position).withUnsafeBytes { bytes in
                var words: (UInt64, UInt64) = (0, 0)
                for i in shared..<shared + 8 { words.0 = words.0 << 8 | UInt64(i < bytes.count ? bytes[i] : 0) }
                for i in shared + 8..<shared + 16 { words.1 = words.1 << 8 | UInt64(i < bytes.count ? bytes[i] : 0) }
                return words
            }
            entries.append(SortEntry(high: high, low: low, index: position))
        }
        radixSort(&entries)
        // Runs of one first word (stable, so in position order) are put in order by the
        // second; runs of both keep their positions' order, and only they need the keys.
        var first = 0
        while first < entries.count {
            var end = first + 1
            while end < entries.count, entries[end].high == entries[first].high { end += 1 }
            if end - first > 1 {
                entries[first..<end].sort { $0.low < $1.low || ($0.low == $1.low && $0.index < $1.index) }
            }
            first = end
        }
        var start = 0
        while start < entries.count {
            var end = start + 1
            while end < entries.count, entries[end].high == entries[start].high, entries[end].low == entries[start].low
            {
                end += 1
            }
            if end - start > 1 {
                var run = entries[start..<end].map { (key: key($0.index), entry: $0) }
                run.sort { x, y in
                    let order = IndexKey.compare(x.key, y.key)
                    return order < 0 || (order == 0 && x.entry.index < y.entry.index)
                }
                for (offset, element) in run.enumerated() { entries[start + offset] = element.entry }
            }
            start = end
        }
        return entries.map(\.index)
    }

    /// A position and the 16 bytes of its key that the sort compares first.
    struct SortEntry {
        var high: UInt64
        var low: UInt64
        var index: Int
    }

    /// Sorts by `high`, stably, a byte at a time from the lowest (least-significant-digit
    /// radix sort): eight passes over the entries at most, each skipped when every entry
    /// has the same byte there. Linear, where a comparison sort of a million keys took
    /// twenty passes with a closure call per comparison.
    static func radixSort(_ entries: inout [SortEntry]) {
        let count = entries.count
        guard count > 1 else { return }
        var other = entries
        var counts = [Int](repeating: 0, count: 256)
        for byte in 0..<8 {
            let shift = UInt64(byte * 8)
            for i in 0..<256 { counts[i] = 0 }
            for entry in entries { counts[Int((entry.high >> shift) & 0xFF)] += 1 }
            if counts.contains(count) { continue }
            var total = 0
            for i in 0..<256 {
                let c = counts[i]
                counts[i] = total
                total += c
            }
            for entry in entries {
                let bucket = Int((entry.high >> shift) & 0xFF)
                other[counts[bucket]] = entry
                counts[bucket] += 1
            }
            swap(&entries, &other)
        }
    }
}

/// A value behind a lock, for the bulk loader's worker threads.
private final class SendableBox<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<R>(_ body: (inout Value) -> R) -> R {
        lock.lock()
        defer { lock.unlock() }
        return body(&value)
    }
}
