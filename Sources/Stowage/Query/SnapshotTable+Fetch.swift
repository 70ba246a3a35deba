import BTree
import Foundation
import IndexKey

// The query entry points every store's reads come to (`SnapshotTableStore`): each plans
// the fetch with ``QueryPlanner`` and runs the plan (`SnapshotTable+Execute.swift`).
extension SnapshotTable {
    /// The plan the table would use for `query`: what `explain` shows, and what the fetch
    /// runs.
    public func plan(_ query: FetchQuery) -> QueryPlan {
        QueryPlanner(query: query, indexes: entities[query.entity.name]?.indexes ?? []).plan()
    }

    /// The records that match `query`, sorted, after offset and limit.
    /// - Complexity: O(log *n* + *k*) for an index that answers the query and *k* entries
    ///   read; O(*n*) for a full scan, plus O(*m* log *m*) to sort *m* matches when no
    ///   index gives the order.
    /// - Throws: ``SwiftDataError`` `.unknownModelType`; a store's error when a record
    ///   held by location cannot be read back.
    public func fetch(_ query: FetchQuery) throws -> [DefaultSnapshot] {
        if query.spansSubentities { return try fetchFamily(query) }
        // The entity's records are found once and taken out of the dictionary once: each
        // `entities.values[position]` copies them (a retain of each of their parts).
        guard let position = entities.index(forKey: query.entity.name) else { throw unknown(query.entity.name) }
        let records = entities.values[position]
        // The planner's first rule, run before the rest of a plan is built: a fetch by one
        // unique value is the most common fetch there is.
        if let lookup = QueryPlanner.uniqueLookup(query, records.indexes) {
            return try uniqueRecord(lookup, records, entity: query.entity.name).map { [$0] } ?? []
        }
        return try run(query, QueryPlanner(query: query, indexes: records.indexes).plan(), records)
    }

    /// How many records match `query`. When an index answers it exactly, no snapshot is read.
    /// - Complexity: O(log *n* + *k*) for an exact index scan of *k* entries; O(*n*) for a
    ///   filter over every record.
    public func count(_ query: FetchQuery) throws -> Int {
        if query.spansSubentities { return try countFamily(query) }
        guard let records = entities[query.entity.name] else { throw unknown(query.entity.name) }
        if let lookup = QueryPlanner.uniqueLookup(query, records.indexes) {
            let found = records.indexes[lookup.index].tree.value(forKey: lookup.key) != nil
            return found ? 1 : 0
        }
        let plan = QueryPlanner(query: query, indexes: records.indexes).plan()
        if plan.residual == nil, case .indexScan(let index, let lower, let upper, _, _) = plan.access {
            var total = 0
            forEachEntry(records.indexes[index], lower, upper, reverse: false) { _, _ in
                total += 1
                return true
            }
            return window(total, plan)
        }
        if plan.residual == nil, case .fullScan = plan.access {
            return window(records.rows.count, plan)
        }
        if plan.sort.isEmpty, case .fullScan = plan.access, let residual = plan.residual {
            let compiled = CompiledPredicate(residual, root: query.rootVariable)
            // Only the properties the predicate reads are decoded, where the store can.
            let columns = CompiledPredicate.columns(residual, root: query.rootVariable)
            var evaluator = QueryEvaluator(resolve: { try self.snapshot(for: $0) })
            var total = 0
            guard let source else {
                for (key, row) in records.rows
                where try compiled.matches(
                    try resolve(row, entity: query.entity.name, key: key, columns: columns).snapshot, &evaluator)
                {
                    total += 1
                }
                return window(total, plan)
            }
            // Rows held by location go to the source in runs, which it may read a block at a time.
            var keys: [Int64] = []
            var locations: [RowLocation] = []
            keys.reserveCapacity(Self.sourceRunLength)
            locations.reserveCapacity(Self.sourceRunLength)
            func readRun() throws {
                try source.forEachSnapshot(entity: query.entity.name, keys: keys, at: locations, columns: columns) {
                    _, snapshot, _ in
                    if try compiled.matches(snapshot, &evaluator) { total += 1 }
                }
                keys.removeAll(keepingCapacity: true)
                locations.removeAll(keepingCapacity: true)
            }
            for (key, row) in records.rows {
                switch row {
                case .snapshot(let snapshot):
                    if try compiled.matches(snapshot, &evaluator) { total += 1 }
                case .location(let location):
                    keys.append(key)
                    locations.append(location)
                    if keys.count == Self.sourceRunLength { try readRun() }
                }
            }
            try readRun()
            return window(total, plan)
        }
        var unwindowed = query
        unwindowed.limit = nil
        unwindowed.offset = 0
        return window(try fetch(unwindowed).count, plan)
    }

    /// The most rows held by location handed to the source at once, by a count.
    static let sourceRunLength = 512

    /// The identifiers of the records that match `query`, in its order.
    /// - Complexity: as ``fetch(_:)``, without reading a record when an index answers exactly.
    public func identifiers(_ query: FetchQuery) throws -> [PersistentIdentifier] {
        if query.spansSubentities { return try fetchFamily(query).map(\.persistentIdentifier) }
        guard let records = entities[query.entity.name] else { throw unknown(query.entity.name) }
        if let lookup = QueryPlanner.uniqueLookup(query, records.indexes) {
            let found = records.indexes[lookup.index].tree.value(forKey: lookup.key)
            return found.map { [identifier(query.entity.name, $0)] } ?? []
        }
        let plan = QueryPlanner(query: query, indexes: records.indexes).plan()
        if plan.residual == nil, plan.sort.isEmpty,
            case .indexScan(let index, let lower, let upper, let reverse, _) = plan.access
        {
            var keys: [Int64] = []
            let stop = plan.limit.map { $0 + plan.offset }
            forEachEntry(records.indexes[index], lower, upper, reverse: reverse) { _, pk in
                keys.append(pk)
                return stop.map { keys.count < $0 } ?? true
            }
            let scope = scope(query.entity.name)
            return windowed(keys, plan).map { .permanent(in: scope, primaryKey: $0) }
        }
        if plan.residual == nil, plan.sort.isEmpty, case .fullScan = plan.access {
            // Every record in key order: the keys alone, without copying a snapshot.
            var keys: [Int64] = []
            keys.reserveCapacity(records.rows.count)
            for (key, _) in records.rows { keys.append(key) }
            let scope = scope(query.entity.name)
            return windowed(keys, plan).map { .permanent(in: scope, primaryKey: $0) }
        }
        return try run(query, plan, records).map(\.persistentIdentifier)
    }

    /// For a query the planner answers with one look-up in a one-column unique index, the
    /// primary key the index's tree holds for it (`.some(nil)` when none); `nil` when the
    /// query is planned otherwise. The tree's answer, without the index's hash table.
    func uniqueLookup(_ query: FetchQuery, _ records: EntityRecords) -> Int64?? {
        guard let lookup = QueryPlanner.uniqueLookup(query, records.indexes) else { return nil }
        return .some(records.indexes[lookup.index].tree.value(forKey: lookup.key))
    }
}
