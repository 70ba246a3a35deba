import Foundation

extension LogOpening {
    /// What walking the records found.
    struct Walked {
        /// The end of the valid prefix.
        var end: Int64
        /// What ended the walk before the end of the file, if anything did.
        var damage: String?
        /// The commits in the valid prefix, and the last one's transaction.
        var commits = 0
        var lastTransaction: UInt64 = 0
        /// The commits decoded in full (all of them before version 4; in version 4 and
        /// later only when no checkpoint was prefetched).
        var replay: LogReplay
        /// The last checkpoint in the valid prefix, where it starts and ends (the start of
        /// the commits when there is none), every checkpoint's bytes and the last one's.
        var checkpoint: LogCheckpoint?
        var checkpointStart: Int64
        var checkpointEnd: Int64
        var checkpointBytes: Int64 = 0
        var lastCheckpointBytes: Int64 = 0
        /// Version 4 and later: the commits before this offset (the last checkpoint's, as
        /// its frame shows) are summarized, not decoded, and those after it kept in `tail`
        /// to apply to the table the checkpoint gives.
        var summarizedBefore: Int64?
        var summary = CommitTotals()
        var tail: [LogCommit] = []

        /// What the summarized commits add up to, for checking the checkpoint after them.
        struct CommitTotals {
            var transaction: UInt64 = 0
            var nextKey: Int64 = 1
            var versions: Int64 = 0
            var commits = 0
        }

        mutating func note(_ checkpoint: LogCheckpoint, from start: Int64, to next: Int64) {
            self.checkpoint = checkpoint
            checkpointStart = start
            checkpointEnd = next
            checkpointBytes += next - start
            lastCheckpointBytes = next - start
        }

        mutating func summarize(_ found: LogCodec.CommitSummary) {
            summary.transaction = max(summary.transaction, found.transactionID)
            summary.nextKey = max(summary.nextKey, found.nextPrimaryKey)
            summary.versions += found.versions
            summary.commits += 1
            lastTransaction = max(lastTransaction, found.transactionID)
        }
    }

    /// Step 3: walks the records (``LogRecordWalk``) up to the first damage, decoding every
    /// commit and checkpoint.
    ///
    /// The last checkpoint is decoded on another thread meanwhile (``LogCheckpointPrefetch``),
    /// unless the indexes changed, and the walk takes it without reading it again when it
    /// gets there. In version 4 and later the commits before it are only summarized.
    /// - Throws: ``DataStoreError`` `.corruptStore` for damage under strict recovery, or a
    ///   read's I/O error.
    func walk(_ reconciliation: Reconciliation) throws -> Walked {
        let commitsStart = preamble.commitsStart
        var walked = Walked(
            end: commitsStart, replay: LogReplay(located: version.locatesRecords), checkpointStart: commitsStart,
            checkpointEnd: commitsStart)
        let prefetch =
            version.hasCheckpoints && !reconciliation.indexesChanged
            ? LogCheckpointPrefetch.start(
                fs, fd, from: commitsStart, fileSize: size, salt: header.salt, schema: preamble.schema,
                formatVersion: version) : nil
        // Every return below waits for it, so that it never reads a closed descriptor.
        defer { _ = try? prefetch?.checkpoint() }
        walked.summarizedBefore = version.checkpointsLocateRecords ? prefetch?.offset : nil
        let recovery = configuration.recovery
        var records = LogRecordWalk(fs, fd, fileSize: size, preamble: preamble) { offset, reason in
            if recovery == .strict { throw strictRefusal(at: offset, reason) }
        }
        while true {
            // The prefetched checkpoint passed every check the walk makes: take it without
            // reading its bytes again. If it failed, the walk reads it and reports why.
            if let prefetch, prefetch.offset == records.offset, let (found, next) = try? prefetch.checkpoint() {
                walked.note(found, from: records.offset, to: next)
                records.skip(to: next)
                continue
            }
            guard let record = try records.next() else { break }
            do {
                switch record.kind {
                case .commit: try read(commit: record, into: &walked)
                case .checkpoint:
                    let found = try record.decodeCheckpoint(schema: preamble.schema, version: version, fileSize: size)
                    walked.note(found, from: record.offset, to: record.next)
                }
            } catch {
                try records.reject(record, error.reason)
            }
        }
        walked.end = records.offset
        walked.damage = records.damage
        return walked
    }

    /// Decodes one commit: summarized before the prefetched checkpoint, kept for after it,
    /// or replayed.
    private func read(commit record: LogRecordWalk.Record, into walked: inout Walked)
        throws(LogRecordWalk.Rejection)
    {
        if let before = walked.summarizedBefore, record.offset < before {
            walked.summarize(try record.decodeCommitSummary(map: map))
        } else {
            let commit = try record.decodeCommit(map: map)
            walked.lastTransaction = max(walked.lastTransaction, commit.transactionID)
            if walked.summarizedBefore != nil { walked.tail.append(commit) } else { walked.replay.add(commit) }
        }
        walked.commits += 1
    }

    /// Decodes every commit of the valid prefix, which the walk has checked record by
    /// record: for when the checkpoint the walk relied on turns out not to be usable.
    func replayAll(_ walked: Walked) throws -> LogReplay {
        var replay = LogReplay(located: map.formatVersion.locatesRecords)
        var records = LogRecordWalk(fs, fd, fileSize: walked.end, preamble: preamble) { offset, _ in
            throw DataStoreError(.corruptStore, "\(path): the record at offset \(offset) changed while opening")
        }
        while let record = try records.next() {
            guard record.kind == .commit else { continue }
            do {
                replay.add(try record.decodeCommit(map: map))
            } catch {
                throw DataStoreError(.corruptStore, "\(path): \(error.reason)")
            }
        }
        return replay
    }
}
