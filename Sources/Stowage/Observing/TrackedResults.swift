import Foundation

/// What a ``ResultsObserver`` keeps between saves: the compiled query, the members of the
/// result with their sort keys, and their order.
struct TrackedResults: @unchecked Sendable {
    // `@unchecked`: a compiled query holds closures over constant values (casts, key path
    // appliers) that it never changes; the rest are values.
    let query: FetchQuery
    let order: EntryOrder
    /// The entities whose records can be in the result (the fetched entity's family).
    let entityNames: Set<String>
    /// Whether the descriptor has a window, which a save can shift: fetched again whole.
    let windowed: Bool
    /// Whether the predicate reads models other than the one it tests (through a
    /// relationship), so that a save of any model can change which match: fetched again
    /// whole.
    let readsOtherModels: Bool
    private(set) var entries: OrderedEntries
    /// The values each member is tracked by, by identifier: its sort keys, then the values
    /// of the ``aggregated`` properties.
    private(set) var members: [PersistentIdentifier: [SnapshotValue]]
    /// The positions of the properties whose sums are kept.
    let aggregated: [Int]
    /// The sum of each of ``aggregated`` over the members.
    private(set) var sums: [SumAccumulator]

    /// Fetches the models `descriptor` selects, through `context`, ignoring its unsaved
    /// changes, and sums the properties at `aggregated` over them.
    init<T: PersistentModel>(_ descriptor: FetchDescriptor<T>, aggregated: [Int] = [], fetchedBy context: ModelContext)
        throws
    {
        var saved = descriptor
        saved.includePendingChanges = false
        let (entity, _) = try context.route(T.self)
        let query = try FetchQuery(saved, entity: entity, schema: context.core.schema)
        let snapshots = try context.fetchSnapshots(saved)
        self.init(
            query: query, windowed: saved.fetchLimit != nil || (saved.fetchOffset ?? 0) != 0, aggregated: aggregated,
            snapshots: snapshots)
    }

    private init(query: FetchQuery, windowed: Bool, aggregated: [Int], snapshots: [DefaultSnapshot]) {
        self.query = query
        self.aggregated = aggregated
        var sums = Array(repeating: SumAccumulator(), count: aggregated.count)
        self.order = EntryOrder(ascending: query.sort.map(\.ascending))
        self.entityNames = Set(query.entities.map(\.name))
        self.windowed = windowed
        self.readsOtherModels = query.predicate.map { Self.readsOtherModels($0, root: query.rootVariable) } ?? false
        let keys = query.sort.map(\.index)
        var list = snapshots.map { snapshot in
            ObservedEntry(id: snapshot.persistentIdentifier, keys: keys.map { snapshot.values[$0] })
        }
        // The store's order of models with equal keys need not be the observer's.
        let order = self.order
        if zip(list, list.dropFirst()).contains(where: { !order.precedes($0, $1) }) {
            list.sort(by: order.precedes)
        }
        // A window is kept as the store cut it; the entries are its members.
        self.entries = OrderedEntries(sorted: list)
        var members: [PersistentIdentifier: [SnapshotValue]] = [:]
        members.reserveCapacity(list.count)
        if aggregated.isEmpty {
            for entry in list { members[entry.id] = entry.keys }
        } else {
            for snapshot in snapshots {
                let values = Self.values(of: snapshot, keys: keys, aggregated: aggregated)
                members[snapshot.persistentIdentifier] = values
                for (slot, value) in values[keys.count...].enumerated() { sums[slot].add(value) }
            }
        }
        self.members = members
        self.sums = sums
    }

    /// What a member is tracked by: its sort keys, then its aggregated values.
    private static func values(of snapshot: DefaultSnapshot, keys: [Int], aggregated: [Int]) -> [SnapshotValue] {
        var values = keys.map { snapshot.values[$0] }
        for index in aggregated { values.append(snapshot.values[index]) }
        return values
    }

    /// The same query with no members: what an observer shows when a fetch failed.
    func emptied() -> TrackedResults {
        TrackedResults(query: query, windowed: windowed, aggregated: aggregated, snapshots: [])
    }

    /// Whether `events` call for fetching again rather than applying them one record at a
    /// time.
    func refetchesWhole(after events: [SaveEvent]) -> Bool {
        if readsOtherModels { return events.contains { !$0.isEmpty } }
        guard windowed else { return false }
        return events.contains { event in event.all.contains { entityNames.contains($0.entityName) } }
    }

    /// What applying saves changed.
    struct Changes {
        /// Whether models entered, left or moved.
        var results = false
        /// Whether a sum changed.
        var sums = false
        var any: Bool { results || sums }
    }

    /// Applies the saves in `events` to the members, their order and the sums, reading the
    /// saved records from the stores.
    mutating func apply(_ events: [SaveEvent], core: ModelContainer.Core) throws -> Changes {
        var deleted = Set<PersistentIdentifier>()
        var touched: [PersistentIdentifier] = []
        var seen = Set<PersistentIdentifier>()
        for event in events {
            for id in event.deleted where entityNames.contains(id.entityName) {
                deleted.insert(id)
            }
            for id in event.inserted where entityNames.contains(id.entityName) && seen.insert(id).inserted {
                touched.append(id)
            }
            for id in event.updated where entityNames.contains(id.entityName) && seen.insert(id).inserted {
                touched.append(id)
            }
        }
        var changes = Changes()
        for id in deleted where !seen.contains(id) {
            remove(id, &changes)
        }
        guard !touched.isEmpty else { return changes }
        // The saved records, one request per entity.
        var snapshots: [PersistentIdentifier: DefaultSnapshot] = [:]
        var byEntity: [String: [PersistentIdentifier]] = [:]
        for id in touched { byEntity[id.entityName, default: []].append(id) }
        for (name, ids) in byEntity {
            snapshots.merge(try core.store(for: name).snapshots(for: ids)) { _, new in new }
        }
        var evaluator = QueryEvaluator(resolve: { id in
            try? core.store(for: id.entityName).snapshots(for: [id])[id]
        })
        let keys = query.sort.map(\.index)
        for id in touched {
            // Gone from the store by the time it is read: a later save deleted it.
            guard let snapshot = snapshots[id], !deleted.contains(id) else {
                remove(id, &changes)
                continue
            }
            let matches =
                try query.predicate.map { try evaluator.matches(snapshot, $0, root: query.rootVariable) } ?? true
            guard matches else {
                remove(id, &changes)
                continue
            }
            let values = Self.values(of: snapshot, keys: keys, aggregated: aggregated)
            let newKeys = Array(values[..<keys.count])
            if let old = members[id] {
                if old == values { continue }
                subtract(old, keys.count, &changes)
                if old[..<keys.count].elementsEqual(newKeys) {
                    members[id] = values
                    add(values, keys.count, &changes)
                    continue
                }
                entries.remove(ObservedEntry(id: id, keys: Array(old[..<keys.count])), order)
            }
            entries.insert(ObservedEntry(id: id, keys: newKeys), order)
            members[id] = values
            add(values, keys.count, &changes)
            changes.results = true
        }
        return changes
    }

    /// Takes `id` out of the result, if it is in it.
    private mutating func remove(_ id: PersistentIdentifier, _ changes: inout Changes) {
        guard let old = members.removeValue(forKey: id) else { return }
        let sortCount = query.sort.count
        entries.remove(ObservedEntry(id: id, keys: Array(old[..<sortCount])), order)
        subtract(old, sortCount, &changes)
        changes.results = true
    }

    private mutating func add(_ values: [SnapshotValue], _ sortCount: Int, _ changes: inout Changes) {
        for (slot, value) in values[sortCount...].enumerated() where value != .null {
            sums[slot].add(value)
            changes.sums = true
        }
    }

    private mutating func subtract(_ values: [SnapshotValue], _ sortCount: Int, _ changes: inout Changes) {
        for (slot, value) in values[sortCount...].enumerated() where value != .null {
            sums[slot].subtract(value)
            changes.sums = true
        }
    }

    /// Whether `expression` reads a property of anything but the model under test, `root`.
    static func readsOtherModels(_ expression: QueryExpression, root: PredicateExpressions.VariableID?) -> Bool {
        func reads(_ e: QueryExpression) -> Bool {
            switch e {
            case .constant, .variable, .identifierIn: return false
            case .property(let base, _, _, _):
                if case .variable(let variable) = base, variable == root { return false }
                return true
            case .modelID(let a), .member(let a, _, _), .apply(let a, _), .count(let a), .isEmpty(let a),
                .not(let a), .negate(let a), .forceUnwrap(let a), .cast(let a, _, _, _):
                return reads(a)
            case .compare(_, let a, let b), .and(let a, let b), .or(let a, let b), .arithmetic(_, let a, let b),
                .nilCoalesce(let a, let b), .optionalFlatMap(let a, _, let b), .closure(_, let a, _, let b):
                return reads(a) || reads(b)
            case .conditional(let a, let b, let c), .inRange(let a, let b, let c, _):
                return reads(a) || reads(b) || reads(c)
            case .function(_, let a, let b):
                return reads(a) || (b.map(reads) ?? false)
            case .subscripted(let a, let b, let d):
                return reads(a) || reads(b) || (d.map(reads) ?? false)
            }
        }
        return reads(expression)
    }
}

/// A running sum of stored numeric values, kept as values enter and leave: integers
/// exactly (wrapping past `Int64`), decimals exactly, and doubles with a compensation term
/// (Neumaier's), so that adding and taking away many values drifts from the sum of what is
/// left by no more than a few units in its last place.
struct SumAccumulator: Sendable {
    var integer: Int64 = 0
    var decimal: Decimal = 0
    var double = 0.0
    var compensation = 0.0

    mutating func add(_ value: SnapshotValue) { accumulate(value, sign: 1) }
    mutating func subtract(_ value: SnapshotValue) { accumulate(value, sign: -1) }

    private mutating func accumulate(_ value: SnapshotValue, sign: Int64) {
        switch value {
        case .int(let n): integer &+= n &* sign
        case .uint(let n): integer &+= Int64(bitPattern: n) &* sign
        case .bool(let b): integer &+= b ? sign : 0
        case .decimal(let d): decimal += sign > 0 ? d : -d
        case .double(let d): addDouble(sign > 0 ? d : -d)
        default: break
        }
    }

    private mutating func addDouble(_ x: Double) {
        let t = double + x
        if abs(double) >= abs(x) {
            compensation += (double - t) + x
        } else {
            compensation += (x - t) + double
        }
        double = t
    }
}
