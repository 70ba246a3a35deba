import BTree
import Foundation

/// Where a log store keeps a record version (`Formats/log.md`, versions 4 and 5): the file offset
/// of its block and its slot among the block's writes, packed into one word.
public struct RecordLocation: Hashable, Sendable, CustomStringConvertible {
    /// The most writes a block may hold; slots are below it.
    public static let slotsPerBlock = 4096
    static let slotBits: UInt64 = 12
    let packed: UInt64

    /// - Precondition: `0 <= blockOffset < 2^52` and `0 <= slot < 4096`; a caller passes
    ///   only offsets and slots it has bounded (a file is never that large).
    public init(blockOffset: Int64, slot: Int) {
        packed = UInt64(blockOffset) << Self.slotBits | UInt64(slot)
    }

    /// The file offset of the block's header.
    public var blockOffset: Int64 { Int64(packed >> Self.slotBits) }
    /// The record's position among the block's writes.
    public var slot: Int { Int(packed & (1 << Self.slotBits - 1)) }

    public var description: String { "block \(blockOffset) slot \(slot)" }
}

/// A record as a ``SnapshotTable`` holds it: its snapshot, or where a store that keeps its
/// records on disk can read it back.
public enum StoredRow: Sendable {
    case snapshot(DefaultSnapshot)
    case location(RecordLocation)

    /// Where the record is, for a row held by location.
    var recordLocation: RecordLocation? {
        if case .location(let location) = self { return location }
        return nil
    }
}

/// The rows a save's writes put in a table, by write position: where a log store wrote
/// each one, or, for a save that takes another back, the rows as the table held them.
/// A million-record save's locations take 8 bytes each, where rows would take 24.
enum StoredRows: Sendable {
    case locations([RecordLocation])
    case rows([StoredRow])

    func row(at position: Int) -> StoredRow {
        switch self {
        case .locations(let locations): .location(locations[position])
        case .rows(let rows): rows[position]
        }
    }
}

/// Reads back the records a table holds by location. A ``LogStore`` of format version 4 or 5
/// gives its table one; the in-memory stores never hold a location.
public protocol SnapshotSource: AnyObject, Sendable {
    /// The record `key` of `entity` at `location`.
    /// - Throws: ``DataStoreError`` `.corruptStore` or `.ioFailure` when it cannot be read.
    func snapshot(entity: String, key: Int64, at location: RecordLocation) throws -> DefaultSnapshot

    /// The record with its `.externalStorage` values left `.null`: enough for the index
    /// keys of an entity whose indexes cover none of them, without reading their files.
    func snapshotWithoutExternalValues(entity: String, key: Int64, at location: RecordLocation) throws
        -> DefaultSnapshot

    /// The record with at least its values at `columns`, and whether it is the whole
    /// record; when it is not, the other values are `.null`. For testing a predicate that
    /// reads only those properties: a source that decodes records can skip the rest. A
    /// snapshot that is not whole is never a model's, and is never kept.
    func snapshot(entity: String, key: Int64, at location: RecordLocation, columns: SnapshotColumns) throws
        -> (snapshot: DefaultSnapshot, isWhole: Bool)

    /// Puts each record `keys[i]` of `entity` at `locations[i]` that the source can hand over
    /// without reading or decoding anything into `result[positions[i]]`, and leaves the
    /// others as they are, for the caller to read with ``snapshot(entity:key:at:)``. For a
    /// batch of rows: a log store takes its cache's lock once for many records instead of
    /// once a record. By default, none.
    func cachedSnapshots(
        entity: String, keys: [Int64], at locations: [RecordLocation], positions: [Int],
        into result: inout [DefaultSnapshot?])
}

extension SnapshotSource {
    public func cachedSnapshots(
        entity: String, keys: [Int64], at locations: [RecordLocation], positions: [Int],
        into result: inout [DefaultSnapshot?]
    ) {}

    public func snapshot(entity: String, key: Int64, at location: RecordLocation, columns: SnapshotColumns) throws
        -> (snapshot: DefaultSnapshot, isWhole: Bool)
    {
        (try snapshot(entity: entity, key: key, at: location), true)
    }

    public func snapshotWithoutExternalValues(entity: String, key: Int64, at location: RecordLocation) throws
        -> DefaultSnapshot
    {
        try snapshot(entity: entity, key: key, at: location)
    }
}

/// Which values of a snapshot a reader needs, by property position (Stowage's own, for
/// ``SnapshotSource``).
public struct SnapshotColumns: Sendable, Equatable {
    /// Positions 0 to 63, a bit each; positions from 64 on are always included.
    let mask: UInt64

    /// Every value.
    public static let all = SnapshotColumns(mask: .max)

    init(mask: UInt64) { self.mask = mask }

    /// The values at `positions`.
    public init(_ positions: some Sequence<Int>) {
        var mask: UInt64 = 0
        for position in positions where (0..<64).contains(position) {
            mask |= 1 << UInt64(position)
        }
        self.mask = mask
    }

    public var isAll: Bool { mask == .max }

    public func contains(_ position: Int) -> Bool {
        position >= 64 || (position >= 0 && mask & (1 << UInt64(position)) != 0)
    }
}

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
