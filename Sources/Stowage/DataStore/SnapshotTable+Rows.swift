import Foundation

/// One record of a table: its entity and primary key.
struct RecordKey: Hashable, Sendable {
    var entity: String
    var key: Int64

    static func == (lhs: RecordKey, rhs: RecordKey) -> Bool {
        lhs.key == rhs.key && lhs.entity == rhs.entity
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(key)
    }

    /// Mixes the key alone, without `Hasher`: a save keeps a set and a dictionary of these
    /// per record, and keys within an entity are distinct (see `PersistentIdentifier`).
    func _rawHashValue(seed: Int) -> Int {
        keyHash(UInt64(bitPattern: key), seed: seed)
    }
}

/// Finds the rows of one entity after another: the entity's records are copied out of the
/// table (a retain of each of their parts) once per run of that entity, not once per row.
struct RowLookup {
    private let table: SnapshotTable
    private var entity: String?
    private var records: SnapshotTable.EntityRecords?

    init(_ table: SnapshotTable) { self.table = table }

    mutating func row(_ entity: String, _ key: Int64) -> StoredRow? {
        if self.entity != entity {
            self.entity = entity
            records = table.entities[entity]
        }
        return records?.rows.value(forKey: key)
    }
}

extension SnapshotTable {
    /// Reads the stored snapshot of every record `prepared` replaces (updates and deletes)
    /// that the table holds by location, into `prepared.replaced`, so that applying it,
    /// which cannot fail, never has to read. Only index keys are taken from them, so the
    /// files of external values are not read unless an index covers one (an old value's
    /// file may already be gone).
    func loadReplaced(_ prepared: inout PreparedSave) throws {
        var coversExternal: [String: Bool] = [:]
        var rows = RowLookup(self)
        func load(_ entity: String, _ key: Int64) throws {
            let id = RecordKey(entity: entity, key: key)
            guard prepared.replaced[id] == nil, let row = rows.row(entity, key),
                case .location(let location) = row, let source
            else { return }
            let external = coversExternal[entity] ?? indexesCoverExternalValues(of: entity)
            coversExternal[entity] = external
            prepared.replaced[id] =
                external
                ? try source.snapshot(entity: entity, key: key, at: location)
                : try source.snapshotWithoutExternalValues(entity: entity, key: key, at: location)
        }
        for (entity, key) in prepared.deletes { try load(entity, key) }
        for (entity, key, _, isInsert) in prepared.writes where !isInsert { try load(entity, key) }
    }

    /// Whether an index of `entity` covers an `.externalStorage` attribute: then its keys
    /// need the external values, not only what the log holds.
    func indexesCoverExternalValues(of entity: String) -> Bool {
        guard entities[entity] != nil, let found = schema.entitiesByName[entity] else { return false }
        return !Self.indexedExternalPositions(of: found).isEmpty
    }

    /// The positions of `entity`'s external-storage properties that one of its indexes or
    /// uniqueness constraints covers (the columns each ``EntityIndex`` is made with): their
    /// values are needed to build and update those indexes.
    static func indexedExternalPositions(of entity: Schema.Entity) -> Set<Int> {
        var positions = Set<Int>()
        for name in (entity.uniquenessConstraints + entity.indices).joined() {
            guard let property = entity.property(named: name),
                property.attribute?.options.contains(.externalStorage) == true
            else { continue }
            positions.insert(property.index)
        }
        return positions
    }

    /// The snapshot a row that `prepared` replaces held, for taking its index entries out.
    func replacedSnapshot(_ row: StoredRow, _ entity: String, _ key: Int64, _ prepared: PreparedSave)
        -> DefaultSnapshot?
    {
        switch row {
        case .snapshot(let snapshot): return snapshot
        case .location: return prepared.replaced[RecordKey(entity: entity, key: key)]
        }
    }

    /// Replaces every entity's rows with `rows` (ascending keys, one per record), keeping
    /// the indexes: after a rewrite moved every record. `source` reads the new rows.
    mutating func replaceRows(_ rows: [String: [(Int64, StoredRow)]], source: (any SnapshotSource)?) {
        for name in Array(entities.keys) {
            entities[name]?.rows = RowDirectory(sortedElements: rows[name] ?? [])
        }
        self.source = source
    }

    /// The snapshot of a row: the row's own, or read back from the table's source.
    func resolve(_ row: StoredRow, entity: String, key: Int64) throws -> DefaultSnapshot {
        switch row {
        case .snapshot(let snapshot):
            return snapshot
        case .location(let location):
            guard let source else {
                throw DataStoreError(
                    .corruptStore, "\(entity) record \(key) is stored at \(location), but the table has no source")
            }
            return try source.snapshot(entity: entity, key: key, at: location)
        }
    }

    /// The snapshot of a row with at least its values at `columns`, and whether it is the
    /// whole record (see ``SnapshotSource/snapshot(entity:key:at:columns:)``): only for
    /// testing a predicate.
    func resolve(_ row: StoredRow, entity: String, key: Int64, columns: SnapshotColumns) throws
        -> (snapshot: DefaultSnapshot, isWhole: Bool)
    {
        guard !columns.isAll, case .location(let location) = row, let source else {
            return (try resolve(row, entity: entity, key: key), true)
        }
        return try source.snapshot(entity: entity, key: key, at: location, columns: columns)
    }

    /// The stored record `key` of `entity`, if there is one.
    func stored(_ entity: String, _ key: Int64) throws -> DefaultSnapshot? {
        // Read in place: `entities[entity]` would copy the entity's records (a retain of
        // each of their parts) for one look-up.
        guard let position = entities.index(forKey: entity), let row = entities.values[position].rows.value(forKey: key)
        else { return nil }
        return try resolve(row, entity: entity, key: key)
    }
}
