import Foundation

// Group commit: saves with `.full` durability wait for an `fdatasync` that started after
// their record was written; one sync covers every save appended before it.
extension LogStore {
    /// Returns once the save with sequence number `ticket` is durable: after an
    /// `fdatasync` that started after its record was written. The first thread to find no
    /// sync in flight performs one for every save appended so far; the others wait for it.
    /// - Throws: ``DataStoreError/ioFailure`` when the sync covering the save (or one
    ///   before it) failed; the save has then been taken back out of the table.
    func waitUntilDurable(_ ticket: UInt64) throws {
        while true {
            let step = writer.wait { w -> LogWriter.Step? in
                if w.durable >= ticket { return .done }
                if let failure = w.syncFailure { return .failed(failure) }
                if w.closed { return .failed("the store was closed before the save was synced") }
                if w.syncing { return nil }
                w.syncing = true
                return .sync(fd: w.fd, target: w.appended)
            }
            switch step {
            case .done:
                return
            case .failed(let reason):
                throw DataStoreError(
                    .ioFailure,
                    "syncing a commit of \(path) failed (\(reason)); the save was not made durable and "
                        + "the store refuses further saves")
            case .sync(let fd, let target):
                // Without the lock: other saves append meanwhile, and wait for the next sync.
                var failure: (any Error)?
                do { try fs.sync(fd) } catch { failure = error }
                writer.update { w in
                    w.syncing = false
                    w.syncs += 1
                    if let failure {
                        failPending(&w, failure)
                    } else {
                        markDurable(&w, through: target)
                    }
                }
            }
        }
    }

    private func markDurable(_ w: inout WriterState, through target: UInt64) {
        w.durable = max(w.durable, target)
        let covered = w.pending.prefix { $0.sequence <= target }.count
        w.pending.removeFirst(covered)
    }

    /// After a failed sync the kernel may have dropped the dirty pages: never retry and
    /// carry on. Every save not yet durable fails: its change leaves the table, and its
    /// record is cut off the file if that can be done.
    private func failPending(_ w: inout WriterState, _ error: any Error) {
        w.syncFailure = "\(error)"
        w.unusable = "fdatasync failed (\(error)); reopen the store to go on"
        let pending = w.pending
        w.pending = []
        table.withLock { LogPendingSave.revert(pending, in: &$0) }
        if let first = pending.first {
            if (try? fs.truncate(w.fd, to: first.start)) != nil { w.fileSize = first.start }
            w.end = first.start
        }
    }

    /// Makes every pending save durable with one sync, holding the lock (no sync may be in
    /// flight): before a rewrite or a close.
    func settlePending(_ w: inout WriterState) throws {
        guard !w.pending.isEmpty else { return }
        w.syncs += 1
        do {
            try fs.sync(w.fd)
        } catch {
            failPending(&w, error)
            throw DataStoreError(
                .ioFailure, "syncing the pending commits of \(path) failed; the store refuses further saves",
                underlying: error)
        }
        markDurable(&w, through: w.appended)
    }
}
