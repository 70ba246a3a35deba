import Foundation

extension ModelContext {
    /// Sends every unsaved insert, change and delete to the store as one atomic save.
    ///
    /// Delete rules run first: `.cascade` deletes related models, `.nullify` clears their
    /// references, and `.deny` makes the save throw with nothing deleted. Unique
    /// constraints upsert (or throw, with ``uniquenessPolicy`` `.fail`). After the save,
    /// inserted models carry permanent identifiers.
    /// - Throws: ``SwiftDataError`` `.deleteRuleDenied`, `.uniqueConstraintViolation`,
    ///   `.unknownModelType` or `.unsupportedValue`; ``DataStoreError`` from the store.
    ///   When it throws, nothing was saved and the changes are still pending.
    public func save() throws {
        applyPendingMerges()
        guard hasChanges else { return }
        var deletions = try resolveDeleteRules()
        try checkRelationshipCounts(deletions)
        NotificationCenter.default.post(name: ModelContext.willSave, object: self)

        // Snapshots grouped by store.
        var inserted: [Int: [DefaultSnapshot]] = [:]
        var updated: [Int: [DefaultSnapshot]] = [:]
        var deleted: [Int: [DefaultSnapshot]] = [:]
        // Identifiers come in runs of one entity: the last one's store is tried first, by
        // the identifier's scope, without hashing the entity's name.
        var lastStore: (scope: ObjectIdentifier, index: Int)?
        func storeIndex(_ id: PersistentIdentifier) throws -> Int {
            let scope = ObjectIdentifier(id.scope)
            if let lastStore, lastStore.scope == scope { return lastStore.index }
            guard let index = core.storeForEntity[id.entityName] else {
                throw core.schema.unknownModelType(id.entityName)
            }
            lastStore = (scope, index)
            return index
        }
        for (id, model) in zip(insertedOrder, insertedModels) {
            inserted[try storeIndex(id), default: []].append(try model.persistentBackingData.snapshot())
        }
        // The positions in `insertedOrder` of each store's inserts, in its request's order.
        var insertPositions: [Int: [Int]] = [:]
        if inserted.count == 1, let only = inserted.keys.first {
            insertPositions[only] = Array(insertedOrder.indices)
        } else {
            for position in insertedOrder.indices {
                insertPositions[try storeIndex(insertedOrder[position]), default: []].append(position)
            }
        }
        for id in changedOrder where deletions[id] == nil {
            guard let model = changedModels[id] else { continue }
            updated[try storeIndex(id), default: []].append(try model.persistentBackingData.snapshot())
        }
        for (id, model) in deletions where !id.isTemporary {
            deleted[try storeIndex(id), default: []].append(try model.persistentBackingData.snapshot())
        }
        // Deletes by predicate: Stowage's own stores (PostgresStore too) resolve them inside the save; any other
        // store is asked for the matching identifiers, then to delete them, before its save.
        var batches: [Int: [PendingBatchDelete]] = [:]
        for batch in pendingBatchDeletes {
            guard let index = core.storeForEntity[batch.entityName] else {
                throw SwiftDataError(.unknownModelType, "\(batch.entityName) is not in the container's schema")
            }
            batches[index, default: []].append(batch)
        }
        for index in Set(inserted.keys).union(updated.keys).union(deleted.keys).union(batches.keys) {
            if let configuration = core.configurations[index] as? ModelConfiguration, !configuration.allowsSave {
                throw DataStoreError(
                    .unsupportedFeature, "the configuration \"\(configuration.name)\" does not allow saves")
            }
        }

        // Each inserted model's identifier after the save, by its position in `insertedOrder`.
        var newIdentifiers = insertedOrder
        var reregister: [PersistentIdentifier: DefaultSnapshot] = [:]
        // Records deleted without a model here: by a batch, or by the store on its own.
        var storeDeleted: [PersistentIdentifier] = []
        for index in Set(inserted.keys).union(updated.keys).union(deleted.keys).union(batches.keys).sorted() {
            let store = core.stores[index]
            var request = DataStoreSaveChangesRequest<DefaultSnapshot>(
                editingState: editingState, inserted: inserted[index] ?? [], updated: updated[index] ?? [],
                deleted: deleted[index] ?? [], uniquenessPolicy: uniquenessPolicy)
            if let pending = batches[index] {
                if store is any SnapshotTableStore || store is any DataStoreSavingBatchDeletes {
                    request.batchDeletes = pending.map(\.query)
                } else {
                    var doomed: Set<PersistentIdentifier> = []
                    for batch in pending {
                        // Identifiers are all the save needs: the store is asked for them alone
                        // when it can filter itself, rather than for every record it deletes.
                        let identifiers =
                            try batch.storeIdentifiers(store, editingState, batch.query)
                            ?? storeSnapshots(store, batch.query, batch.storeFetch).map(\.persistentIdentifier)
                        for id in identifiers where deletions[id] == nil {
                            doomed.insert(id)
                            if let model = lookUp(id) { deletions[id] = model } else { storeDeleted.append(id) }
                        }
                        try batch.perform()
                    }
                    // A record the batch deleted is not then updated back into being.
                    if !doomed.isEmpty, request.updated.contains(where: { doomed.contains($0.persistentIdentifier) }) {
                        request = DataStoreSaveChangesRequest(
                            editingState: request.editingState, inserted: request.inserted,
                            updated: request.updated.filter { !doomed.contains($0.persistentIdentifier) },
                            deleted: request.deleted, uniquenessPolicy: request.uniquenessPolicy)
                    }
                }
            }
            guard
                !request.inserted.isEmpty || !request.updated.isEmpty || !request.deleted.isEmpty
                    || !request.batchDeletes.isEmpty
            else { continue }
            let result = try store.save(request)
            if !request.inserted.isEmpty {
                let positions = insertPositions[index] ?? []
                if let ids = result.insertedIdentifiers {
                    guard ids.count == positions.count else {
                        throw DataStoreError(
                            .unsupportedFeature,
                            "the store answered \(ids.count) identifiers for \(positions.count) inserted models")
                    }
                    for (position, id) in zip(positions, ids) { newIdentifiers[position] = id }
                } else {
                    let remapped = result.remappedIdentifiers
                    for position in positions {
                        newIdentifiers[position] = remapped[insertedOrder[position]] ?? insertedOrder[position]
                    }
                }
            }
            // Records the store deleted on its own count as deleted here too.
            for id in result.deletedIdentifiers where deletions[id] == nil {
                if let model = lookUp(id) { deletions[id] = model } else { storeDeleted.append(id) }
            }
            if reregister.isEmpty {
                reregister = result.snapshotsToReregister
            } else {
                reregister.merge(result.snapshotsToReregister) { a, _ in a }
            }
        }
        // The snapshots and positions go before the identity map is built, so that they
        // are not held at the save's highest point of memory.
        inserted = [:]
        updated = [:]
        deleted = [:]
        insertPositions = [:]
        finishSave(
            deletions: deletions, newIdentifiers: newIdentifiers, reregister: reregister, storeDeleted: storeDeleted)
    }

    /// Throws ``SwiftDataError/modelValidationFailure`` when an inserted or changed model
    /// that the save keeps holds fewer models in a to-many relationship than its
    /// `minimumModelCount`, or more than its `maximumModelCount`. Models the save deletes
    /// do not count. An optional relationship may hold none.
    func checkRelationshipCounts(_ deletions: [PersistentIdentifier: any PersistentModel]) throws {
        // Most schemas bound no relationship: then no model is looked at.
        guard core.schema.boundsRelationshipCounts else { return }
        func check(_ model: any PersistentModel) throws {
            let data = model.persistentBackingData
            for bound in data.entity.countBounds {
                let references = data.references(at: bound.index)
                let count =
                    deletions.isEmpty ? references.count : references.count { deletions[$0.id] == nil }
                if count == 0 && bound.isOptional { continue }
                if count < bound.minimum || (bound.maximum > 0 && count > bound.maximum) {
                    let limits =
                        bound.maximum == 0
                        ? "at least \(bound.minimum)"
                        : bound.minimum == 0
                            ? "at most \(bound.maximum)" : "between \(bound.minimum) and \(bound.maximum)"
                    throw SwiftDataError(
                        .modelValidationFailure,
                        "\(data.entity.name).\(bound.name) of \(data.persistentModelID) holds \(count) models; "
                            + "its minimumModelCount and maximumModelCount allow \(limits); nothing was saved")
                }
            }
        }
        for model in insertedModels where !model.persistentBackingData.entity.countBounds.isEmpty {
            try check(model)
        }
        for id in changedOrder where deletions[id] == nil {
            guard let model = changedModels[id], !model.persistentBackingData.entity.countBounds.isEmpty else {
                continue
            }
            try check(model)
        }
    }

    /// Works out every model the save deletes, and applies `.nullify`, before anything is
    /// sent. Throws for `.deny` without changing anything.
    func resolveDeleteRules() throws -> [PersistentIdentifier: any PersistentModel] {
        var all = deletedModels
        var pending = deletedOrder.compactMap { deletedModels[$0] }
        var nullify: [(model: any PersistentModel, index: Int)] = []
        while let model = pending.popLast() {
            let data = model.persistentBackingData
            for property in data.entity.properties {
                guard let relationship = property.relationship else { continue }
                let related = data.resolvedModels(at: property.index)
                switch relationship.deleteRule {
                case .cascade:
                    for other in related where all[other.persistentModelID] == nil {
                        all[other.persistentModelID] = other
                        pending.append(other)
                    }
                case .deny:
                    if let blocker = related.first(where: { all[$0.persistentModelID] == nil }) {
                        throw SwiftDataError(
                            .deleteRuleDenied,
                            "\(data.entity.name).\(property.name) has a .deny delete rule and still holds "
                                + "\(blocker.persistentModelID); nothing was deleted")
                    }
                case .nullify:
                    nullify.append((model, property.index))
                case .noAction:
                    break
                }
            }
        }
        // Cascaded models are deleted too.
        for (id, model) in all where deletedModels[id] == nil {
            deletedModels[id] = model
            deletedOrder.append(id)
            self.pending.noteDelete(id)
            model.persistentBackingData.isDeleted = true
            if changedModels.removeValue(forKey: id) != nil { changedOrder.removeAll { $0 == id } }
            if id.isTemporary { removeInserted(id) }
        }
        for (model, index) in nullify {
            let data = model.persistentBackingData
            for related in data.resolvedModels(at: index) where all[related.persistentModelID] == nil {
                data.unlinkInverse(of: index, on: related, from: data.persistentModelID)
            }
        }
        return all
    }

    /// The most changed models whose table a save empties in place for the next save.
    static let keptChangeCapacity = 4096

    func finishSave(
        deletions: [PersistentIdentifier: any PersistentModel], newIdentifiers: [PersistentIdentifier],
        reregister: [PersistentIdentifier: DefaultSnapshot], storeDeleted: [PersistentIdentifier] = []
    ) {
        pendingBatchDeletes = []
        let insertedModels = insertedModels
        let updatedIDs = changedOrder
        // The lists of inserted identifiers go before the identity map is built, and the
        // notification sends `newIdentifiers`: two more copies of them would be held at the
        // save's highest point of memory.
        insertedOrder = []
        insertedPositions = nil
        // Pending inserts were not in the registry: it takes them now, under their
        // permanent identifiers, sized for them all at once when they are many (for a few,
        // making a new table cost a single-row save more than adding them to the old one).
        if registered.isEmpty, insertedModels.count > 64 {
            registered = ModelRegistry(minimumCapacity: insertedModels.count)
        }
        for (model, new) in zip(insertedModels, newIdentifiers) {
            model.persistentBackingData.persistentModelID = new
            // Only an upsert (which the store lists to reregister) can land on an identifier
            // the context has already: a plain insert's key is new, so its look-up is skipped.
            if let snapshot = reregister[new], let existing = registered[new], existing !== model {
                // An upsert onto a model this context already has: keep that one.
                model.persistentBackingData.context = nil
                try? model.persistentBackingData.apply(snapshot)
            } else {
                registered[new] = model
            }
        }
        for (id, snapshot) in reregister {
            if let model = registered[id] { try? model.persistentBackingData.apply(snapshot) }
        }
        // Every inserted and updated model, once all have their permanent identifiers.
        // They now match their records: nothing is written since (`writtenProperties`).
        for model in insertedModels {
            let data = model.persistentBackingData
            data.settleReferences()
            data.writtenProperties = 0
        }
        for id in updatedIDs {
            if let model = changedModels[id] {
                let data = model.persistentBackingData
                data.settleReferences()
                data.writtenProperties = 0
            }
        }
        for (id, model) in deletions {
            registered[id] = nil
            model.persistentBackingData.context = nil
            model.persistentBackingData.isDeleted = true
        }
        self.insertedModels = []
        // A context that saves every so many changes makes the same number of entries again:
        // a small table keeps its storage, where regrowing it from empty rehashed every entry
        // about as many times as it doubled. A large one is let go, not held for the next save.
        let keepCapacity = changedModels.count <= Self.keptChangeCapacity
        // The models the lists let go are freed when `released` is, after the accesses
        // below (see `changedModels`).
        let released = (changedModels, deletedModels)
        changedOrder.removeAll(keepingCapacity: keepCapacity)
        changedModels.removeAll(keepingCapacity: keepCapacity)
        deletedOrder = []
        deletedModels = [:]
        pending.removeAll()
        withExtendedLifetime(released) {}
        var deletedIDs = deletions.keys.filter { !$0.isTemporary }
        deletedIDs.append(contentsOf: storeDeleted)
        // Other contexts bring in what this save changed of records that existed before it:
        // updates, deletes, and the records that upserts landed on. A lone context skips
        // this with one atomic load.
        if core.contexts.hasOthers {
            var changed = updatedIDs
            changed.append(contentsOf: deletedIDs)
            changed.append(contentsOf: reregister.keys)
            core.contexts.post(changed, from: link)
        }
        // String keys, as few as the sets: each `AnyHashable` key is hashed and compared
        // through its box (six keys of two types made a single-row save about a tenth
        // slower). ``ModelContext/NotificationKey`` stands for its raw value as a key.
        let userInfo: [AnyHashable: Any] = [
            NotificationKey.insertedIdentifiers.rawValue: Set(newIdentifiers),
            NotificationKey.updatedIdentifiers.rawValue: Set(updatedIDs),
            NotificationKey.deletedIdentifiers.rawValue: Set(deletedIDs),
        ]
        saveGeneration &+= 1
        // Results and history observers follow the save before it returns: one relaxed
        // atomic load when the container has none.
        if !core.observers.isEmpty {
            var event = SaveEvent(inserted: newIdentifiers, updated: updatedIDs, deleted: deletedIDs, author: author)
            event.updated.append(contentsOf: reregister.keys)
            core.observers.post(event)
        }
        NotificationCenter.default.post(name: ModelContext.didSave, object: self, userInfo: userInfo)
    }
}
