import Foundation

extension LogStore {
    /// The writer's side: the file, where the valid prefix ends, and whether saves may go on.
    struct WriterState {
        var fd: Int32
        var lockFD: Int32
        var salt: UInt64
        var generation: UInt64
        /// The end of the valid prefix: where the next record goes.
        var end: Int64
        /// The file's size as this writer left it: `end`, or past it by the reserved zero
        /// tail (`LogStoreConfiguration.reservedTail`). 0 until known, which reads as `end`.
        var fileSize: Int64 = 0
        var nextTransactionID: UInt64
        /// Why the store refuses saves, once it does.
        var unusable: String?
        var closed = false

        // Dead-byte accounting, for automatic compaction.
        /// Where the commits start: the end of the header record.
        var dataStart: Int64 = 0
        /// Record versions written since the file was last written from scratch: every
        /// write and every delete of every commit in the file.
        var versions: Int64 = 0
        /// An automatic compaction is scheduled or running.
        var compactionScheduled = false
        /// Compactions done since the store was opened, by hand or automatically.
        var compactions = 0
        /// Why the last automatic compaction failed, if it did.
        var lastAutomaticCompactionFailure: String?
        /// The file's format version: checkpoints are written to version 3 files only.
        var formatVersion: LogFormatVersion = LogFormat.version
        /// The bytes of every checkpoint record in the file, and of the last one.
        var checkpointBytes: Int64 = 0
        var lastCheckpointBytes: Int64 = 0
        /// Where the last checkpoint ends; `dataStart` when there is none.
        var lastCheckpointEnd: Int64 = 0
        /// The transaction of the file's last commit; 0 when the file has none (a new or
        /// erased store), which is what a checkpoint then records.
        var lastCommitTransaction: UInt64 = 0
        /// Where every live external value's bytes are (format version 2).
        var external: [LogExternalSlot: LogExternalReference] = [:]

        // Group commit (durability `.full`).
        /// The sequence number of the last save appended.
        var appended: UInt64 = 0
        /// Every save up to this sequence number is durable.
        var durable: UInt64 = 0
        /// Whether a thread is in `fdatasync` now (without the lock).
        var syncing = false
        /// Saves appended and applied but not yet durable, oldest first.
        var pending: [LogPendingSave] = []
        /// Set when a sync fails: every save not yet durable fails with it.
        var syncFailure: String?
        /// The commit syncs performed: fewer than the saves when saves shared them.
        var syncs = 0
    }
}
