import BTree
import Foundation
import IndexKey

/// The in-memory state every store keeps: records by entity in a primary-key directory,
/// one B+tree per index, and the code that plans and evaluates fetches and applies saves.
///
/// It is a value: a store holds one behind a lock, applies a save to it only after the
/// whole save has been validated, and so never shows half a save.
public struct SnapshotTable: Sendable {
    /// One entity's records and indexes.
    struct EntityRecords: Sendable {
        /// The identifier index: primary key to the record, or to where it is stored.
        var rows = RowDirectory()
        /// Every index of the entity: uniqueness constraints first, then `#Index` entries.
        var indexes: [EntityIndex] = []
        /// For each uniqueness constraint, the position of its index.
        var uniqueIndex: [Int] = []
    }

    /// The schema the records follow.
    public let schema: Schema
    /// The store identifier written into permanent identifiers.
    public let storeIdentifier: String
    var entities: [String: EntityRecords] = [:]
    /// Each entity's scope of permanent identifiers in this store.
    let scopes: [String: IdentifierScope]
    /// The next primary key to hand out.
    public internal(set) var nextPrimaryKey: Int64 = 1
    /// Reads back the rows held by location; `nil` when every row holds its snapshot.
    var source: (any SnapshotSource)?

    public init(schema: Schema, storeIdentifier: String) {
        self.schema = schema
        var scopes: [String: IdentifierScope] = [:]
        for entity in schema.entities {
            scopes[entity.name] = .interned(
                entityName: entity.name, storeIdentifier: storeIdentifier, isTemporary: false)
        }
        self.scopes = scopes
        // The interned scope's copy of the string, so that comparing an identifier's store
        // with this one finds the same buffer and skips comparing bytes.
        self.storeIdentifier = scopes.values.first?.storeIdentifier ?? storeIdentifier
        for entity in schema.entities {
            var records = EntityRecords()
            for names in entity.uniquenessConstraints {
                records.uniqueIndex.append(records.indexes.count)
                records.indexes.append(EntityIndex(entity: entity, columns: names, isUnique: true))
            }
            for names in entity.indices where !entity.uniquenessConstraints.contains(names) {
                records.indexes.append(EntityIndex(entity: entity, columns: names, isUnique: false))
            }
            entities[entity.name] = records
        }
    }

    /// The number of records of every entity.
    public var count: Int { entities.values.reduce(0) { $0 + $1.rows.count } }

    /// The uniqueness constraints that records built into the table without checks (a
    /// bulk load) break, by entity name in order: a unique index keeps one entry for
    /// records with equal values, so it has `surplus` fewer entries than the entity has
    /// records.
    func brokenUniqueness() -> [(entity: String, constraint: [String], index: Int, surplus: Int)] {
        var broken: [(entity: String, constraint: [String], index: Int, surplus: Int)] = []
        for (name, records) in entities.sorted(by: { $0.key < $1.key }) {
            let constraints = schema.entitiesByName[name]?.uniquenessConstraints ?? []
            for (constraint, position) in records.uniqueIndex.enumerated()
            where constraint < constraints.count && records.indexes[position].tree.count != records.rows.count {
                broken.append(
                    (name, constraints[constraint], position, records.rows.count - records.indexes[position].tree.count)
                )
            }
        }
        return broken
    }

    /// Every record of `entityName`, in primary-key order.
    /// - Throws: when a record held by location cannot be read back.
    public func allSnapshots(of entityName: String) throws -> [DefaultSnapshot] {
        var result: [DefaultSnapshot] = []
        try forEachRecord(of: entityName) { result.append($0) }
        return result
    }

    /// Calls `body` with every record of `entityName`, in primary-key order, reading one
    /// at a time: a table whose rows are held by location is never read whole.
    func forEachRecord(of entityName: String, _ body: (DefaultSnapshot) throws -> Void) throws {
        guard let records = entities[entityName] else { return }
        for (key, row) in records.rows { try body(try resolve(row, entity: entityName, key: key)) }
    }

    /// The record for an identifier, if it exists.
    /// - Complexity: O(log *n*), plus a read when the record is held by location.
    public func snapshot(for id: PersistentIdentifier) throws -> DefaultSnapshot? {
        guard let key = id.primaryKey, id.storeIdentifier == storeIdentifier else { return nil }
        return try stored(id.entityName, key)
    }

    /// The records for a set of identifiers; missing ones are left out.
    /// - Complexity: O(*k* log *n*) for *k* identifiers.
    public func snapshots(for identifiers: [PersistentIdentifier]) throws -> [PersistentIdentifier: DefaultSnapshot] {
        var result: [PersistentIdentifier: DefaultSnapshot] = [:]
        result.reserveCapacity(identifiers.count)
        for id in identifiers {
            if let snapshot = try snapshot(for: id) { result[id] = snapshot }
        }
        return result
    }

    /// The records for identifiers, in their order: `nil` where one is missing. Unlike
    /// ``snapshots(for:)`` it builds no dictionary, for reading a batch in order.
    func snapshotsInOrder(for identifiers: [PersistentIdentifier]) throws -> [DefaultSnapshot?] {
        var result: [DefaultSnapshot?] = []
        result.reserveCapacity(identifiers.count)
        // Identifiers come in runs of one entity: each run's records are looked up once,
        // and its entity name and store are compared once, by the identifiers' scope (a
        // scope names one entity in one store): reading them from every identifier copied
        // two strings a row.
        var lastScope: ObjectIdentifier?
        var inThisStore = false
        var name = ""
        var records: EntityRecords?
        // Rows held by location are read from the source a run of one entity at a time.
        var pending = PendingReads()
        if source != nil, identifiers.count > 1 { pending.reserveCapacity(identifiers.count) }
        for id in identifiers {
            let scope = ObjectIdentifier(id.scope)
            if scope != lastScope {
                try readPending(&pending, entity: name, into: &result)
                lastScope = scope
                inThisStore = id.storeIdentifier == storeIdentifier
                name = id.entityName
                records = nil
            }
            guard inThisStore, let key = id.primaryKey else {
                result.append(nil)
                continue
            }
            if identifiers.count == 1 {
                // One identifier (a model loaded by identifier): its row is read in place,
                // without copying the entity's records out of the dictionary.
                guard let position = entities.index(forKey: name),
                    let row = entities.values[position].rows.value(forKey: key)
                else {
                    result.append(nil)
                    continue
                }
                result.append(try resolve(row, entity: name, key: key))
                continue
            }
            if records == nil { records = entities[name] }
            guard let row = records?.rows.value(forKey: key) else {
                result.append(nil)
                continue
            }
            if case .location(let location) = row, source != nil {
                pending.positions.append(result.count)
                pending.keys.append(key)
                pending.locations.append(location)
                result.append(nil)
            } else {
                result.append(try resolve(row, entity: name, key: key))
            }
        }
        try readPending(&pending, entity: name, into: &result)
        return result
    }

    /// Rows of one entity that `snapshotsInOrder` reads from the source together: where
    /// each goes in the result, its key and its location.
    struct PendingReads {
        var positions: [Int] = []
        var keys: [Int64] = []
        var locations: [RowLocation] = []

        mutating func reserveCapacity(_ count: Int) {
            positions.reserveCapacity(count)
            keys.reserveCapacity(count)
            locations.reserveCapacity(count)
        }
    }

    /// Reads `pending`'s records into `result`: those the source hands over at once, then
    /// each other one on its own. Leaves `pending` empty.
    private func readPending(_ pending: inout PendingReads, entity: String, into result: inout [DefaultSnapshot?])
        throws
    {
        guard !pending.positions.isEmpty, let source else { return }
        source.cachedSnapshots(
            entity: entity, keys: pending.keys, at: pending.locations, positions: pending.positions, into: &result)
        for i in pending.positions.indices where result[pending.positions[i]] == nil {
            result[pending.positions[i]] = try source.snapshot(
                entity: entity, key: pending.keys[i], at: pending.locations[i])
        }
        pending.positions.removeAll(keepingCapacity: true)
        pending.keys.removeAll(keepingCapacity: true)
        pending.locations.removeAll(keepingCapacity: true)
    }

    // MARK: Planning and fetching

    /// The plan the table would use for `query`.
    public func plan(_ query: FetchQuery) -> QueryPlan {
        if let ids = query.identifiers {
            return QueryPlan(
                entityName: query.entity.name, access: .identifiers(ids.sorted()), residual: query.predicate,
                sort: query.sort, orderedByIndex: false, offset: query.offset, limit: query.limit)
        }
        return QueryPlanner(query: query, indexes: entities[query.entity.name]?.indexes ?? []).plan()
    }

    /// For a query that is one equality on a property with a one-column unique index, the
    /// primary key it finds (`.some(nil)` when none); `nil` when the query is not of that
    /// shape. This is the plan the planner would choose, taken without building it.
    func uniqueLookup(_ query: FetchQuery, _ records: EntityRecords) -> Int64?? {
        guard let found = uniqueKey(query, records) else { return nil }
        return .some(records.indexes[found.index].tree.value(forKey: found.key))
    }

    /// What ``uniqueKey(_:_:)`` finds: the index, its column, the value's encoded key and
    /// the index's hint.
    struct UniqueKey {
        let index: Int
        let column: Int
        let key: IndexKey
        let hint: UniqueKeyHint?
    }

    /// For a query that is one equality on a property with a one-column unique index, that
    /// index and the value's encoded key; `nil` for any other query.
    func uniqueKey(_ query: FetchQuery, _ records: EntityRecords) -> UniqueKey? {
        guard query.identifiers == nil, query.offset == 0, query.limit != 0,
            case .compare(.equal, let l, let r)? = query.predicate
        else { return nil }
        let column: Int
        let value: SnapshotValue
        if let c = CompiledPredicate.rootProperty(l, query.rootVariable), case .constant(let v) = r {
            (column, value) = (c, v)
        } else if let c = CompiledPredicate.rootProperty(r, query.rootVariable), case .constant(let v) = l {
            (column, value) = (c, v)
        } else {
            return nil
        }
        // Each index is read where it lies; a `for index in` loop copied each one.
        let indexes = records.indexes
        for i in indexes.indices
        where indexes[i].isUnique && indexes[i].columns.count == 1 && indexes[i].columns[0] == column {
            guard let coerced = indexes[i].coerce(value, column: 0) else { return nil }
            var encoder = IndexKeyEncoder()
            EntityIndex.append(coerced, to: &encoder)
            return UniqueKey(index: i, column: column, key: encoder.key, hint: indexes[i].hint)
        }
        return nil
    }

    /// The record a one-column unique index holds under `found.key`, found through the
    /// index's hint when it has one and the candidate holds that value, and through the
    /// tree otherwise.
    func uniqueRecord(_ found: UniqueKey, _ records: EntityRecords, entity: String) throws -> DefaultSnapshot? {
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
    /// index: about 700 instructions a fetch in callgrind.)
    static func holds(_ value: SnapshotValue, _ key: IndexKey) -> Bool {
        var encoder = IndexKeyEncoder()
        EntityIndex.append(value, to: &encoder)
        return encoder.key == key
    }

    /// The records that match `query`, sorted, after offset and limit.
    /// - Complexity: O(log *n* + *k*) for an index that answers the query and *k* entries
    ///   read; O(*n*) for a full scan, plus O(*m* log *m*) to sort *m* matches when no
    ///   index gives the order.
    public func fetch(_ query: FetchQuery) throws -> [DefaultSnapshot] {
        // The entity's records are found once and taken out of the dictionary once: each
        // `entities.values[position]` copies them (a retain of each of their parts).
        if let position = entities.index(forKey: query.entity.name) {
            let records = entities.values[position]
            if let found = uniqueKey(query, records) {
                return try uniqueRecord(found, records, entity: query.entity.name).map { [$0] } ?? []
            }
        }
        return try run(query, plan(query))
    }

    /// How many records match `query`. When an index answers it exactly, no snapshot is read.
    public func count(_ query: FetchQuery) throws -> Int {
        let plan = plan(query)
        guard let records = entities[query.entity.name] else { throw unknown(query.entity.name) }
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
            for (key, row) in records.rows
            where try compiled.matches(
                try resolve(row, entity: query.entity.name, key: key, columns: columns).snapshot, &evaluator)
            {
                total += 1
            }
            return window(total, plan)
        }
        var unwindowed = query
        unwindowed.limit = nil
        unwindowed.offset = 0
        return window(try fetch(unwindowed).count, plan)
    }

    /// The identifiers of the records that match `query`, in its order.
    public func identifiers(_ query: FetchQuery) throws -> [PersistentIdentifier] {
        guard let records = entities[query.entity.name] else { throw unknown(query.entity.name) }
        if let found = uniqueLookup(query, records) {
            return found.map { [identifier(query.entity.name, $0)] } ?? []
        }
        let plan = plan(query)
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
        return try run(query, plan).map(\.persistentIdentifier)
    }

    func unknown(_ name: String) -> SwiftDataError {
        SwiftDataError(.unknownModelType, "\(name) is not in the store's schema")
    }

    func identifier(_ entityName: String, _ key: Int64) -> PersistentIdentifier {
        .permanent(in: scope(entityName), primaryKey: key)
    }

    /// The scope of `entityName`'s permanent identifiers in this store.
    func scope(_ entityName: String) -> IdentifierScope {
        scopes[entityName] ?? .interned(entityName: entityName, storeIdentifier: storeIdentifier, isTemporary: false)
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

    /// Runs a plan: reads candidates, tests the residual filter, sorts if the access did
    /// not give the order, and cuts the window, stopping early when it can.
    func run(_ query: FetchQuery, _ plan: QueryPlan) throws -> [DefaultSnapshot] {
        guard let records = entities[query.entity.name] else { throw unknown(query.entity.name) }
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
}
