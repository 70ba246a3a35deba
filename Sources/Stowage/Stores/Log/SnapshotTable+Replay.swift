extension SnapshotTable {
    /// Whether a prepared save changes any record.
    static func isEmpty(_ prepared: PreparedSave) -> Bool {
        prepared.deletes.isEmpty && prepared.writes.isEmpty
    }

    /// The commit that records a prepared save.
    static func commit(
        _ prepared: PreparedSave, transactionID: UInt64, timestamp: Int64, author: String?
    ) -> LogCommit {
        LogCommit(
            transactionID: transactionID, timestamp: timestamp, author: author,
            nextPrimaryKey: prepared.nextPrimaryKey, deletes: prepared.deletes, writes: prepared.writes)
    }
}
