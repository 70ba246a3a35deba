import Foundation

extension LogStore {
    /// Appends a checkpoint record (`Formats/log.md`, format version 3): the live keys and
    /// every index's sorted entries, so that the next open loads the indexes instead of
    /// building them. With `.full` durability it is synced before this returns.
    ///
    /// Stowage goes further than SwiftData here, which has no such call. The store also
    /// writes checkpoints by itself when it closes and when it compacts
    /// (``LogStoreConfiguration/checkpoints``).
    /// - Throws: ``DataStoreError`` `.unsupportedFeature` for a version 1 or 2 file (call
    ///   ``compact()`` first, which rewrites it as version 3), `.ioFailure` when the write
    ///   or sync fails (the record is cut back off, nothing else changes),
    ///   `.storeUnusable` after an earlier failure.
    public func checkpoint() throws {
        try writer.withLockWhenNotSyncing { w in
            try checkWritable(w)
            guard w.formatVersion.hasCheckpoints else {
                throw DataStoreError(
                    .unsupportedFeature,
                    "\(path) is log format version \(w.formatVersion), which has no checkpoints; compact() "
                        + "rewrites it as version \(LogFormat.version)")
            }
            try settlePending(&w)
            try appendCheckpoint(&w)
            try syncAppended(&w, "a checkpoint")
        }
    }

    /// Syncs a record just appended outside a save (a checkpoint, a deletion of history)
    /// when the durability is `.full`. A failed sync makes the store refuse further saves:
    /// the kernel may have dropped the dirty pages, and a retry would not say so.
    func syncAppended(_ w: inout WriterState, _ what: String) throws {
        guard configuration.durability == .full else { return }
        do {
            try fs.sync(w.fd)
        } catch {
            w.unusable = "fdatasync failed (\(error)); reopen the store to go on"
            throw DataStoreError(
                .ioFailure, "syncing \(what) in \(path) failed; the store refuses further saves", underlying: error)
        }
    }

    /// The checkpoint records in the file: how many bytes they take, and whether the file
    /// ends with one. For tests and tools.
    @_spi(Testing) public var checkpointState: (bytes: Int64, endsWithCheckpoint: Bool) {
        writer.withLock { w in (w.checkpointBytes, w.checkpointBytes > 0 && w.lastCheckpointEnd == w.end) }
    }

    /// Appends a checkpoint of the table as it is now. Called with the writer lock held
    /// and no save pending; syncing is the caller's business.
    ///
    /// A checkpoint larger than `commitChunkBytes` goes to the file in pieces as it is
    /// written, raw, its frame last, as a large commit does (`Formats/log.md`, "Checkpoint
    /// records"): a smaller one is compressed whole. The table stays locked while the
    /// pieces are written.
    func appendCheckpoint(_ w: inout WriterState) throws {
        let version = w.formatVersion
        let start = w.end
        let (spill, spilledAny) = pieces(of: .checkpoint, fd: w.fd, at: start)
        do {
            let (bytes, spilled) = try table.withLock {
                try LogCheckpoint.spilledPayload(
                    of: $0, transactionID: w.lastCommitTransaction, map: map.with(formatVersion: version),
                    versions: w.versions, external: w.external, spill: spill)
            }
            if spilled.count > 0 {
                let frame = spilled.frame(
                    type: .checkpoint, tail: bytes, headroom: LogFormat.frameSize, salt: w.salt, offset: start)
                try appendSpilled(&w, type: .checkpoint, spilled: spilled.count, tail: bytes, frame: frame)
            } else {
                try append(&w, type: .checkpoint, payload: bytes)
            }
        } catch {
            // Pieces of a checkpoint that failed are cut off the end of the file again.
            if spilledAny() { cutBack(&w, to: start) }
            throw error
        }
        w.checkpointBytes += w.end - start
        w.lastCheckpointBytes = w.end - start
        w.lastCheckpointEnd = w.end
    }

    /// On close: a checkpoint when enough commits came after the last one. A failure is
    /// dropped (the next open builds the indexes from the records instead).
    func checkpointOnClose(_ w: inout WriterState) {
        guard let policy = configuration.checkpoints, w.formatVersion.hasCheckpoints, w.unusable == nil,
            w.pending.isEmpty, w.end > w.lastCheckpointEnd,
            w.end - w.lastCheckpointEnd >= policy.minimumCommitBytes
        else { return }
        do {
            try appendCheckpoint(&w)
            if configuration.durability == .full { try fs.sync(w.fd) }
        } catch {
            return
        }
    }
}
