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
    /// The sort keys of each member, by identifier.
    private(set) var members: [PersistentIdentifier: [SnapshotValue]]

    /// Fetches the models `descriptor` selects, through `context`, ignoring its unsaved
    /// changes.
    init<T: PersistentModel>(_ descriptor: FetchDescriptor<T>, fetchedBy context: ModelContext) throws {
        var saved = descriptor
        saved.includePendingChanges = false
        let (entity, _) = try context.route(T.self)
        let query = try FetchQuery(saved, entity: entity, schema: context.core.schema)
        let snapshots = try context.fetchSnapshots(saved)
        self.init(query: query, windowed: saved.fetchLimit != nil || (saved.fetchOffset ?? 0) != 0, snapshots: snapshots)
    }

    private init(query: FetchQuery, windowed: Bool, snapshots: [DefaultSnapshot]) {
        self.query = query
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
        for entry in list { members[entry.id] = entry.keys }
        self.members = members
    }

    /// The same query with no members: what an observer shows when a fetch failed.
    func emptied() -> TrackedResults {
        TrackedResults(query: query, windowed: windowed, snapshots: [])
    }

    /// Whether `events` call for fetching again rather than applying them one record at a
    /// time.
    func refetchesWhole(after events: [SaveEvent]) -> Bool {
        if readsOtherModels { return events.contains { !$0.isEmpty } }
        guard windowed else { return false }
        return events.contains { event in event.all.contains { entityNames.contains($0.entityName) } }
    }

    /// Applies the saves in `events` to the members and their order, reading the saved
    /// records from the stores. Gives whether the result changed.
    mutating func apply(_ events: [SaveEvent], core: ModelContainer.Core) throws -> Bool {
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
        var changed = false
        for id in deleted where seen.contains(id) == false {
            changed = remove(id) || changed
        }
        guard !touched.isEmpty else { return changed }
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
                changed = remove(id) || changed
                continue
            }
            let matches = try query.predicate.map { try evaluator.matches(snapshot, $0, root: query.rootVariable) } ?? true
            guard matches else {
                changed = remove(id) || changed
                continue
            }
            let newKeys = keys.map { snapshot.values[$0] }
            if let old = members[id] {
                if old == newKeys { continue }
                entries.remove(ObservedEntry(id: id, keys: old), order)
            }
            entries.insert(ObservedEntry(id: id, keys: newKeys), order)
            members[id] = newKeys
            changed = true
        }
        return changed
    }

    /// Takes `id` out of the result, if it is in it.
    private mutating func remove(_ id: PersistentIdentifier) -> Bool {
        guard let old = members.removeValue(forKey: id) else { return false }
        entries.remove(ObservedEntry(id: id, keys: old), order)
        return true
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
