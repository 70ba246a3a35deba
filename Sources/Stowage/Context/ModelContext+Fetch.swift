import Foundation

extension ModelContext {
    /// The models that match a descriptor.
    ///
    /// With `includePendingChanges` (the default), unsaved inserts and changes are
    /// matched against the predicate too, and unsaved deletes are left out.
    ///
    /// Inlinable, so that it is specialized for the model type in the app's module: the
    /// work behind it takes the descriptor with its type taken out
    /// (`ErasedFetchDescriptor`) and is not generic.
    /// - Throws: ``SwiftDataError`` `.unsupportedPredicate` naming the expression the
    ///   store cannot evaluate, `.unsupportedSortDescriptor`, or `.unknownModelType`.
    /// - Complexity: O(*n*) in the records the store scans, plus sorting.
    @inlinable
    public func fetch<T: PersistentModel>(_ descriptor: FetchDescriptor<T>) throws -> [T] {
        var models: [T] = []
        try fetchModels(
            ErasedFetchDescriptor(descriptor),
            storeFetch: { store, editingState, query in
                try store.fetch(
                    DataStoreFetchRequest(
                        descriptor: descriptor.matching(query), editingState: editingState, query: query)
                ).fetchedSnapshots
            },
            reserve: { models.reserveCapacity($0) },
            append: { if let typed = $0 as? T { models.append(typed) } })
        return models
    }

    /// The models that match `descriptor`, as ``fetch(_:)`` returns them, handed to
    /// `append` in order after `reserve` is told how many there are: the caller's typed
    /// array is the only one made (an array of existentials in between cost an
    /// allocation a fetch). `storeFetch` asks a store that keeps no ``SnapshotTable``
    /// through its generic request.
    @usableFromInline
    func fetchModels(
        _ descriptor: ErasedFetchDescriptor,
        storeFetch: (any DataStore<DefaultSnapshot>, EditingState, FetchQuery) throws -> [DefaultSnapshot],
        reserve: (Int) -> Void, append: (any PersistentModel) -> Void
    ) throws {
        applyPendingMerges()
        let snapshots = try fetchSnapshots(descriptor, storeFetch: storeFetch)
        reserve(snapshots.count)
        // The models are gathered once more only for prefetching relationships.
        let prefetching = !descriptor.prefetch.isEmpty
        var all: [any PersistentModel] = []
        if prefetching { all.reserveCapacity(snapshots.count) }
        for snapshot in snapshots {
            let model: any PersistentModel
            if hasChanges, let changed = lookUp(snapshot.persistentIdentifier),
                hasPendingChanges(snapshot.persistentIdentifier)
            {
                model = changed
            } else {
                model = try materialize(snapshot)
            }
            append(model)
            if prefetching { all.append(model) }
        }
        if prefetching { try prefetch(descriptor.prefetch, of: all) }
    }

    /// How many models match a descriptor, without loading them.
    public func fetchCount<T: PersistentModel>(_ descriptor: FetchDescriptor<T>) throws -> Int {
        applyPendingMerges()
        let (store, request) = try makeRequest(descriptor)
        if descriptor.includePendingChanges && hasPendingChanges(for: request.query)
            || (request.query.spansSubentities && !Self.answersFamilies(store))
        {
            return try fetchSnapshots(descriptor).count
        }
        do {
            return try store.fetchCount(request)
        } catch DataStoreError.preferInMemoryFilter, DataStoreError.preferInMemorySort {
            return try fetchSnapshots(descriptor).count
        }
    }

    /// The identifiers of the models that match a descriptor, in its order.
    public func fetchIdentifiers<T: PersistentModel>(_ descriptor: FetchDescriptor<T>) throws -> [PersistentIdentifier]
    {
        applyPendingMerges()
        let (store, request) = try makeRequest(descriptor)
        if descriptor.includePendingChanges && hasPendingChanges(for: request.query)
            || (request.query.spansSubentities && !Self.answersFamilies(store))
        {
            return try fetchSnapshots(descriptor).map(\.persistentIdentifier)
        }
        do {
            return try store.fetchIdentifiers(request)
        } catch DataStoreError.preferInMemoryFilter, DataStoreError.preferInMemorySort {
            return try fetchSnapshots(descriptor).map(\.persistentIdentifier)
        }
    }

    /// Whether `store` answers a query that spans an entity's subentities itself (else the
    /// context asks it for each entity and merges the parts).
    static func answersFamilies(_ store: any DataStore<DefaultSnapshot>) -> Bool {
        store is any SnapshotTableStore || store is any AnswersEntityFamilies
    }

    /// What `store` answers to `query`; when it prefers the context to filter or sort
    /// (``DataStoreError/preferInMemoryFilter``, ``DataStoreError/preferInMemorySort``), it
    /// is asked again without that part and the window, and the context does the rest.
    func storeSnapshots(
        _ store: any DataStore<DefaultSnapshot>, _ query: FetchQuery,
        _ storeFetch: (any DataStore<DefaultSnapshot>, EditingState, FetchQuery) throws -> [DefaultSnapshot]
    ) throws -> [DefaultSnapshot] {
        if query.spansSubentities, !Self.answersFamilies(store) {
            return try familySnapshots(store, query, storeFetch)
        }
        var asked = query
        var filterHere = false
        var sortHere = false
        // At most: as asked, then without the sort, then without the filter too.
        while true {
            do {
                let snapshots = try storeFetch(store, editingState, asked)
                if !filterHere, !sortHere {
                    return snapshots
                }
                return try inMemory(snapshots, query, filter: filterHere)
            } catch DataStoreError.preferInMemorySort where !query.sort.isEmpty && !asked.sort.isEmpty {
                asked.sort = []
                sortHere = true
            } catch DataStoreError.preferInMemoryFilter where asked.hasFilter {
                asked.predicate = nil
                asked.identifiers = nil
                filterHere = true
                sortHere = true  // the window, at least, is the context's now
            }
            asked.limit = nil
            asked.offset = 0
        }
    }

    /// What a store that keeps no table answers for an entity with subentities: a fetch
    /// request is typed by its model class, and `query`'s predicate is over the base, so
    /// each subentity is asked for all its records (a request of its own class), and the
    /// context filters, sorts and cuts the window over them all, as for a store that
    /// prefers it to (``DataStoreError/preferInMemoryFilter``).
    func familySnapshots(
        _ store: any DataStore<DefaultSnapshot>, _ query: FetchQuery,
        _ storeFetch: (any DataStore<DefaultSnapshot>, EditingState, FetchQuery) throws -> [DefaultSnapshot]
    ) throws -> [DefaultSnapshot] {
        var all: [DefaultSnapshot] = []
        for entity in query.entities {
            var part = query.narrowed(to: entity)
            part.predicate = nil
            part.sort = []
            part.limit = nil
            part.offset = 0
            if entity === query.entity {
                all += try storeSnapshots(store, part, storeFetch)
            } else {
                func ask<S: PersistentModel>(_: S.Type) throws -> [DefaultSnapshot] {
                    try store.fetch(
                        DataStoreFetchRequest(descriptor: FetchDescriptor<S>(), editingState: editingState, query: part)
                    ).fetchedSnapshots
                }
                all += try ask(entity.modelType)
            }
        }
        return try inMemory(all, query, filter: true)
    }

    /// `snapshots` filtered by `query`'s predicate and identifiers (when `filter`), sorted
    /// by its sort, and cut to its window: what a store that preferred the context to do
    /// so would have answered.
    func inMemory(_ snapshots: [DefaultSnapshot], _ query: FetchQuery, filter: Bool) throws -> [DefaultSnapshot] {
        var kept = snapshots
        if filter {
            var evaluator = QueryEvaluator(resolve: { [unowned self] id in
                if let model = self.lookUp(id), self.hasPendingChanges(id) {
                    return try? model.persistentBackingData.snapshot()
                }
                return try? core.store(for: id.entityName).snapshots(for: [id])[id]
            })
            kept = try kept.filter { snapshot in
                if let ids = query.identifiers, !ids.contains(snapshot.persistentIdentifier) { return false }
                guard let predicate = query.predicate else { return true }
                return try evaluator.matches(snapshot, predicate, root: query.rootVariable)
            }
        }
        if !query.sort.isEmpty {
            kept.sort { a, b in
                if query.areInIncreasingOrder(a, b) { return true }
                if query.areInIncreasingOrder(b, a) { return false }
                return a.persistentIdentifier < b.persistentIdentifier
            }
        }
        let start = min(query.offset, kept.count)
        let end = query.limit.map { Swift.min(kept.count, start + $0) } ?? kept.count
        return Array(kept[start..<end])
    }

    /// How the store would answer a descriptor: the index it uses, the filter left on
    /// snapshots, the order and the window, as one line, for example
    /// `INDEX Trip(destination) EQ destination = "Lisbon"; FILTER budget > 100.0; LIMIT 20`.
    ///
    /// Stowage's addition: SwiftData has no way to see how a fetch is answered. Unsaved
    /// changes are not part of the plan; they are merged after it runs.
    /// - Throws: the errors of ``fetch(_:)``.
    public func explain<T: PersistentModel>(_ descriptor: FetchDescriptor<T>) throws -> String {
        let (store, request) = try makeRequest(descriptor)
        return try store.explain(request)
    }

    /// Deletes every model of `model` that matches `predicate` (all of them when `nil`),
    /// at the next save. Delete rules apply as for ``delete(_:)``.
    ///
    /// When the store can delete in a batch (``DataStoreBatching``), no relationship
    /// touches the entity, and this context has no unsaved changes to it, the records are
    /// not loaded: the next save deletes what matches the predicate then, among the records
    /// stored before it (with Stowage's own stores, inside the save's one atomic commit),
    /// and fetches until then leave those records out. Models of them that this context
    /// holds are marked deleted when the save is done, and the save's notification lists
    /// them all. Otherwise the matching models are loaded and deleted one by one.
    ///
    /// With model inheritance, `includeSubclasses` (the default) deletes the matching
    /// models of every subclass of `model` too; `false` deletes only models of `model`
    /// itself. A delete that spans subclasses loads the models.
    /// - Throws: as ``fetch(_:)``.
    public func delete<T: PersistentModel>(
        model: T.Type, where predicate: Predicate<T>? = nil, includeSubclasses: Bool = true
    ) throws {
        var descriptor = FetchDescriptor<T>(predicate: predicate)
        descriptor.includePendingChanges = true
        let (entity, store) = try route(T.self)
        var query = try FetchQuery(descriptor, entity: entity, schema: core.schema)
        if !includeSubclasses { query = query.narrowed(to: entity) }
        if let batching = store as? any DataStoreBatching, !query.spansSubentities,
            !hasPendingChanges(forEntity: entity.name), !isTouchedByRelationships(entity)
        {
            let request = DataStoreBatchDeleteRequest<T>(
                editingState: editingState, includeSubclasses: includeSubclasses, predicate: predicate, query: query)
            let storeFetch: PendingBatchDelete.StoreFetch = { store, editingState, query in
                try store.fetch(
                    DataStoreFetchRequest(
                        descriptor: descriptor.matching(query), editingState: editingState, query: query)
                ).fetchedSnapshots
            }
            let storeIdentifiers:
                (any DataStore<DefaultSnapshot>, EditingState, FetchQuery) throws -> [PersistentIdentifier]? = {
                    store, editingState, query in
                    do {
                        return try store.fetchIdentifiers(
                            DataStoreFetchRequest(
                                descriptor: descriptor.matching(query), editingState: editingState, query: query))
                    } catch DataStoreError.preferInMemoryFilter, DataStoreError.preferInMemorySort {
                        return nil
                    }
                }
            pendingBatchDeletes.append(
                PendingBatchDelete(
                    entityName: entity.name, query: query, storeFetch: storeFetch, storeIdentifiers: storeIdentifiers
                ) {
                    try batching.delete(request)
                })
            changeCount &+= 1
            scheduleAutosave()
            return
        }
        for found in try fetch(descriptor) where includeSubclasses || type(of: found) == T.self {
            delete(found)
        }
    }

    /// Whether the entity has relationships, or is the destination of one: then deleting
    /// its records has delete rules or inverses to apply, which only loaded models can.
    func isTouchedByRelationships(_ entity: Schema.Entity) -> Bool {
        !entity.relationshipIndices.isEmpty || core.schema.relationshipDestinations.contains(entity.name)
    }

    /// Whether a pending batch delete takes the stored record `snapshot`.
    func isBatchDeleted(_ snapshot: DefaultSnapshot, evaluator: inout QueryEvaluator) throws -> Bool {
        for batch in pendingBatchDeletes where batch.entityName == snapshot.persistentIdentifier.entityName {
            guard let predicate = batch.query.predicate else { return true }
            if try evaluator.matches(snapshot, predicate, root: batch.query.rootVariable) { return true }
        }
        return false
    }

    func makeRequest<T: PersistentModel>(_ descriptor: FetchDescriptor<T>) throws
        -> (any DataStore<DefaultSnapshot>, DataStoreFetchRequest<T>)
    {
        let (entity, store) = try route(T.self)
        let query = try FetchQuery(descriptor, entity: entity, schema: core.schema)
        return (store, DataStoreFetchRequest(descriptor: descriptor, editingState: editingState, query: query))
    }

    /// The entity and store for a model type, looked up once per context.
    func route(_ type: any PersistentModel.Type) throws -> (Schema.Entity, any DataStore<DefaultSnapshot>) {
        let key = ObjectIdentifier(type)
        if let known = routes[key] { return known }
        guard let entity = core.schema.entity(forModelType: type) else {
            throw core.schema.unknownModelType(type._stowageEntityName)
        }
        let route = (entity, try core.store(for: entity.name))
        routes[key] = route
        return route
    }

    /// Whether this context has unsaved changes to a record `query` reads: one of its
    /// entities', or, when its predicate reads other models through relationships, any.
    func hasPendingChanges(for query: FetchQuery) -> Bool {
        guard hasChanges else { return false }
        if query.readsOtherModels { return true }
        if !query.spansSubentities { return hasPendingChanges(forEntity: query.entity.name) }
        return query.entities.contains { hasPendingChanges(forEntity: $0.name) }
    }

    /// Whether this context has unsaved changes to records of entities other than those
    /// `query` fetches, which a predicate that reads related models can see.
    func hasPendingChanges(outside query: FetchQuery) -> Bool {
        let names = pending.insertedEntities.union(pending.changedEntities).union(pending.deletedEntities)
        return names.contains { !query.reads(entityNamed: $0) }
            || pendingBatchDeletes.contains { !query.reads(entityNamed: $0.entityName) }
    }

    /// Whether this context may have unsaved changes to records of the entity `name`:
    /// answered from the context's index of its changes, so it costs the same however many
    /// there are (it may say yes for changes since taken back).
    func hasPendingChanges(forEntity name: String) -> Bool {
        guard hasChanges else { return false }
        return pending.insertedEntities.contains(name) || pending.changedEntities.contains(name)
            || pending.deletedEntities.contains(name)
            || pendingBatchDeletes.contains { $0.entityName == name }
    }

    /// The snapshots a fetch returns, merged with this context's unsaved changes when the
    /// descriptor asks for them.
    func fetchSnapshots<T: PersistentModel>(_ descriptor: FetchDescriptor<T>) throws -> [DefaultSnapshot] {
        try fetchSnapshots(ErasedFetchDescriptor(descriptor)) { store, editingState, query in
            try store.fetch(
                DataStoreFetchRequest(descriptor: descriptor.matching(query), editingState: editingState, query: query)
            ).fetchedSnapshots
        }
    }

    /// The snapshots a fetch returns, merged with this context's unsaved changes when the
    /// descriptor asks for them. `storeFetch` asks a store that keeps no table.
    func fetchSnapshots(
        _ descriptor: ErasedFetchDescriptor,
        storeFetch: (any DataStore<DefaultSnapshot>, EditingState, FetchQuery) throws -> [DefaultSnapshot]
    ) throws -> [DefaultSnapshot] {
        let (entity, store) = try route(descriptor.modelType)
        let query = try FetchQuery(descriptor, entity: entity, schema: core.schema)
        guard descriptor.includePendingChanges, hasPendingChanges(for: query) else {
            // Straight to the one table-keeping store when there is one, without the generic
            // request and result.
            if let tableStore = core.onlyTableStore {
                return try tableStore.withTable { try $0.fetch(query) }
            }
            return try storeSnapshots(store, query, storeFetch)
        }
        // Fetch without the window, replace what this context has changed, then sort and cut.
        // Only the changes that can make a difference are looked at: the pending inserts of
        // the query's entities, and the changed models that wrote a property the predicate
        // or the sort reads (a changed model that wrote none matches and sorts as its saved
        // record does, and the fetch hands back the model itself). So a fetch costs the same
        // however many unrelated unsaved changes the context holds.
        var unwindowed = query
        unwindowed.limit = nil
        unwindowed.offset = 0
        // A predicate that reads related models, some of which have unsaved changes, can
        // match a record the store would not (or not match one it would): every record is
        // fetched and tested here, with the related models as this context has them.
        let retestsStored = query.readsOtherModels && hasPendingChanges(outside: query)
        if retestsStored {
            unwindowed.predicate = nil
            unwindowed.sort = []
        }
        let stored = try storeSnapshots(store, unwindowed, storeFetch)
        var pendingSnapshots: [PersistentIdentifier: DefaultSnapshot] = [:]
        var inserted: [PersistentIdentifier] = []
        if query.entities.contains(where: { pending.insertedEntities.contains($0.name) }) {
            if let (property, value) = query.requiredEquality {
                // Only the inserts with the value the predicate requires, from the index.
                for entity in query.entities where pending.insertedEntities.contains(entity.name) {
                    let candidates = try pending.inserts(of: entity.name, property: property, equalTo: value) {
                        try zip(insertedOrder, insertedModels).filter { $0.0.entityName == entity.name }.map {
                            ($0.0, try $0.1.persistentBackingData.snapshot().values)
                        }
                    }
                    for id in candidates where pendingSnapshots[id] == nil {
                        guard let model = insertedModel(for: id) else { continue }
                        pendingSnapshots[id] = try model.persistentBackingData.snapshot()
                        inserted.append(id)
                    }
                }
                // Unsaved records by identifier order, as the full list keeps them.
                inserted.sort()
            } else {
                for (id, model) in zip(insertedOrder, insertedModels) where query.reads(entityNamed: id.entityName) {
                    pendingSnapshots[id] = try model.persistentBackingData.snapshot()
                    inserted.append(id)
                }
            }
        }
        let bitsRead = query.writtenBitsRead
        var changed: [PersistentIdentifier] = []
        for entity in query.entities where pending.changedEntities.contains(entity.name) {
            for id in pending.changed(in: entity.name, writing: bitsRead) where pendingSnapshots[id] == nil {
                guard let model = changedModels[id],
                    model.persistentBackingData.writtenProperties & bitsRead != 0
                else { continue }
                pendingSnapshots[id] = try model.persistentBackingData.snapshot()
                changed.append(id)
            }
        }
        var evaluator = QueryEvaluator(resolve: { [unowned self] id in
            if let model = self.lookUp(id), self.hasPendingChanges(id) {
                return try? model.persistentBackingData.snapshot()
            }
            if self.deletedModels[id] != nil { return nil }
            return try? core.store(for: id.entityName).snapshots(for: [id])[id]
        })
        func matches(_ snapshot: DefaultSnapshot) throws -> Bool {
            if let ids = query.identifiers, !ids.contains(snapshot.persistentIdentifier) { return false }
            guard let predicate = query.predicate else { return true }
            return try evaluator.matches(snapshot, predicate, root: query.rootVariable)
        }
        let deletes = !deletedModels.isEmpty && query.entities.contains { pending.deletedEntities.contains($0.name) }
        // Deletes by predicate take saved records that match them; models changed or
        // inserted here after the call stay.
        let batchDeletes = pendingBatchDeletes.contains { query.reads(entityNamed: $0.entityName) }
        var merged: [DefaultSnapshot] = []
        merged.reserveCapacity(stored.count + inserted.count)
        // A changed model keeps its saved record's place if it still matches.
        var placed = Set<PersistentIdentifier>()
        for snapshot in stored {
            let id = snapshot.persistentIdentifier
            if deletes, deletedModels[id] != nil { continue }
            if let replacement = pendingSnapshots[id] {
                placed.insert(id)
                if try matches(replacement) { merged.append(replacement) }
            } else {
                if batchDeletes, try isBatchDeleted(snapshot, evaluator: &evaluator) { continue }
                if retestsStored, try !matches(snapshot) { continue }
                merged.append(snapshot)
            }
        }
        // Inserted models, and changed ones their saved record did not bring.
        for id in inserted + changed where !placed.contains(id) {
            guard let snapshot = pendingSnapshots[id], try matches(snapshot) else { continue }
            merged.append(snapshot)
        }
        if !query.sort.isEmpty {
            // Ties keep identifier order: saved records by primary key, then unsaved ones.
            merged.sort { a, b in
                if query.areInIncreasingOrder(a, b) { return true }
                if query.areInIncreasingOrder(b, a) { return false }
                return a.persistentIdentifier < b.persistentIdentifier
            }
        }
        let start = min(query.offset, merged.count)
        let end = query.limit.map { Swift.min(merged.count, start + $0) } ?? merged.count
        return Array(merged[start..<end])
    }

    /// Loads the models of the given relationships for `models`, one store request per
    /// relationship, and keeps each loaded model as long as a model that refers to it
    /// lives (``prefetchedByOwner``): the identity map alone does not keep a model, and
    /// models loaded and let go at once were freed before the relationship was read.
    func prefetch(_ keyPaths: [AnyKeyPath], of models: [any PersistentModel]) throws {
        guard !keyPaths.isEmpty, let first = models.first else { return }
        let entity = first.persistentBackingData.entity
        for keyPath in keyPaths {
            guard let property = entity.property(for: keyPath), property.isRelationship else { continue }
            var ids: [PersistentIdentifier] = []
            for model in models {
                for ref in model.persistentBackingData.references(at: property.index) where lookUp(ref.id) == nil {
                    ids.append(ref.id)
                }
            }
            var loaded: [PersistentIdentifier: any PersistentModel] = [:]
            for (id, snapshot) in try loadSnapshots(ids) { loaded[id] = try materialize(snapshot) }
            guard !loaded.isEmpty else { continue }
            for model in models {
                let held = model.persistentBackingData.references(at: property.index).compactMap { loaded[$0.id] }
                guard !held.isEmpty else { continue }
                prefetchedByOwner[ObjectIdentifier(model.persistentBackingData), default: []].append(contentsOf: held)
            }
        }
    }
}

/// A delete by predicate that waits for the next save (``ModelContext/delete(model:where:includeSubclasses:)``).
struct PendingBatchDelete {
    /// The entity whose records it deletes.
    let entityName: String
    /// Which of them.
    let query: FetchQuery
    typealias StoreFetch = (any DataStore<DefaultSnapshot>, EditingState, FetchQuery) throws -> [DefaultSnapshot]
    /// Fetches the records `query` matches from a store that is not Stowage's own, so the
    /// save knows which it deletes.
    let storeFetch: StoreFetch
    /// Asks such a store for only their identifiers, which is all the save needs; `nil`
    /// when the store would rather the context filtered (then ``storeFetch`` serves).
    let storeIdentifiers: (any DataStore<DefaultSnapshot>, EditingState, FetchQuery) throws -> [PersistentIdentifier]?
    /// Asks a store that is not Stowage's own to delete them (``DataStoreBatching/delete(_:)``).
    let perform: () throws -> Void
}
