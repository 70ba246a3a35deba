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
                fs, fd, from: commitsStart, fileSize: size, salt: header.salt, schema: fileSchema,
                formatVersion: version, frames: frames) : nil
        // Every return below waits for it, so that it never reads a closed descriptor.
        defer { _ = try? prefetch?.checkpoint() }
        walked.summarizedBefore = version.checkpointsLocateRecords ? prefetch?.offset : nil
        let recovery = configuration.recovery
        let decoding = decodingLayouts(reconciliation)
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
            do throws(LogRecordWalk.Rejection) {
                switch record.kind {
                case .commit: try read(commit: record, into: &walked, layouts: decoding)
                case .checkpoint:
                    // Every layout keeps the indexes and external values: the last one reads it.
                    let found = try record.decodeCheckpoint(schema: fileSchema, version: version, fileSize: size)
                    walked.note(found, from: record.offset, to: record.next)
                case .layout:
                    // Read from the frames before the walk; one that was not is damage.
                    guard layouts.layouts.contains(where: { $0.start == record.next }) else {
                        throw LogRecordWalk.Rejection(
                            "the layout record at offset \(record.offset) does not decode: "
                                + layoutProblem(record))
                    }
                case .history:
                    // Checked (frame and checksum) and otherwise left to history reads.
                    continue
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
    private func read(commit record: LogRecordWalk.Record, into walked: inout Walked, layouts: LogLayouts)
        throws(LogRecordWalk.Rejection)
    {
        if let before = walked.summarizedBefore, record.offset < before {
            walked.summarize(try record.decodeCommitSummary(map: map))
        } else {
            // Decoded in its own layout, its writes carried to the last.
            let commit = layouts.converted(
                try record.decodeCommit(map: layouts.map(at: record.offset)), at: record.offset)
            walked.lastTransaction = max(walked.lastTransaction, commit.transactionID)
            if walked.summarizedBefore != nil { walked.tail.append(commit) } else { walked.replay.add(commit) }
        }
        walked.commits += 1
    }

    /// Decodes every commit of the valid prefix, which the walk has checked record by
    /// record: for when the checkpoint the walk relied on turns out not to be usable.
    func replayAll(_ walked: Walked, _ reconciliation: Reconciliation) throws -> LogReplay {
        let layouts = decodingLayouts(reconciliation)
        var replay = LogReplay(located: map.formatVersion.locatesRecords)
        var records = LogRecordWalk(fs, fd, fileSize: walked.end, preamble: preamble) { offset, _ in
            throw DataStoreError(.corruptStore, "\(path): the record at offset \(offset) changed while opening")
        }
        while let record = try records.next() {
            guard record.kind == .commit else { continue }
            do {
                replay.add(
                    layouts.converted(try record.decodeCommit(map: layouts.map(at: record.offset)), at: record.offset))
            } catch {
                throw DataStoreError(.corruptStore, "\(path): \(error.reason)")
            }
        }
        return replay
    }
}

extension LogOpening {
    /// Why a layout record the frames did not yield fails: it does not decode against the
    /// layout before it, or the frames stopped before it.
    func layoutProblem(_ record: LogRecordWalk.Record) -> String {
        let previous = layouts.layout(at: record.offset)
        do {
            _ = try LogLayoutRecord.decode(record.payload, previous: previous.schema, map: previous.map)
            return "the file changed while it was opened"
        } catch {
            return "\(error)"
        }
    }
}
