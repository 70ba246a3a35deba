import Foundation

/// Where a store that keeps its records on disk can read one back: a 64-bit value that
/// only the store that made it interprets. The table holds it in a ``StoredRow`` and hands it
/// back to the store's ``SnapshotSource``; the log store packs a block's file offset and a
/// slot into it (`RecordLocation`, in `Stores/Log`).
public struct RowLocation: Hashable, Sendable {
    /// The store's encoding of the place.
    public let rawValue: UInt64

    /// A location the store encoded as `rawValue`.
    public init(rawValue: UInt64) { self.rawValue = rawValue }
}

/// A record as a ``SnapshotTable`` holds it: its snapshot, or where a store that keeps its
/// records on disk can read it back.
public enum StoredRow: Sendable {
    /// The record itself, held in memory.
    case snapshot(DefaultSnapshot)
    /// Where the store can read the record back.
    case location(RowLocation)

    /// Where the record is, for a row held by location.
    var recordLocation: RowLocation? {
        if case .location(let location) = self { return location }
        return nil
    }
}

/// The rows a save's writes put in a table, by write position: where a log store wrote
/// each one, or, for a save that takes another back, the rows as the table held them.
/// A million-record save's locations take 8 bytes each, where rows would take 24.
enum StoredRows: Sendable {
    case locations([RowLocation])
    case rows([StoredRow])

    func row(at position: Int) -> StoredRow {
        switch self {
        case .locations(let locations): .location(locations[position])
        case .rows(let rows): rows[position]
        }
    }
}
