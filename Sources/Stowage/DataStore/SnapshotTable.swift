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
    /// The history of a store that keeps it with its records (the memory and JSON stores),
    /// in the order saved; `nil` for a store that keeps it elsewhere (the log store's file).
    var history: [HistoryEntry]?
    /// The transaction identifier the next entry of ``history`` takes.
    var nextHistoryTransaction: Int64 = 1

    /// An empty table for `schema`'s entities, whose records get identifiers of the store
    /// `storeIdentifier`.
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
        // The others are read a run at a time, which a source may read a block at a time.
        var positions: [Int] = []
        var keys: [Int64] = []
        var locations: [RowLocation] = []
        for i in pending.positions.indices where result[pending.positions[i]] == nil {
            positions.append(pending.positions[i])
            keys.append(pending.keys[i])
            locations.append(pending.locations[i])
        }
        try source.forEachSnapshot(entity: entity, keys: keys, at: locations, columns: .all) { i, snapshot, _ in
            result[positions[i]] = snapshot
        }
        pending.positions.removeAll(keepingCapacity: true)
        pending.keys.removeAll(keepingCapacity: true)
        pending.locations.removeAll(keepingCapacity: true)
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
}
