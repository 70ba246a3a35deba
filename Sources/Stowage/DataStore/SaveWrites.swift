import Foundation

/// A save's writes (records inserted or replaced), in the order they apply, held column by
/// column: the keys, the snapshots and the insert flags in arrays of their own, and the
/// entity once for each run of writes to one entity.
///
/// A list of `(entity, key, snapshot, isInsert)` tuples took 56 bytes a write, 16 of them
/// the entity's name repeated in every one; this takes 33. And a save of new records to
/// one entity hands its key and snapshot arrays on as they are (``SnapshotTable``'s bulk
/// load of an import), where the tuples had to be copied out into arrays first. With the
/// log store's locations held as 8-byte values rather than rows (``StoredRows``), this
/// lowers the peak memory of a large import (see `Benchmarks/RESULTS.md`, "Measurements
/// behind the code").
package struct SaveWrites: RandomAccessCollection, ExpressibleByArrayLiteral, Sendable {
    package typealias Element = (entity: String, key: Int64, snapshot: DefaultSnapshot, isInsert: Bool)

    /// Each write's primary key.
    package private(set) var keys: [Int64] = []
    /// Each write's snapshot.
    package private(set) var snapshots: [DefaultSnapshot] = []
    /// Whether each write is an insert.
    private var inserts: [Bool] = []
    /// The runs of writes to one entity: the position each starts at, ascending, and the
    /// entity. Consecutive runs name different entities.
    package private(set) var runs: [(start: Int, entity: String)] = []

    package init() {}

    package init(arrayLiteral elements: Element...) {
        reserveCapacity(elements.count)
        for element in elements { append(element) }
    }

    package var startIndex: Int { 0 }
    package var endIndex: Int { keys.count }

    package subscript(position: Int) -> Element {
        (entity(at: position), keys[position], snapshots[position], inserts[position])
    }

    /// The entity of the write at `position`: found among the runs by binary search, the
    /// last run first (a save of one entity has one run).
    package func entity(at position: Int) -> String {
        precondition(position >= 0 && position < keys.count, "a write position out of range")
        return runs[run(containing: position)].entity
    }

    /// The index in `runs` of the run that holds `position`.
    private func run(containing position: Int) -> Int {
        if let last = runs.last, last.start <= position { return runs.count - 1 }
        var low = 0
        var high = runs.count - 1
        // The run holding `position` is the last one starting at or before it.
        while low < high {
            let mid = (low + high + 1) / 2
            if runs[mid].start <= position { low = mid } else { high = mid - 1 }
        }
        return low
    }

    /// Whether the write at `position` is an insert.
    package func isInsert(at position: Int) -> Bool { inserts[position] }

    package mutating func append(_ write: Element) {
        if runs.last?.entity != write.entity { runs.append((keys.count, write.entity)) }
        keys.append(write.key)
        snapshots.append(write.snapshot)
        inserts.append(write.isInsert)
    }

    package mutating func reserveCapacity(_ count: Int) {
        keys.reserveCapacity(count)
        snapshots.reserveCapacity(count)
        inserts.reserveCapacity(count)
    }

    package mutating func removeAll(keepingCapacity: Bool = false) {
        keys.removeAll(keepingCapacity: keepingCapacity)
        snapshots.removeAll(keepingCapacity: keepingCapacity)
        inserts.removeAll(keepingCapacity: keepingCapacity)
        runs.removeAll(keepingCapacity: keepingCapacity)
    }

    /// Replaces the snapshot of the write at `position`.
    mutating func setSnapshot(_ snapshot: DefaultSnapshot, at position: Int) {
        snapshots[position] = snapshot
    }

    /// The writes, one run of one entity at a time, each with its positions.
    var entityRuns: [(entity: String, positions: Range<Int>)] {
        runs.indices.map { i in
            (runs[i].entity, runs[i].start..<(i + 1 < runs.count ? runs[i + 1].start : keys.count))
        }
    }

    /// Walks the runs in order instead of searching them for every write.
    package struct Iterator: IteratorProtocol {
        private let writes: SaveWrites
        private var position = 0
        private var run = 0
        private var runEnd: Int

        package init(_ writes: SaveWrites) {
            self.writes = writes
            runEnd = writes.runs.count > 1 ? writes.runs[1].start : writes.keys.count
        }

        package mutating func next() -> Element? {
            guard position < writes.keys.count else { return nil }
            while position >= runEnd {
                run += 1
                runEnd = run + 1 < writes.runs.count ? writes.runs[run + 1].start : writes.keys.count
            }
            defer { position += 1 }
            return (
                writes.runs[run].entity, writes.keys[position], writes.snapshots[position], writes.inserts[position]
            )
        }
    }

    package func makeIterator() -> Iterator { Iterator(self) }
}
