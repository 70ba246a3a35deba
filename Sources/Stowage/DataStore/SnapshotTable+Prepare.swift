import BTree
import Foundation
import IndexKey

extension SnapshotTable {
    /// Validates a save against the current records without changing anything. A table
    /// that holds rows by location also reads the records the save replaces
    /// (`loadReplaced(_:)`), so that ``apply(_:)`` cannot fail.
    /// - Throws: ``SwiftDataError`` `.uniqueConstraintViolation`, `.unknownModelType` or
    ///   `.modelValidationFailure`; the source's error when a replaced record cannot be read.
    public func prepare(_ request: DataStoreSaveChangesRequest<DefaultSnapshot>) throws -> PreparedSave {
        if !request.batchDeletes.isEmpty {
            let (resolved, doomed) = try resolvingBatchDeletes(request)
            var prepared = try prepare(resolved)
            prepared.batchDeleted = doomed
            return prepared
        }
        var prepared = PreparedSave()
        var nextKey = nextPrimaryKey
        // What this save does to each entity so far: the keys it deletes, and the unique
        // keys it claims and releases over the stored indexes. One object per entity, found
        // by identity for runs of one entity, so that no record hashes the entity's name.
        // The helpers below share these through one object: variables they captured were
        // boxed, and every access to them was a dynamic exclusivity check.
        let lookup = PrepareLookup()
        let expectedClaims = Swift.min(request.inserted.count + request.updated.count, 1 << 20)
        func state(_ entity: Schema.Entity) -> PrepareState {
            if let last = lookup.lastState, last.entity === entity { return last.state }
            let state =
                lookup.states[entity.name]
                ?? PrepareState(records: entities[entity.name], scope: scope(entity.name))
            lookup.states[entity.name] = state
            lookup.lastState = (entity, state)
            return state
        }

        // Snapshots come in runs of one entity: the last one found is tried first, by its
        // identifiers' scope, without hashing the entity's name.
        func entity(_ snapshot: DefaultSnapshot) throws -> Schema.Entity {
            let scope = ObjectIdentifier(snapshot.persistentIdentifier.scope)
            let name = snapshot.persistentIdentifier.entityName
            let found: Schema.Entity
            if let last = lookup.lastFound, last.scope == scope {
                found = last.entity
            } else {
                guard let entity = schema.entitiesByName[name], entities[name] != nil else {
                    throw SwiftDataError(.unknownModelType, "\(name) is not in the store's schema")
                }
                lookup.lastFound = (scope, entity)
                found = entity
            }
            let entity = found
            guard snapshot.values.count == entity.properties.count else {
                throw SwiftDataError(
                    .modelValidationFailure,
                    "\(name): a snapshot has \(snapshot.values.count) values, the schema \(entity.properties.count)")
            }
            return entity
        }
        /// The stored record, through the entity's state: looking it up in `entities`
        /// would copy the entity's records (a retain of each of their parts) every time.
        func stored(_ entity: Schema.Entity, _ key: Int64) throws -> DefaultSnapshot? {
            guard let row = state(entity).rows.value(forKey: key) else { return nil }
            return try resolve(row, entity: entity.name, key: key)
        }
        func uniqueKeys(_ entity: Schema.Entity, _ snapshot: DefaultSnapshot) -> [IndexKey] {
            state(entity).uniqueIndexes.map { $0.tupleKey(snapshot) }
        }
        func owner(_ entity: Schema.Entity, _ constraint: Int, _ key: IndexKey) -> Int64? {
            let state = state(entity)
            if constraint < state.claimed.count {
                if let pk = state.claimed[constraint][key] { return pk }
                if state.released[constraint].contains(key) { return nil }
            }
            guard constraint < state.uniqueIndexes.count,
                let pk = state.uniqueIndexes[constraint].tree.value(forKey: key)
            else { return nil }
            return state.deletedKeys.contains(pk) ? nil : pk
        }
        func ensure(_ state: PrepareState, _ count: Int) {
            if state.claimed.isEmpty {
                var maps: [[IndexKey: Int64]] = Array(repeating: [:], count: count)
                for i in maps.indices { maps[i].reserveCapacity(expectedClaims) }
                state.claimed = maps
                state.released = Array(repeating: [], count: count)
            }
        }
        func claim(_ entity: Schema.Entity, _ keys: [IndexKey], _ pk: Int64) {
            let state = state(entity)
            ensure(state, keys.count)
            for (i, key) in keys.enumerated() {
                state.claimed[i][key] = pk
                // Most saves release nothing: no need to hash the key again.
                if !state.released[i].isEmpty { state.released[i].remove(key) }
            }
        }
        func release(_ entity: Schema.Entity, _ keys: [IndexKey]) {
            let state = state(entity)
            ensure(state, keys.count)
            for (i, key) in keys.enumerated() {
                state.claimed[i][key] = nil
                state.released[i].insert(key)
            }
        }
        func violation(_ entity: Schema.Entity, _ constraint: Int, _ snapshot: DefaultSnapshot) -> SwiftDataError {
            let names = entity.uniquenessConstraints[constraint]
            let values = names.map { snapshot.value(forKey: $0, in: entity)?.description ?? "nil" }
            return SwiftDataError(
                .uniqueConstraintViolation,
                "\(entity.name): another model already has \(names.joined(separator: ", ")) = "
                    + values.joined(separator: ", "))
        }

        // With model inheritance, a uniqueness constraint declared on a class covers its
        // subclasses: a value a record of one entity of the hierarchy holds is taken for
        // the others. A clash across entities fails the save; an upsert stays within one.
        func checkPeers(_ entity: Schema.Entity, _ keys: [IndexKey], _ snapshot: DefaultSnapshot) throws {
            // Most schemas have no hierarchy: no name is hashed for them.
            guard !schema.uniquenessPeers.isEmpty, let peers = schema.uniquenessPeers[entity.name] else { return }
            for peer in peers {
                for (mine, theirs) in peer.shared where mine < keys.count {
                    guard owner(peer.entity, theirs, keys[mine]) != nil else { continue }
                    let names = entity.uniquenessConstraints[mine]
                    let values = names.map { snapshot.value(forKey: $0, in: entity)?.description ?? "nil" }
                    throw SwiftDataError(
                        .uniqueConstraintViolation,
                        "\(entity.name): a \(peer.entity.name) already has \(names.joined(separator: ", ")) = "
                            + values.joined(separator: ", ")
                            + " (the constraint covers every class of the hierarchy that has it)")
                }
            }
        }

        // Deletes first: a delete frees its unique values for inserts in the same save.
        for snapshot in request.deleted {
            let entity = try entity(snapshot)
            let id = snapshot.persistentIdentifier
            guard let pk = id.primaryKey, id.storeIdentifier == storeIdentifier,
                let stored = try stored(entity, pk),
                !state(entity).deletedKeys.contains(pk)
            else { continue }
            state(entity).deletedKeys.insert(pk)
            prepared.deletes.append((entity.name, pk))
            prepared.storedDeletes.append(id)
            if !entity.uniquenessConstraints.isEmpty { release(entity, uniqueKeys(entity, stored)) }
        }

        // Inserts: a new key, or an upsert onto the record that holds the same unique values.
        var finalValues = PendingWrites(firstNewKey: nextKey)
        let expected = request.inserted.count + request.updated.count
        finalValues.reserveCapacity(inserts: request.inserted.count, updates: request.updated.count)
        prepared.inserted = request.inserted
        prepared.insertedIdentifiers.reserveCapacity(request.inserted.count)
        prepared.writes.reserveCapacity(expected)
        for snapshot in request.inserted {
            let entity = try entity(snapshot)
            let keys = uniqueKeys(entity, snapshot)
            var target: Int64?
            for (i, key) in keys.enumerated() {
                guard let existing = owner(entity, i, key) else { continue }
                if request.uniquenessPolicy == .fail { throw violation(entity, i, snapshot) }
                if let target, target != existing { throw violation(entity, i, snapshot) }
                target = existing
            }
            let permanent: PersistentIdentifier
            if let target {
                permanent = .permanent(in: state(entity).scope, primaryKey: target)
                // The values it replaces no longer hold their unique keys.
                if let previous = finalValues[permanent] {
                    release(
                        entity,
                        uniqueKeys(entity, DefaultSnapshot(persistentIdentifier: permanent, values: previous.values)))
                } else if let stored = try stored(entity, target) {
                    release(entity, uniqueKeys(entity, stored))
                }
                let isInsert = finalValues[permanent]?.isInsert ?? false
                finalValues.set(permanent, (entity, target, snapshot.values, isInsert))
                prepared.reregister[permanent] = DefaultSnapshot(
                    persistentIdentifier: permanent, values: snapshot.values)
            } else {
                let pk = nextKey
                nextKey += 1
                permanent = .permanent(in: state(entity).scope, primaryKey: pk)
                finalValues.set(permanent, (entity, pk, snapshot.values, true))
            }
            prepared.insertedIdentifiers.append(permanent)
            if !keys.isEmpty {
                try checkPeers(entity, keys, snapshot)
                claim(entity, keys, permanent.primaryKey ?? 0)
            }
        }

        // The temporary identifiers' replacements, as a dictionary only if something needs
        // one: an update sent with a temporary identifier, or a relationship value.
        var remapped: [PersistentIdentifier: PersistentIdentifier]?
        func remapping() -> [PersistentIdentifier: PersistentIdentifier] {
            if let remapped { return remapped }
            let built = prepared.remapped
            remapped = built
            return built
        }

        // Updates: full new values for stored records.
        var updates = UpdateHistory()
        if let first = request.updated.first {
            updates.reserveCapacity(request.updated.count, properties: first.values.count)
        }
        if source != nil { prepared.replaced.reserveCapacity(request.updated.count) }
        for snapshot in request.updated {
            let entity = try entity(snapshot)
            let id =
                snapshot.persistentIdentifier.isTemporary
                ? remapping()[snapshot.persistentIdentifier] ?? snapshot.persistentIdentifier
                : snapshot.persistentIdentifier
            // This save's earlier write of the record, found once: each look-up hashed its key.
            let pending = finalValues.position(id)
            guard let pk = id.primaryKey, id.storeIdentifier == storeIdentifier else { continue }
            // The entity's state and the stored row, each found once for the record.
            let entityState = state(entity)
            let row = entityState.rows.value(forKey: pk)
            guard row != nil || pending != nil, !entityState.deletedKeys.contains(pk) else { continue }
            if !entity.uniquenessConstraints.isEmpty {
                var previous = pending.map {
                    DefaultSnapshot(persistentIdentifier: id, values: finalValues.write(at: $0).values)
                }
                if previous == nil, let row {
                    let found = try resolve(row, entity: entity.name, key: pk)
                    previous = found
                    // A record read back by location is kept for `loadReplaced`, which then
                    // does not read it a second time.
                    if source != nil { prepared.replaced[RecordKey(entity: entity.name, key: pk)] = found }
                }
                // Unchanged unique values stay this record's: nothing to release or claim.
                // Most updates leave them alone, which comparing the values shows without
                // encoding a key.
                let unchanged =
                    previous.map { Self.sameUniqueValues(entityState.uniqueIndexes, $0.values, snapshot.values) }
                    ?? false
                if !unchanged {
                    let keys = uniqueKeys(entity, snapshot)
                    let oldKeys = previous.map { uniqueKeys(entity, $0) }
                    if oldKeys != keys {
                        if let oldKeys { release(entity, oldKeys) }
                        for (i, key) in keys.enumerated() {
                            if let existing = owner(entity, i, key), existing != pk {
                                throw violation(entity, i, snapshot)
                            }
                        }
                        try checkPeers(entity, keys, snapshot)
                        claim(entity, keys, pk)
                    }
                }
            }
            let isInsert = pending.map { finalValues.write(at: $0).isInsert } ?? false
            if !isInsert {
                // The history's changed values, compared here with the stored record in
                // hand; an update of a record written earlier in the save, or held by
                // location, waits for `history(of:updates:)`.
                if pending == nil, case .snapshot(let old)? = row {
                    updates.add(finalValues.count, old: old.values, new: snapshot.values)
                } else {
                    updates.defer(pending ?? finalValues.count)
                }
            }
            finalValues.set(id, (entity, pk, snapshot.values, isInsert), at: pending)
        }

        // Relationship values that point at temporary identifiers now point at permanent ones.
        for (id, final) in finalValues.inOrder {
            var stored = DefaultSnapshot(persistentIdentifier: id, values: final.values)
            if !request.inserted.isEmpty, stored.values.contains(where: \.mayHoldIdentifiers) {
                stored = stored.copy(persistentIdentifier: id, remappedIdentifiers: remapping())
            }
            prepared.writes.append((final.entity.name, final.key, stored, final.isInsert))
            if !prepared.reregister.isEmpty, prepared.reregister[id] != nil { prepared.reregister[id] = stored }
        }
        prepared.nextPrimaryKey = nextKey
        // A table that holds rows by location reads the records the save replaces now,
        // while the save may still fail, so that applying it never reads.
        if source != nil { try loadReplaced(&prepared) }
        prepared.history = history(of: prepared, updates: updates)
        return prepared
    }
}

/// The writes ``SnapshotTable/prepare(_:)`` has settled on so far, in the order each record
/// was first written, found by identifier. A new record's key is the next one handed out,
/// so its write is found by its key's offset from the first new key, in an array; only
/// writes onto stored records (upserts and updates) are found through a dictionary. A 1M-row
/// import so hashes no identifier here.
struct PendingWrites {
    typealias Write = (entity: Schema.Entity, key: Int64, values: [SnapshotValue], isInsert: Bool)
    private(set) var inOrder: [(id: PersistentIdentifier, write: Write)] = []
    /// The first key this save hands out.
    let firstNewKey: Int64
    /// The position in `inOrder` of the write of key `firstNewKey + i`.
    private var newPositions: [Int] = []
    /// The positions of writes to other keys: the updates, and inserts that upsert. An
    /// update save hashes one key per record, with one mix instead of `Hasher`.
    private var positions: [StoreNumber: Int] = [:]

    init(firstNewKey: Int64) { self.firstNewKey = firstNewKey }

    /// Room for a save's writes: grown one doubling at a time, the positions of a save of
    /// 1000 updates were rehashed ten times over.
    mutating func reserveCapacity(inserts: Int, updates: Int) {
        inOrder.reserveCapacity(inserts + updates)
        newPositions.reserveCapacity(inserts)
        if updates > 0 { positions.reserveCapacity(updates) }
    }

    /// Where the write of `id` is. Keys are unique across the table's entities; the
    /// identifier itself must match too.
    func position(_ id: PersistentIdentifier) -> Int? {
        guard let key = id.primaryKey else { return nil }
        let found: Int?
        if key >= firstNewKey, key - firstNewKey < Int64(newPositions.count) {
            found = newPositions[Int(key - firstNewKey)]
        } else {
            found = positions[StoreNumber(key)]
        }
        guard let found, inOrder[found].id == id else { return nil }
        return found
    }

    subscript(id: PersistentIdentifier) -> Write? {
        position(id).map { inOrder[$0].write }
    }

    /// The write at `position` (from ``position(_:)``).
    func write(at position: Int) -> Write { inOrder[position].write }

    /// How many records the save writes so far: the position the next new one takes.
    var count: Int { inOrder.count }

    /// Records `write` for `id`, in place of an earlier one.
    mutating func set(_ id: PersistentIdentifier, _ write: Write) {
        set(id, write, at: position(id))
    }

    /// Records `write` for `id`, in place of the earlier one at `position` when it has one:
    /// `position` is what ``position(_:)`` said of `id`, with no write set since.
    mutating func set(_ id: PersistentIdentifier, _ write: Write, at position: Int?) {
        if let found = position {
            inOrder[found].write = write
            return
        }
        inOrder.append((id, write))
        if write.key >= firstNewKey, write.key - firstNewKey == Int64(newPositions.count) {
            newPositions.append(inOrder.count - 1)
        } else {
            positions[StoreNumber(write.key)] = inOrder.count - 1
        }
    }
}

/// One entity's part of ``SnapshotTable/prepare(_:)``: its stored records, and what the
/// save does to them so far.
/// What `prepare`'s helpers share: each entity's state, the last one asked for, and the
/// last entity a snapshot named. Only `prepare` touches one, on one thread.
final class PrepareLookup {
    @exclusivity(unchecked) var states: [String: PrepareState] = [:]
    @exclusivity(unchecked) var lastState: (entity: Schema.Entity, state: PrepareState)?
    @exclusivity(unchecked) var lastFound: (scope: ObjectIdentifier, entity: Schema.Entity)?
}

final class PrepareState {
    /// The entity's stored rows, and its unique indexes in constraint order: taken out of
    /// its records once, as reading them through the records for each look-up copied them
    /// whole, a retain of each of their parts.
    let rows: RowDirectory
    let uniqueIndexes: [EntityIndex]
    let scope: IdentifierScope
    // Only `prepare` touches one, on one thread: no dynamic exclusivity checks.
    /// Primary keys the save deletes.
    @exclusivity(unchecked) var deletedKeys: Set<Int64> = []
    /// For each uniqueness constraint, the keys the save gives to a record, and those it
    /// takes from the stored records; empty until the first claim or release.
    @exclusivity(unchecked) var claimed: [[IndexKey: Int64]] = []
    @exclusivity(unchecked) var released: [Set<IndexKey>] = []

    init(records: SnapshotTable.EntityRecords?, scope: IdentifierScope) {
        self.rows = records?.rows ?? RowDirectory()
        self.uniqueIndexes = records.map { records in records.uniqueIndex.map { records.indexes[$0] } } ?? []
        self.scope = scope
    }
}

extension SnapshotTable {
    /// `request` with the stored records its batch deletes match added to its deletes (and
    /// taken out of its updates), and those records' identifiers. The queries see the table
    /// as it is before the save, so a record the same save inserts is not deleted.
    func resolvingBatchDeletes(_ request: DataStoreSaveChangesRequest<DefaultSnapshot>) throws
        -> (DataStoreSaveChangesRequest<DefaultSnapshot>, [PersistentIdentifier])
    {
        var deleted = request.deleted
        var already = Set(deleted.lazy.map(\.persistentIdentifier))
        var doomed: [PersistentIdentifier] = []
        for query in request.batchDeletes {
            for snapshot in try fetch(query) where already.insert(snapshot.persistentIdentifier).inserted {
                deleted.append(snapshot)
                doomed.append(snapshot.persistentIdentifier)
            }
        }
        let updated =
            doomed.isEmpty ? request.updated : request.updated.filter { !already.contains($0.persistentIdentifier) }
        let resolved = DataStoreSaveChangesRequest(
            editingState: request.editingState, inserted: request.inserted, updated: updated, deleted: deleted,
            uniquenessPolicy: request.uniquenessPolicy)
        return (resolved, doomed)
    }
}
