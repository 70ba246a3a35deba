import Foundation

/// Reads back the records a table holds by location (``StoredRow/location(_:)``). A store that
/// keeps its records on disk (the log store, from format version 4) gives its table one; the
/// in-memory stores never hold a location.
public protocol SnapshotSource: AnyObject, Sendable {
    /// The record `key` of `entity` at `location`.
    /// - Throws: ``DataStoreError`` `.corruptStore` or `.ioFailure` when it cannot be read.
    func snapshot(entity: String, key: Int64, at location: RowLocation) throws -> DefaultSnapshot

    /// The record with its `.externalStorage` values left `.null`: enough for the index
    /// keys of an entity whose indexes cover none of them, without reading their files.
    func snapshotWithoutExternalValues(entity: String, key: Int64, at location: RowLocation) throws
        -> DefaultSnapshot

    /// The record with at least its values at `columns`, and whether it is the whole
    /// record; when it is not, the other values are `.null`. For testing a predicate that
    /// reads only those properties: a source that decodes records can skip the rest. A
    /// snapshot that is not whole is never a model's, and is never kept.
    func snapshot(entity: String, key: Int64, at location: RowLocation, columns: SnapshotColumns) throws
        -> (snapshot: DefaultSnapshot, isWhole: Bool)

    /// Puts each record `keys[i]` of `entity` at `locations[i]` that the source can hand over
    /// without reading or decoding anything into `result[positions[i]]`, and leaves the
    /// others as they are, for the caller to read with ``snapshot(entity:key:at:)``. For a
    /// batch of rows: a log store takes its cache's lock once for many records instead of
    /// once a record. By default, none.
    func cachedSnapshots(
        entity: String, keys: [Int64], at locations: [RowLocation], positions: [Int],
        into result: inout [DefaultSnapshot?])

    /// Hands `body` each record `keys[i]` of `entity` at `locations[i]`, in order, with at
    /// least its values at `columns` and whether it is the whole record, as
    /// ``snapshot(entity:key:at:columns:)`` would: for a run of rows, where a source can
    /// read the records of one block together. By default, one by one.
    func forEachSnapshot(
        entity: String, keys: [Int64], at locations: [RowLocation], columns: SnapshotColumns,
        _ body: (Int, DefaultSnapshot, Bool) throws -> Void) throws
}

extension SnapshotSource {
    /// The default: each record in turn, through ``snapshot(entity:key:at:columns:)``.
    public func forEachSnapshot(
        entity: String, keys: [Int64], at locations: [RowLocation], columns: SnapshotColumns,
        _ body: (Int, DefaultSnapshot, Bool) throws -> Void
    ) throws {
        for i in locations.indices {
            let (snapshot, isWhole) = try self.snapshot(
                entity: entity, key: keys[i], at: locations[i], columns: columns)
            try body(i, snapshot, isWhole)
        }
    }

    /// The default hands over nothing: the caller reads every record.
    public func cachedSnapshots(
        entity: String, keys: [Int64], at locations: [RowLocation], positions: [Int],
        into result: inout [DefaultSnapshot?]
    ) {}

    /// The default reads the whole record, whatever `columns` asks for.
    public func snapshot(entity: String, key: Int64, at location: RowLocation, columns: SnapshotColumns) throws
        -> (snapshot: DefaultSnapshot, isWhole: Bool)
    {
        (try snapshot(entity: entity, key: key, at: location), true)
    }

    /// The default reads the whole record, external values included.
    public func snapshotWithoutExternalValues(entity: String, key: Int64, at location: RowLocation) throws
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

    /// Whether every value is needed.
    public var isAll: Bool { mask == .max }

    /// Whether the value at `position` is needed.
    public func contains(_ position: Int) -> Bool {
        position >= 64 || (position >= 0 && mask & (1 << UInt64(position)) != 0)
    }
}
