import BTree
import Foundation
import IndexKey

extension SnapshotTable {
    /// The changes a validated save will make.
    public struct PreparedSave: Sendable {
        var deletes: [(entity: String, key: Int64)] = []
        var writes: SaveWrites = []
        /// What it changes, for the history (``SnapshotTable/history(of:updates:)``).
        var history = SaveHistory()
        /// The permanent identifier of each inserted snapshot, in the request's order.
        public internal(set) var insertedIdentifiers: [PersistentIdentifier] = []
        /// The request's inserted snapshots, whose identifiers those replace.
        var inserted: [DefaultSnapshot] = []
        /// Temporary identifiers and the permanent ones that replace them, built when read.
        public var remapped: [PersistentIdentifier: PersistentIdentifier] {
            Dictionary(
                zip(inserted, insertedIdentifiers).lazy.map { ($0.persistentIdentifier, $1) },
                uniquingKeysWith: { _, later in later })
        }

        /// The save's answer to `request`, which it was prepared from.
        func result(storeIdentifier: String, request: DataStoreSaveChangesRequest<DefaultSnapshot>)
            -> DataStoreSaveChangesResult<DefaultSnapshot>
        {
            DataStoreSaveChangesResult(
                for: storeIdentifier, request: request, insertedIdentifiers: insertedIdentifiers,
                snapshotsToReregister: reregister, deletedIdentifiers: batchDeleted)
        }
        /// The records the request's batch deletes matched, which the save deletes too.
        var batchDeleted: [PersistentIdentifier] = []
        /// Records an upsert changed, as stored.
        public internal(set) var reregister: [PersistentIdentifier: DefaultSnapshot] = [:]
        /// The next primary key after this save.
        public internal(set) var nextPrimaryKey: Int64 = 1
        /// The snapshots as they will be stored: inserted (with permanent identifiers),
        /// updated, and the identifiers deleted. Log-structured stores write these.
        /// Built from the writes when read: a million-row save does not keep a second list.
        public var storedInserts: [DefaultSnapshot] { writes.filter { $0.isInsert }.map { $0.snapshot } }
        /// The updated snapshots, as they will be stored.
        public var storedUpdates: [DefaultSnapshot] { writes.filter { !$0.isInsert }.map { $0.snapshot } }
        /// The identifiers of the records the save deletes.
        public internal(set) var storedDeletes: [PersistentIdentifier] = []
        /// What each write puts in the table, by position in `writes`: `nil` puts the
        /// snapshot itself; a log store of version 4 or 5 puts where it wrote it.
        var storedRows: StoredRows?
        /// The stored snapshots of replaced records that the table holds by location
        /// (``SnapshotTable/loadReplaced(_:)``).
        var replaced: [RecordKey: DefaultSnapshot] = [:]

        /// Whether the save changes no record.
        var isEmpty: Bool { deletes.isEmpty && writes.isEmpty }
    }
}
