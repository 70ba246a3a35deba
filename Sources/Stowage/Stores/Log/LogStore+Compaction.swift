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
            w.compactions += 1
        }
    }

    /// The bytes of record versions that later saves replaced or deleted: an estimate,
    /// as ``LogStoreConfiguration/AutomaticCompaction`` describes.
    public var deadBytes: Int64 {
        writer.withLock { w in Self.deadBytes(w, live: table.withLock { Int64($0.count) }) }
    }

    /// Compactions since the store was opened, by hand or automatic.
    public var compactionCount: Int { writer.withLock { $0.compactions } }

    /// The file's generation (`Formats/log.md`, "File header"): 0 for a new file, one more
    /// with each rewrite (compaction, erase, upgrade). For tests that count the compactions a
    /// file went through.
    @_spi(Testing) public var fileGeneration: UInt64 { writer.withLock { $0.generation } }

    /// Why the last automatic compaction failed, or `nil`. A failure before the switch to
    /// the new file leaves the store as it was; one after it makes the store refuse saves.
    public var lastAutomaticCompactionFailure: String? { writer.withLock { $0.lastAutomaticCompactionFailure } }

    static func deadBytes(_ w: WriterState, live: Int64) -> Int64 {
        // Checkpoints before the last one are dead whatever the records do.
        let supersededCheckpoints = max(0, w.checkpointBytes - w.lastCheckpointBytes)
        let commitBytes = max(0, w.end - w.dataStart - w.checkpointBytes)
        guard w.versions > 0, live < w.versions else { return supersededCheckpoints }
        let dead = Double(w.versions - live) / Double(w.versions)
        return Int64((Double(commitBytes) * dead).rounded()) + supersededCheckpoints
    }

    /// Whether a save that leaves `live` records makes the dead bytes pass the configured
    /// threshold; if so, marks a compaction scheduled (the caller starts it). Called with
    /// the writer lock held, from the save itself.
    func compactionDue(_ w: inout WriterState, live: Int) -> Bool {
        guard let policy = configuration.automaticCompaction, !w.compactionScheduled, w.unusable == nil else {
            return false
        }
        let dead = Self.deadBytes(w, live: Int64(live))
        let commitBytes = max(1, w.end - w.dataStart)
        guard dead >= policy.minimumDeadBytes, Double(dead) >= policy.deadFraction * Double(commitBytes) else {
            return false
        }
        w.compactionScheduled = true
        return true
    }

    /// Runs the compaction a save scheduled, on a background thread.
    func startAutomaticCompaction() {
        DispatchQueue.global(qos: .utility).async { [weak self] in
            self?.compactAutomatically()
        }
    }

    private func compactAutomatically() {
        writer.withLockWhenNotSyncing { w in
            defer { w.compactionScheduled = false }
            do {
                try checkWritable(w)
                try settlePending(&w)
                let current = table.withLock { $0 }
                try rewrite(&w, from: current)
                w.compactions += 1
                w.lastAutomaticCompactionFailure = nil
            } catch {
                w.lastAutomaticCompactionFailure = "\(error)"
            }
        }
    }

    /// Waits until no automatic compaction is scheduled or running: for tests and tools.
    @_spi(Testing) public func waitForAutomaticCompaction() {
        _ = writer.wait { w in w.compactionScheduled ? nil : .done }
    }

    /// The payload size at which compaction starts a new commit record.
    package static let compactionChunkSize = 4 << 20

    /// Replaces the log with one that holds `source`'s records, and the table with one that
    /// holds them where the new file has them. Called with the writer lock; `source` is
    /// the table as it is (no save can change it meanwhile).
    ///
    /// A compaction keeps the history (`Formats/log.md`, "History record"); an erase
    /// (`keepingHistory` false) leaves none.
    func rewrite(_ w: inout WriterState, from source: SnapshotTable, keepingHistory: Bool = true) throws {
        let generation = w.generation + 1
        let header = LogFormat.FileHeader(
            salt: Self.newSalt(configuration, generation: generation), generation: generation,
            version: LogFormatVersion.forNewFile(storedSchema))
        let temporary = path + ".compact"
        try fs.remove(temporary)
        guard let fd = try fs.open(temporary, mode: .createNew) else {
            throw DataStoreError(.ioFailure, "cannot create \(temporary)")
        }
        var end: Int64 = 0
        var dataStart: Int64 = 0
        var checkpointBytes: Int64 = 0
        var wroteCommit = false
        // The external values as the new file refers to them, and the files made for it.
        var external: [LogExternalSlot: LogExternalReference] = source.count == 0 ? [:] : w.external
        var created: [String] = []
        let newMap = map.with(formatVersion: header.version)
        // The new file's rows: each record's location in it, by entity, in key order.
        var rebuilt = source
        var newRows: [String: [(Int64, StoredRow)]] = [:]
        var newReader: LogRecordReader?
        do {
            let start = Self.headerBytes(
                header, storeIdentifier: identifier, createdAt: createdAt, schema: storedSchema)
            try fs.write(fd, start, at: 0)
            end = Int64(start.count)
            dataStart = end
            let lastTransaction = w.nextTransactionID - 1
            if header.version.keepsHistory, keepingHistory {
                end = try writeHistory(
                    of: w, to: fd, at: end, salt: header.salt, map: newMap, through: lastTransaction)
            }
            var writes: SaveWrites = []
            var pending = 0
            func flush(force: Bool) throws {
                guard !writes.isEmpty || force else { return }
                let commit = LogCommit(
                    transactionID: lastTransaction, timestamp: now, author: nil,
                    nextPrimaryKey: source.nextPrimaryKey, deletes: [], writes: writes)
                // Live external values keep their files; one without a file yet (a
                // version 1 file being upgraded) gets one now, before the commit.
                let values = try externalValues(of: commit, current: external, keepingCurrent: true)
                try externalFiles.write(values.files)
                created += values.files.map(\.name)
                for (slot, reference) in values.slots { external[slot] = reference }
                var encoded = try LogCodec.encodeCommit(
                    commit, map: newMap, external: values.references.isEmpty ? nil : { values.references[$0]?[$1] },
                    blockBytes: configuration.blockBytes)
                let record = encoded.takeRecord(salt: header.salt, offset: end)
                try fs.write(fd, record, at: end)
                if header.version.locatesRecords {
                    for (write, location) in zip(writes, encoded.locations(recordOffset: end)) {
                        newRows[write.entity, default: []].append((write.key, .location(location)))
                    }
                }
                end += Int64(record.count)
                wroteCommit = true
                writes.removeAll(keepingCapacity: true)
                pending = 0
            }
            for name in map.names {
                // One record at a time: records held by location are read as they go.
                try source.forEachRecord(of: name) { snapshot in
                    guard let key = snapshot.persistentIdentifier.primaryKey else { return }
                    writes.append((name, key, snapshot, true))
                    pending += 32 + snapshot.values.count * 8
                    if pending >= Self.compactionChunkSize { try flush(force: false) }
                }
            }
            // An empty store that has handed out keys still records its next key.
            try flush(force: source.count == 0 && source.nextPrimaryKey > 1)
            if header.version.locatesRecords {
                newReader = LogRecordReader(
                    fs: fs, fd: try fs.duplicate(fd), path: path, map: newMap, capacity: configuration.cacheCapacity,
                    mapsFile: configuration.readsThroughMapping)
                rebuilt.replaceRows(newRows, source: newReader)
            }
            if source.count > 0 {
                // Written in pieces as it is encoded, like the one `checkpoint()` and closing
                // write: built whole, a large store's payload and its compressed copy were
                // held at once, on top of the store and the file's new key directory.
                let (spill, _) = pieces(of: .checkpoint, fd: fd, at: end)
                let (tail, spilled) = try LogCheckpoint.spilledPayload(
                    of: rebuilt, transactionID: lastTransaction, map: newMap, versions: Int64(source.count),
                    external: external, spill: spill)
                let length: Int
                if spilled.count > 0 {
                    length = spilled.count + tail.count
                    guard length - LogFormat.frameSize <= LogFormat.maximumPayload else {
                        throw DataStoreError(
                            .unsupportedFeature, "a checkpoint of this size is larger than a log record can be")
                    }
                    if !tail.isEmpty { try fs.write(fd, tail, at: end + Int64(spilled.count)) }
                    let frame = spilled.frame(
                        type: .checkpoint, tail: tail, headroom: LogFormat.frameSize, salt: header.salt, offset: end)
                    try fs.write(fd, frame, at: end)
                } else {
                    guard tail.count <= LogFormat.maximumPayload else {
                        throw DataStoreError(
                            .unsupportedFeature,
                            "a checkpoint of \(tail.count) bytes is larger than a log record can be")
                    }
                    let record = LogFormat.frame(type: .checkpoint, payload: tail, salt: header.salt, offset: end)
                    try fs.write(fd, record, at: end)
                    length = record.count
                }
                checkpointBytes = Int64(length)
                end += Int64(length)
            }
            try fs.sync(fd)
            try fs.rename(temporary, to: path)
        } catch {
            fs.close(fd)
            try? fs.remove(temporary)
            externalFiles.removeQuietly(created)
            throw DataStoreError(
                .ioFailure, "rewriting \(path) failed before the switch; the store is unchanged",
                underlying: error)
        }
        // The new file is the log now, and the table refers to it.
        if newReader != nil { table.withLock { $0 = rebuilt } }
        fs.close(w.fd)
        w.fd = fd
        w.salt = header.salt
        w.generation = generation
        w.end = end
        w.fileSize = end
        w.dataStart = dataStart
        w.versions = Int64(source.count)
        w.formatVersion = header.version
        w.checkpointBytes = checkpointBytes
        w.lastCheckpointBytes = checkpointBytes
        w.lastCheckpointEnd = checkpointBytes > 0 ? end : dataStart
        w.lastCommitTransaction = wroteCommit ? w.nextTransactionID - 1 : 0
        w.external = external
        do {
            try fs.syncDirectory(directory)
        } catch {
            w.unusable = "the directory sync after a compaction failed (\(error)); reopen the store to go on"
            throw DataStoreError(
                .ioFailure, "syncing the directory of \(path) after the switch failed; the store refuses further saves",
                underlying: error)
        }
        // Only now does no record refer to the replaced values' files.
        externalFiles.collectGarbage(
            keeping: Set(external.map { $0.value.fileName(entityIndex: $0.key.entity, primaryKey: $0.key.key) }))
    }
}
