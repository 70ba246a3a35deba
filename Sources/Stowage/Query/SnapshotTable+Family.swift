import Foundation

// Model inheritance on the tables: a fetch of an entity with subentities reads each
// entity's own records and merges them. A subentity's records hold the base's properties
// first, at the same positions, so one compiled predicate and sort serve every table, and
// each table's own indexes (a subentity inherits the base's `#Index` and `#Unique`) serve
// its part.
extension SnapshotTable {
    /// The records of every entity `query` reads, merged in its order, after offset and
    /// limit. Each table is asked for at most offset + limit records in that order, so a
    /// limited, sorted fetch reads no more of a table than a fetch of that table would.
    func fetchFamily(_ query: FetchQuery) throws -> [DefaultSnapshot] {
        var parts: [[DefaultSnapshot]] = []
        for entity in query.entities {
            var part = query.narrowed(to: entity)
            part.offset = 0
            part.limit = query.limit.map { $0 + query.offset }
            parts.append(try fetch(part))
        }
        return Self.merged(parts, query)
    }

    /// Each entity's part in `query`'s order, merged: by the sort, and on a tie, or
    /// without one, the entities in the query's order and each one's records in theirs.
    static func merged(_ parts: [[DefaultSnapshot]], _ query: FetchQuery) -> [DefaultSnapshot] {
        var all: [DefaultSnapshot]
        if query.sort.isEmpty {
            all = parts.flatMap { $0 }
        } else {
            var tagged: [(part: Int, position: Int, snapshot: DefaultSnapshot)] = []
            tagged.reserveCapacity(parts.reduce(0) { $0 + $1.count })
            for (part, snapshots) in parts.enumerated() {
                for (position, snapshot) in snapshots.enumerated() { tagged.append((part, position, snapshot)) }
            }
            tagged.sort { a, b in
                if query.areInIncreasingOrder(a.snapshot, b.snapshot) { return true }
                if query.areInIncreasingOrder(b.snapshot, a.snapshot) { return false }
                return (a.part, a.position) < (b.part, b.position)
            }
            all = tagged.map(\.snapshot)
        }
        let start = Swift.min(query.offset, all.count)
        let end = query.limit.map { Swift.min(all.count, start + $0) } ?? all.count
        return start == 0 && end == all.count ? all : Array(all[start..<end])
    }

    /// How many records of every entity `query` reads match it.
    func countFamily(_ query: FetchQuery) throws -> Int {
        var total = 0
        for entity in query.entities {
            var part = query.narrowed(to: entity)
            part.offset = 0
            part.limit = nil
            total += try count(part)
        }
        let afterOffset = Swift.max(0, total - query.offset)
        return query.limit.map { Swift.min($0, afterOffset) } ?? afterOffset
    }

    /// The plan of each entity's part, joined: what `explain` shows for a fetch of an
    /// entity with subentities.
    func familyPlanDescription(_ query: FetchQuery) -> String {
        query.entities.map { plan(query.narrowed(to: $0)).description }.joined(separator: " UNION ALL ")
    }
}
