import Foundation

/// The in-memory state every store keeps: records by entity and primary key, unique
/// constraint maps, and the code that evaluates fetches and applies saves over them.
///
/// It is a value: a store holds one behind a lock, applies a save to it only after the
/// whole save has been validated, and so never shows half a save.
public struct SnapshotTable: Sendable {
    /// One entity's records.
    struct EntityRecords: Sendable {
        var rows: [Int64: DefaultSnapshot] = [:]
        /// Primary keys in insertion order, or `nil` when it must be rebuilt.
        var order: [Int64]? = []
        /// One map per uniqueness constraint: the constrained values to the primary key.
        var unique: [[[SnapshotValue]: Int64]] = []
    }

    /// The schema the records follow.
    public let schema: Schema
    /// The store identifier written into permanent identifiers.
    public let storeIdentifier: String
    var entities: [String: EntityRecords] = [:]
    /// The next primary key to hand out.
    public private(set) var nextPrimaryKey: Int64 = 1

    public init(schema: Schema, storeIdentifier: String) {
        self.schema = schema
        self.storeIdentifier = storeIdentifier
        for entity in schema.entities {
            var records = EntityRecords()
            records.unique = Array(repeating: [:], count: entity.uniquenessConstraints.count)
            entities[entity.name] = records
        }
    }

    /// The number of records of every entity.
    public var count: Int { entities.values.reduce(0) { $0 + $1.rows.count } }

    /// Every record of `entityName`, in primary-key order.
    public func allSnapshots(of entityName: String) -> [DefaultSnapshot] {
        guard let records = entities[entityName] else { return [] }
        return orderedKeys(records).compactMap { records.rows[$0] }
    }

    func orderedKeys(_ records: EntityRecords) -> [Int64] {
        records.order ?? records.rows.keys.sorted()
    }

    /// The record for an identifier, if it exists.
    /// - Complexity: O(1).
    public func snapshot(for id: PersistentIdentifier) -> DefaultSnapshot? {
        guard let key = id.primaryKey, id.storeIdentifier == storeIdentifier else { return nil }
        return entities[id.entityName]?.rows[key]
    }

    // MARK: Fetching

    /// The records that match `query`, sorted, after offset and limit.
    /// - Complexity: O(*n* log *n*) for *n* records of the entity, O(*n*) without sorting.
    public func fetch(_ query: FetchQuery) throws -> [DefaultSnapshot] {
        var matches = try filter(query, stopAfter: query.sort.isEmpty ? query.limit.map { $0 + query.offset } : nil)
        if !query.sort.isEmpty {
            matches = stableSorted(matches, query)
        }
        return window(matches, query)
    }

    /// How many records match `query`.
    public func count(_ query: FetchQuery) throws -> Int {
        let all = try filter(query, stopAfter: nil).count
        let afterOffset = max(0, all - query.offset)
        return query.limit.map { min($0, afterOffset) } ?? afterOffset
    }

    func window(_ matches: [DefaultSnapshot], _ query: FetchQuery) -> [DefaultSnapshot] {
        let start = min(query.offset, matches.count)
        let end = query.limit.map { min(matches.count, start + $0) } ?? matches.count
        return start == 0 && end == matches.count ? matches : Array(matches[start..<end])
    }

    func stableSorted(_ items: [DefaultSnapshot], _ query: FetchQuery) -> [DefaultSnapshot] {
        items.enumerated().sorted { a, b in
            if query.areInIncreasingOrder(a.element, b.element) { return true }
            if query.areInIncreasingOrder(b.element, a.element) { return false }
            return a.offset < b.offset
        }.map(\.element)
    }

    func filter(_ query: FetchQuery, stopAfter: Int?) throws -> [DefaultSnapshot] {
        guard let records = entities[query.entity.name] else {
            throw SwiftDataError(.unknownModelType, "\(query.entity.name) is not in the store's schema")
        }
        let candidates: [DefaultSnapshot]
        if let ids = query.identifiers {
            candidates = ids.sorted().compactMap { snapshot(for: $0) }.filter { $0.persistentIdentifier.entityName == query.entity.name }
        } else {
            candidates = orderedKeys(records).compactMap { records.rows[$0] }
        }
        guard let predicate = query.predicate else {
            if let stopAfter { return Array(candidates.prefix(stopAfter)) }
            return candidates
        }
        var evaluator = QueryEvaluator(resolve: { self.snapshot(for: $0) })
        var result: [DefaultSnapshot] = []
        for candidate in candidates {
            if try evaluator.matches(candidate, predicate, root: query.rootVariable) {
                result.append(candidate)
                if let stopAfter, result.count >= stopAfter { break }
            }
        }
        return result
    }

    // MARK: Saving

    /// The changes a validated save will make.
    public struct PreparedSave: Sendable {
        var deletes: [(entity: String, key: Int64)] = []
        var writes: [(entity: String, key: Int64, snapshot: DefaultSnapshot, isInsert: Bool)] = []
        public internal(set) var remapped: [PersistentIdentifier: PersistentIdentifier] = [:]
        public internal(set) var reregister: [PersistentIdentifier: DefaultSnapshot] = [:]
        var nextPrimaryKey: Int64 = 1
        /// The snapshots as they will be stored: inserted (with permanent identifiers),
        /// updated, and the identifiers deleted. Log-structured stores write these.
        public internal(set) var storedInserts: [DefaultSnapshot] = []
        public internal(set) var storedUpdates: [DefaultSnapshot] = []
        public internal(set) var storedDeletes: [PersistentIdentifier] = []
    }

    /// Validates a save against the current records without changing anything.
    /// - Throws: ``SwiftDataError`` `.uniqueConstraintViolation`, `.unknownModelType` or
    ///   `.modelValidationFailure`.
    public func prepare(_ request: DataStoreSaveChangesRequest) throws -> PreparedSave {
        var prepared = PreparedSave()
        var nextKey = nextPrimaryKey
        var deletedKeys: [String: Set<Int64>] = [:]
        // Unique keys added and removed by this save, over the stored maps.
        var added: [String: [[[SnapshotValue]: Int64]]] = [:]
        var removed: [String: [Set<[SnapshotValue]>]] = [:]

        func entity(_ snapshot: DefaultSnapshot) throws -> Schema.Entity {
            let name = snapshot.persistentIdentifier.entityName
            guard let entity = schema.entitiesByName[name], entities[name] != nil else {
                throw SwiftDataError(.unknownModelType, "\(name) is not in the store's schema")
            }
            guard snapshot.values.count == entity.properties.count else {
                throw SwiftDataError(
                    .modelValidationFailure,
                    "\(name): a snapshot has \(snapshot.values.count) values, the schema \(entity.properties.count)")
            }
            return entity
        }
        func uniqueKeys(_ entity: Schema.Entity, _ snapshot: DefaultSnapshot) -> [[SnapshotValue]] {
            entity.uniquenessConstraints.map { names in names.map { snapshot.value(forKey: $0, in: entity) ?? .null } }
        }
        func owner(_ entity: Schema.Entity, _ constraint: Int, _ key: [SnapshotValue]) -> Int64? {
            if let pk = added[entity.name]?[constraint][key] { return pk }
            if removed[entity.name]?[constraint].contains(key) == true { return nil }
            guard let pk = entities[entity.name]?.unique[constraint][key] else { return nil }
            return deletedKeys[entity.name]?.contains(pk) == true ? nil : pk
        }
        func claim(_ entity: Schema.Entity, _ keys: [[SnapshotValue]], _ pk: Int64) {
            if added[entity.name] == nil {
                added[entity.name] = Array(repeating: [:], count: keys.count)
                removed[entity.name] = Array(repeating: [], count: keys.count)
            }
            for (i, key) in keys.enumerated() {
                added[entity.name]![i][key] = pk
                removed[entity.name]![i].remove(key)
            }
        }
        func release(_ entity: Schema.Entity, _ keys: [[SnapshotValue]]) {
            if added[entity.name] == nil {
                added[entity.name] = Array(repeating: [:], count: keys.count)
                removed[entity.name] = Array(repeating: [], count: keys.count)
            }
            for (i, key) in keys.enumerated() {
                added[entity.name]![i][key] = nil
                removed[entity.name]![i].insert(key)
            }
        }
        func violation(_ entity: Schema.Entity, _ constraint: Int, _ key: [SnapshotValue]) -> SwiftDataError {
            let names = entity.uniquenessConstraints[constraint]
            return SwiftDataError(
                .uniqueConstraintViolation,
                "\(entity.name): another model already has \(names.joined(separator: ", ")) = "
                    + key.map(\.description).joined(separator: ", "))
        }

        // Deletes first: a delete frees its unique values for inserts in the same save.
        for snapshot in request.deleted {
            let entity = try entity(snapshot)
            let id = snapshot.persistentIdentifier
            guard let pk = id.primaryKey, id.storeIdentifier == storeIdentifier,
                let stored = entities[entity.name]?.rows[pk]
            else { continue }
            deletedKeys[entity.name, default: []].insert(pk)
            prepared.deletes.append((entity.name, pk))
            prepared.storedDeletes.append(id)
            if !entity.uniquenessConstraints.isEmpty { release(entity, uniqueKeys(entity, stored)) }
        }

        // Inserts: a new key, or an upsert onto the record that holds the same unique values.
        var finalValues: [PersistentIdentifier: (entity: Schema.Entity, key: Int64, values: [SnapshotValue], isInsert: Bool)] = [:]
        var writeOrder: [PersistentIdentifier] = []
        for snapshot in request.inserted {
            let entity = try entity(snapshot)
            let keys = uniqueKeys(entity, snapshot)
            var target: Int64?
            for (i, key) in keys.enumerated() {
                guard let existing = owner(entity, i, key) else { continue }
                if request.uniquenessPolicy == .fail { throw violation(entity, i, key) }
                if let target, target != existing { throw violation(entity, i, key) }
                target = existing
            }
            let permanent: PersistentIdentifier
            if let target {
                permanent = .permanent(entityName: entity.name, storeIdentifier: storeIdentifier, primaryKey: target)
                // The values it replaces no longer hold their unique keys.
                if let previous = finalValues[permanent] {
                    release(entity, uniqueKeys(entity, DefaultSnapshot(persistentIdentifier: permanent, values: previous.values)))
                } else if let stored = entities[entity.name]?.rows[target] {
                    release(entity, uniqueKeys(entity, stored))
                }
                let isInsert = finalValues[permanent]?.isInsert ?? false
                finalValues[permanent] = (entity, target, snapshot.values, isInsert)
                prepared.reregister[permanent] = DefaultSnapshot(persistentIdentifier: permanent, values: snapshot.values)
            } else {
                let pk = nextKey
                nextKey += 1
                permanent = .permanent(entityName: entity.name, storeIdentifier: storeIdentifier, primaryKey: pk)
                finalValues[permanent] = (entity, pk, snapshot.values, true)
            }
            if !writeOrder.contains(permanent) { writeOrder.append(permanent) }
            prepared.remapped[snapshot.persistentIdentifier] = permanent
            claim(entity, keys, permanent.primaryKey ?? 0)
        }

        // Updates: full new values for stored records.
        for snapshot in request.updated {
            let entity = try entity(snapshot)
            let id = prepared.remapped[snapshot.persistentIdentifier] ?? snapshot.persistentIdentifier
            guard let pk = id.primaryKey, id.storeIdentifier == storeIdentifier,
                entities[entity.name]?.rows[pk] != nil || finalValues[id] != nil,
                deletedKeys[entity.name]?.contains(pk) != true
            else { continue }
            let previous = finalValues[id].map { DefaultSnapshot(persistentIdentifier: id, values: $0.values) }
                ?? entities[entity.name]?.rows[pk]
            if let previous, !entity.uniquenessConstraints.isEmpty { release(entity, uniqueKeys(entity, previous)) }
            let keys = uniqueKeys(entity, snapshot)
            for (i, key) in keys.enumerated() {
                if let existing = owner(entity, i, key), existing != pk { throw violation(entity, i, key) }
            }
            claim(entity, keys, pk)
            let isInsert = finalValues[id]?.isInsert ?? false
            finalValues[id] = (entity, pk, snapshot.values, isInsert)
            if !writeOrder.contains(id) { writeOrder.append(id) }
        }

        // Relationship values that point at temporary identifiers now point at permanent ones.
        for id in writeOrder {
            guard let final = finalValues[id] else { continue }
            let stored = DefaultSnapshot(persistentIdentifier: id, values: final.values)
                .copy(persistentIdentifier: id, remappedIdentifiers: prepared.remapped)
            prepared.writes.append((final.entity.name, final.key, stored, final.isInsert))
            if final.isInsert { prepared.storedInserts.append(stored) } else { prepared.storedUpdates.append(stored) }
            if prepared.reregister[id] != nil { prepared.reregister[id] = stored }
        }
        prepared.nextPrimaryKey = nextKey
        return prepared
    }

    /// Applies a prepared save. It cannot fail.
    public mutating func apply(_ prepared: PreparedSave) {
        for (name, key) in prepared.deletes {
            guard let entity = schema.entitiesByName[name], let old = entities[name]?.rows.removeValue(forKey: key) else {
                continue
            }
            removeUniqueKeys(entity, old)
            entities[name]?.order = nil
        }
        for (name, key, snapshot, _) in prepared.writes {
            guard let entity = schema.entitiesByName[name] else { continue }
            if let old = entities[name]?.rows[key] {
                removeUniqueKeys(entity, old)
            } else if entities[name]?.order != nil {
                entities[name]?.order?.append(key)
            }
            entities[name]?.rows[key] = snapshot
            for (i, names) in entity.uniquenessConstraints.enumerated() {
                let k = names.map { snapshot.value(forKey: $0, in: entity) ?? .null }
                entities[name]?.unique[i][k] = key
            }
        }
        for name in Array(entities.keys) where entities[name]?.order == nil {
            let keys = entities[name]?.rows.keys.sorted()
            entities[name]?.order = keys
        }
        nextPrimaryKey = max(nextPrimaryKey, prepared.nextPrimaryKey)
    }

    private mutating func removeUniqueKeys(_ entity: Schema.Entity, _ snapshot: DefaultSnapshot) {
        for (i, names) in entity.uniquenessConstraints.enumerated() {
            let k = names.map { snapshot.value(forKey: $0, in: entity) ?? .null }
            if entities[entity.name]?.unique[i][k] == snapshot.persistentIdentifier.primaryKey {
                entities[entity.name]?.unique[i][k] = nil
            }
        }
    }

    /// Removes every record.
    public mutating func removeAll() {
        self = SnapshotTable(schema: schema, storeIdentifier: storeIdentifier)
    }
}
