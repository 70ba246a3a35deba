import Foundation

/// One save, as a commit record holds it (`Formats/log.md`).
package struct LogCommit {
    package var transactionID: UInt64
    package var timestamp: Int64
    package var author: String?
    package var nextPrimaryKey: Int64
    package var deletes: [(entity: String, key: Int64)]
    package var writes: SaveWrites
    /// External references read by ``LogCodec/decodeCommit(_:map:)``, by write position:
    /// the property's value slot holds `.null` until the store reads the file.
    package var externalReferences: [Int: [LogExternalReference]] = [:]
    /// Version 4: where each write is, by position, once decoded from a file.
    package var locations: [RecordLocation] = []
    /// Version 6: what its updates changed and its deletes' preserved values.
    var history = SaveHistory()

    package init(
        transactionID: UInt64, timestamp: Int64, author: String?, nextPrimaryKey: Int64,
        deletes: [(entity: String, key: Int64)], writes: SaveWrites,
        externalReferences: [Int: [LogExternalReference]] = [:], locations: [RecordLocation] = []
    ) {
        self.transactionID = transactionID
        self.timestamp = timestamp
        self.author = author
        self.nextPrimaryKey = nextPrimaryKey
        self.deletes = deletes
        self.writes = writes
        self.externalReferences = externalReferences
        self.locations = locations
    }
}

extension LogCommit {
    /// The commit that records a prepared save.
    init(_ prepared: SnapshotTable.PreparedSave, transactionID: UInt64, timestamp: Int64, author: String?) {
        self.init(
            transactionID: transactionID, timestamp: timestamp, author: author,
            nextPrimaryKey: prepared.nextPrimaryKey, deletes: prepared.deletes, writes: prepared.writes)
        history = prepared.history
    }
}
