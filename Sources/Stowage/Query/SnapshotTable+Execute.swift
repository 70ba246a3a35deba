import BTree
import Foundation
import IndexKey

// The executor: runs a ``QueryPlan`` over one entity's records and indexes. Every read of
// a store goes through it (`SnapshotTable+Fetch.swift`); what it runs is what `explain`
// shows.
extension SnapshotTable {
    /// Runs a plan: reads candidates, tests the residual filter, sorts if the access did
    /// not give the order, and cuts the window, stopping early when it can.
    func run(_ query: FetchQuery, _ plan: QueryPlan, _ records: EntityRecords) throws -> [DefaultSnapshot] {
        if case .uniqueKey(let lookup, _) = plan.access {
            return try uniqueRecord(lookup, records, entity: query.entity.name).map { [$0] } ?? []
        }
        let needsSort = !plan.sort.isEmpty
        let stop = needsSort ? nil : plan.limit.map { $0 + plan.offset }
        var evaluator = QueryEvaluator(resolve: { try self.snapshot(for: $0) })
        let residual = plan.residual.map { CompiledPredicate($0, root: query.rootVariable) }
        // A record is tested with only the properties the filter reads, where the store can
        // decode part of it, and read whole if it matches.
        let columns = plan.residual.map { CompiledPredicate.columns($0, root: query.rootVariable) } ?? .all
        var matches: [DefaultSnapshot] = []
        var failure: (any Error)?
        let entityName = query.entity.name
        func consider(_ row: StoredRow, _ key: Int64) -> Bool {
            var snapshot: DefaultSnapshot
            var isWhole: Bool
            do {
                (snapshot, isWhole) = try resolve(row, entity: entityName, key: key, columns: columns)
            } catch {
                failure = error
                return false
            }
            if let residual {
                do {
                    guard try residual.matches(snapshot, &evaluator) else { return true }
                    if !isWhole { snapshot = try resolve(row, entity: entityName, key: key) }
                } catch {
                    failure = error
                    return false
                }
            }
            matches.append(snapshot)
            return stop.map { matches.count < $0 } ?? true
        }
        if stop == 0 { return [] }
        switch plan.access {
        case .fullScan:
            for (key, row) in records.rows where !consider(row, key) { break }
        case .identifiers(let ids):
            for id in ids where id.entityName == query.entity.name && id.storeIdentifier == storeIdentifier {
                if let key = id.primaryKey, let row = records.rows.value(forKey: key), !consider(row, key) { break }
            }
        case .indexScan(let index, let lower, let upper, let reverse, let text):
            if text.isExactUniqueLookup, let lower {
                // Every column of a unique index is fixed: one lookup, no scan.
                if let pk = records.indexes[index].tree.value(forKey: lower.key),
                    let row = records.rows.value(forKey: pk)
                {
                    _ = consider(row, pk)
                }
                break
            }
            forEachEntry(records.indexes[index], lower, upper, reverse: reverse) { _, pk in
                guard let row = records.rows.value(forKey: pk) else { return true }
                return consider(row, pk)
            }
        case .uniqueKey:
            break  // answered above, without a filter or a sort
        case .union(let parts):
            var seen: Set<Int64> = []
            var keys: [Int64] = []
            for part in parts {
                collectKeys(part, records, query.entity.name) { pk in
                    if seen.insert(pk).inserted { keys.append(pk) }
                }
            }
            for pk in keys.sorted() {
                if let row = records.rows.value(forKey: pk), !consider(row, pk) { break }
            }
        }
        if let failure { throw failure }
        if needsSort {
            // Ties keep primary-key (insertion) order, whichever order the access read them in.
            matches.sort { a, b in
                if query.areInIncreasingOrder(a, b) { return true }
                if query.areInIncreasingOrder(b, a) { return false }
                return (a.persistentIdentifier.primaryKey ?? 0) < (b.persistentIdentifier.primaryKey ?? 0)
            }
        }
        return windowed(matches, plan)
    }

    func collectKeys(
        _ access: QueryPlan.Access, _ records: EntityRecords, _ entityName: String, _ body: (Int64) -> Void
    ) {
        switch access {
        case .fullScan:
            for (pk, _) in records.rows { body(pk) }
        case .identifiers(let ids):
            for id in ids where id.entityName == entityName && id.storeIdentifier == storeIdentifier {
                if let pk = id.primaryKey { body(pk) }
            }
        case .indexScan(let index, let lower, let upper, _, _):
            forEachEntry(records.indexes[index], lower, upper, reverse: false) { _, pk in
                body(pk)
                return true
            }
        case .uniqueKey(let lookup, _):
            if let pk = records.indexes[lookup.index].tree.value(forKey: lookup.key) { body(pk) }
        case .union(let parts):
            for part in parts { collectKeys(part, records, entityName, body) }
        }
    }

    /// Visits the entries of `index` between the bounds until `body` returns `false`.
    ///
    /// Backwards, entries with equal indexed values are still visited in ascending
    /// primary-key order, so that ties come out as a stable sort would give them.
    func forEachEntry(
        _ index: EntityIndex, _ lower: QueryPlan.Bound?, _ upper: QueryPlan.Bound?, reverse: Bool,
        _ body: (IndexKey, Int64) -> Bool
    ) {
        let tree = index.tree
        var start = lower.map { $0.inclusive ? tree.lowerBound($0.key) : tree.upperBound($0.key) } ?? tree.startIndex
        var end = upper.map { $0.inclusive ? tree.upperBound($0.key) : tree.lowerBound($0.key) } ?? tree.endIndex
        if end < start { end = start }
        if !reverse {
            while start < end {
                let element = tree[start]
                if !body(element.key, element.value) { return }
                tree.formIndex(after: &start)
            }
            return
        }
        var group: [(IndexKey, Int64)] = []
        let suffix = index.isUnique ? 0 : 9
        while start < end {
            tree.formIndex(before: &end)
            let element = tree[end]
            if let first = group.first, !Self.sameTuple(first.0, element.key, suffix: suffix) {
                for (key, pk) in group.reversed() where !body(key, pk) { return }
                group.removeAll(keepingCapacity: true)
            }
            group.append((element.key, element.value))
        }
        for (key, pk) in group.reversed() where !body(key, pk) { return }
    }

    /// Whether two index entries hold the same indexed values: their keys without the
    /// `suffix` bytes of the primary key are equal.
    static func sameTuple(_ a: IndexKey, _ b: IndexKey, suffix: Int) -> Bool {
        guard a.count == b.count, a.count >= suffix else { return false }
        return a.sharedPrefixCount(with: b) >= a.count - suffix
    }

    /// The record a one-column unique index holds under `found.key`, found through the
    /// index's hint when it has one and the candidate holds that value, and through the
    /// tree otherwise.
    func uniqueRecord(_ found: QueryPlan.UniqueLookup, _ records: EntityRecords, entity: String) throws
        -> DefaultSnapshot?
    {
        // A hint's candidate may be stale, or another value's: it is only the answer if
        // its record, in this version of the table, holds the value. A candidate that
        // cannot be read is passed over. When no candidate holds the value, the tree
        // answers, and its record, if damaged, reports the damage.
        if let hint = found.hint,
            let snapshot = hint.firstMatch(
                for: found.key,
                { candidate -> DefaultSnapshot? in
                    guard let row = records.rows.value(forKey: candidate),
                        let snapshot = try? resolve(row, entity: entity, key: candidate),
                        found.column < snapshot.values.count,
                        Self.holds(snapshot.values[found.column], found.key)
                    else { return nil }
                    return snapshot
                })
        {
            return snapshot
        }
        guard let primaryKey = records.indexes[found.index].tree.value(forKey: found.key),
            let row = records.rows.value(forKey: primaryKey)
        else { return nil }
        return try resolve(row, entity: entity, key: primaryKey)
    }

    /// Whether `value` is stored under `key` in a one-column unique index: its encoding is
    /// `key`. The encodings are compared, not the values: two strings Swift calls equal may
    /// differ in their bytes, and so in the index. (`EntityIndex.tupleKey` does the same
    /// for a whole snapshot, but calling it on the index in the records' array copied the
    /// index on every fetch.)
    static func holds(_ value: SnapshotValue, _ key: IndexKey) -> Bool {
        var encoder = IndexKeyEncoder()
        EntityIndex.append(value, to: &encoder)
        return encoder.key == key
    }

    func window(_ total: Int, _ plan: QueryPlan) -> Int {
        let afterOffset = max(0, total - plan.offset)
        return plan.limit.map { Swift.min($0, afterOffset) } ?? afterOffset
    }

    func windowed<T>(_ items: [T], _ plan: QueryPlan) -> [T] {
        let start = Swift.min(plan.offset, items.count)
        let end = plan.limit.map { Swift.min(items.count, start + $0) } ?? items.count
        return start == 0 && end == items.count ? items : Array(items[start..<end])
    }
}
