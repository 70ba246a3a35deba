import Foundation

extension LogStore {
    /// Rewrites the log with only the live records: into `<file>.compact`, synced, renamed
    /// over the log, then the directory synced. A crash at any step leaves the old file or
    /// the new one, never a mix.
    /// - Throws: ``DataStoreError`` `.ioFailure` (the store is unchanged when the failure
    ///   comes before the rename), `.storeUnusable` after an earlier failure.
    public func compact() throws {
        try writer.withLockWhenNotSyncing { w in
            try checkWritable(w)
            try settlePending(&w)
            let current = table.withLock { $0 }
            try rewrite(&w, from: current)
        }
    }

    /// The payload size at which compaction starts a new commit record.
    static let compactionChunkSize = 4 << 20

    /// Replaces the log with one that holds `source`'s records. Called with the writer lock.
    func rewrite(_ w: inout WriterState, from source: SnapshotTable) throws {
        let generation = w.generation + 1
        let header = LogFormat.FileHeader(
            salt: Self.newSalt(configuration, generation: generation), generation: generation)
        let temporary = path + ".compact"
        try fs.remove(temporary)
        guard let fd = try fs.open(temporary, mode: .createNew) else {
            throw DataStoreError(.ioFailure, "cannot create \(temporary)")
        }
        var end: Int64 = 0
        do {
            let start = Self.headerBytes(
                header, storeIdentifier: identifier, createdAt: createdAt, schema: storedSchema)
            try fs.write(fd, start, at: 0)
            end = Int64(start.count)
            let lastTransaction = w.nextTransactionID - 1
            var writes: [(entity: String, key: Int64, snapshot: DefaultSnapshot, isInsert: Bool)] = []
            var pending = 0
            func flush(force: Bool) throws {
                guard !writes.isEmpty || force else { return }
                let commit = LogCommit(
                    transactionID: lastTransaction, timestamp: now, author: nil,
                    nextPrimaryKey: source.nextPrimaryKey, deletes: [], writes: writes)
                let record = LogFormat.frame(
                    type: .commit, payload: try LogCodec.encodeCommit(commit, map: map), salt: header.salt, offset: end)
                try fs.write(fd, record, at: end)
                end += Int64(record.count)
                writes.removeAll(keepingCapacity: true)
                pending = 0
            }
            for name in map.names {
                for snapshot in source.allSnapshots(of: name) {
                    guard let key = snapshot.persistentIdentifier.primaryKey else { continue }
                    writes.append((name, key, snapshot, true))
                    pending += 32 + snapshot.values.count * 8
                    if pending >= Self.compactionChunkSize { try flush(force: false) }
                }
            }
            // An empty store that has handed out keys still records its next key.
            try flush(force: source.count == 0 && source.nextPrimaryKey > 1)
            try fs.sync(fd)
            try fs.rename(temporary, to: path)
        } catch {
            fs.close(fd)
            try? fs.remove(temporary)
            throw DataStoreError(
                .ioFailure, "rewriting \(path) failed before the switch; the store is unchanged",
                underlying: error)
        }
        // The new file is the log now.
        fs.close(w.fd)
        w.fd = fd
        w.salt = header.salt
        w.generation = generation
        w.end = end
        do {
            try fs.syncDirectory(directory)
        } catch {
            w.unusable = "the directory sync after a compaction failed (\(error)); reopen the store to go on"
            throw DataStoreError(
                .ioFailure, "syncing the directory of \(path) after the switch failed; the store refuses further saves",
                underlying: error)
        }
    }
}
