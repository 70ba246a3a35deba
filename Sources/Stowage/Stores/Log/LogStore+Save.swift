import Foundation

// A save: validated against the table, written as one commit record (with its external
// values' files first), then applied to the table (`Formats/log.md`, "Writing").
extension LogStore {
    /// Validates a save, appends it as one commit record and applies it; with `.full`
    /// durability, returns only after an `fdatasync` that covers the record (shared with
    /// concurrent saves). A save that throws changed nothing.
    public func save(_ request: DataStoreSaveChangesRequest<DefaultSnapshot>) throws -> DataStoreSaveChangesResult<
        DefaultSnapshot
    > {
        let (prepared, ticket, compact) = try writer.withLock { w in
            try commit(&w, author: request.editingState.author) { try $0.prepare(request) }
        }
        defer { if compact { startAutomaticCompaction() } }
        if let ticket { try waitUntilDurable(ticket) }
        return prepared.result(storeIdentifier: identifier, request: request)
    }

    /// Deletes the records a request's predicate matches, as one commit.
    public func delete<T: PersistentModel>(_ request: DataStoreBatchDeleteRequest<T>) throws {
        _ = try save(.batchDelete(request))
    }

    /// Validates a save, appends its commit record and applies it to the table. Called with
    /// the writer lock held, so the table cannot change in between. With `.full`
    /// durability it returns a ticket to pass to ``waitUntilDurable(_:)`` before the save
    /// may return; the table change is taken back if that sync fails. `compact` says that
    /// the save left enough dead bytes to schedule an automatic compaction, which the
    /// caller starts once the save is done.
    private func commit(
        _ w: inout WriterState, author: String?, prepare: (SnapshotTable) throws -> SnapshotTable.PreparedSave
    ) throws -> (SnapshotTable.PreparedSave, ticket: UInt64?, compact: Bool) {
        try checkWritable(w)
        var prepared = try table.withLock { try prepare($0) }
        if prepared.isEmpty { return (prepared, nil, false) }
        let located = w.formatVersion.locatesRecords
        var commit = LogCommit(
            prepared, transactionID: w.nextTransactionID, timestamp: now, author: author)
        commit.history.writer = .current(or: configuration.historyWriter)
        let external = try externalValues(of: commit, current: w.external)
        try externalFiles.write(external.files)
        let start = w.end
        // A large commit goes to the file in pieces as it is encoded, its frame last.
        let (spill, spilledAny) = pieces(of: .commit, fd: w.fd, at: start)
        do {
            var encoded = try LogCodec.encodeCommit(
                commit, map: map.with(formatVersion: w.formatVersion),
                external: external.references.isEmpty ? nil : { external.references[$0]?[$1] },
                keepContents: located ? configuration.cacheCapacity : 0, spill: located ? spill : nil,
                blockBytes: configuration.blockBytes)
            if encoded.spilled.count > 0 {
                let (tail, frame) = encoded.finishSpilled(salt: w.salt, offset: start)
                try appendSpilled(&w, spilled: encoded.spilled.count, tail: tail, frame: frame)
            } else {
                try append(&w, type: .commit, record: encoded.takeRecord(salt: w.salt, offset: w.end))
            }
            if located {
                // The table holds where the writes are; the cache holds what they are.
                prepared.storedRows = .locations(encoded.locations(recordOffset: start))
                reader?.remember(
                    encoded.cachedBlocks(recordOffset: start, writes: commit.writes))
            }
        } catch {
            // Pieces of a commit that failed are cut off the end of the file again.
            if spilledAny() { cutBack(&w, to: start) }
            externalFiles.removeQuietly(external.files.map(\.name))
            throw error
        }
        for (slot, reference) in external.slots { w.external[slot] = reference }
        w.lastCommitTransaction = w.nextTransactionID
        w.nextTransactionID += 1
        w.versions += Int64(commit.deletes.count + commit.writes.count)
        guard configuration.durability == .full else {
            let live = table.withLock { table in
                table.apply(prepared)
                return table.count
            }
            return (prepared, nil, compactionDue(&w, live: live))
        }
        let (replacedRows, previousKey, live) = table.withLock { table in
            let previousKey = table.nextPrimaryKey
            var replacedRows: [StoredRow?]? = []
            table.apply(prepared, replacedRows: &replacedRows)
            return (replacedRows ?? [], previousKey, table.count)
        }
        w.appended += 1
        w.pending.append(
            LogPendingSave(
                sequence: w.appended, start: start, previousNextPrimaryKey: previousKey, deletes: prepared.deletes,
                writes: prepared.writes, replacedRows: replacedRows, replaced: prepared.replaced,
                writesHeldByLocation: prepared.storedRows != nil))
        return (prepared, w.appended, compactionDue(&w, live: live))
    }

    /// The external values a commit writes (`Formats/log.md`, "External values"): the
    /// references to encode by write and property position, the new files, and the slots
    /// as they stand after the commit (deletes first, then writes, as replay applies them).
    /// An unchanged value refers to its existing file again. With `keepingCurrent` (a
    /// compaction, whose writes are the live records as they are) every value that has a
    /// file refers to it again, as `Formats/log.md` says, and only a value without one gets
    /// a file: a new file would take the name of the one the old log still refers to when
    /// the last commit wrote it, and a failed write would remove that file.
    func externalValues(
        of commit: LogCommit, current: [LogExternalSlot: LogExternalReference], keepingCurrent: Bool = false
    ) throws -> (
        references: [Int: [Int: LogExternalReference]], files: [(name: String, bytes: Data)],
        slots: [(LogExternalSlot, LogExternalReference?)]
    ) {
        guard map.external.contains(where: { !$0.isEmpty }) else { return ([:], [], []) }
        var references: [Int: [Int: LogExternalReference]] = [:]
        var files: [(name: String, bytes: Data)] = []
        var slots: [(LogExternalSlot, LogExternalReference?)] = []
        for (entity, key) in commit.deletes {
            guard let e = map.indexByName[entity] else { continue }
            for p in map.external[e] { slots.append((LogExternalSlot(entity: e, key: key, property: p), nil)) }
        }
        for (position, write) in commit.writes.enumerated() {
            guard let e = map.indexByName[write.entity], !map.external[e].isEmpty else { continue }
            let stored = write.isInsert ? nil : try table.withLock { try $0.stored(write.entity, write.key) }
            for p in map.external[e] where p < write.snapshot.values.count {
                let slot = LogExternalSlot(entity: e, key: write.key, property: p)
                guard case .data(let bytes) = write.snapshot.values[p], !bytes.isEmpty else {
                    slots.append((slot, nil))
                    continue
                }
                if let old = current[slot], old.byteCount == UInt64(bytes.count),
                    keepingCurrent || stored?.values[p] == .data(bytes)
                {
                    references[position, default: [:]][p] = old
                    slots.append((slot, old))
                    continue
                }
                let reference = LogExternalReference(
                    property: p, transactionID: commit.transactionID, byteCount: UInt64(bytes.count),
                    checksum: LogExternalFiles.checksum(bytes))
                let name = reference.fileName(entityIndex: e, primaryKey: write.key)
                files.removeAll { $0.name == name }
                files.append((name, bytes))
                references[position, default: [:]][p] = reference
                slots.append((slot, reference))
            }
        }
        return (references, files, slots)
    }

    func checkWritable(_ w: WriterState) throws {
        if let reason = w.unusable {
            throw DataStoreError(.storeUnusable, "the log store at \(path) refuses saves: \(reason)")
        }
    }
}
