import Foundation
import Synchronization

/// The default on-disk store: an append-only log of checksummed commit records.
///
/// `ModelConfiguration(url:)` and `ModelContainer(for:)` open one; so does
/// ``LogStoreConfiguration``, which also chooses durability and recovery. The file format
/// is `Formats/log.md`.
///
/// - A save is one commit record, written with one write and (by default) `fdatasync`ed
///   before the save returns. It is visible after a crash if and only if the whole record
///   is valid.
/// - Opening replays the log into memory, checking every record's CRC32C. A torn or
///   damaged tail is cut off (``LogStoreConfiguration/Recovery/pointInTime``) or refused
///   (``LogStoreConfiguration/Recovery/strict``).
/// - One process at a time: the store holds an exclusive `flock` on `<file>.lock`.
///   A second opener, in this process or another, gets ``DataStoreError/storeLocked``.
///   Stores opened read-only (``LogStoreConfiguration/allowsSave`` `false`) take a
///   shared lock instead, which they share with each other, and write nothing.
/// - A schema that differs from the file's only in ways that need no migration plan opens
///   (`Formats/log.md`, "Opening and recovery": new entities, optional or defaulted properties, removed
///   and renamed properties, indexes and uniqueness constraints): the records are
///   converted, the indexes built from them, an added constraint checked against them, and
///   the file rewritten with the new schema. Stowage's counterpart of SwiftData's
///   lightweight migration; a migration plan's stages are not run.
/// - ``compact()`` rewrites the live records into a new file and renames it into place.
///
/// In format versions 4 and 5 the store keeps in memory the primary keys with where each record
/// is in the file (the key directory) and the indexes; records are read back with `pread`,
/// one block at a time, through a cache bounded by ``LogStoreConfiguration/cacheCapacity``.
/// Files of versions 1 to 3 keep every record in memory until a compaction rewrites them.
/// Checkpoints, written on close and compaction, let opening load the key directory and
/// the indexes instead of decoding the records. Concurrent saves
/// share syncs (group commit): each appends its record in turn, and one `fdatasync`
/// covers every record appended before it started.
public final class LogStore: SnapshotTableStore, DataStoreBatching {
    public let configuration: LogStoreConfiguration
    public let identifier: String
    public let schema: Schema
    /// What opening had to cut off the end of the file, or `nil` when the file was whole.
    public let lastRecovery: RecoveryReport?
    /// When the store was created, in milliseconds since 1970.
    public let createdAt: Int64
    /// Whether opening loaded the indexes from a checkpoint instead of building them.
    @_spi(Testing) public let openedFromCheckpoint: Bool

    let fs: any StoreFileSystem
    let path: String
    let directory: String
    let map: LogEntityMap
    let storedSchema: StoredSchema
    let table: Mutex<SnapshotTable>
    let writer: LogWriter
    /// `<file>.blobs/`: the external values.
    let externalFiles: LogExternalFiles

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

    /// What opening found when the end of the log was torn or damaged.
    public struct RecoveryReport: Sendable, Hashable, CustomStringConvertible {
        /// The bytes kept: the file's length after recovery, or, when ``leftInFile``, the
        /// length of the prefix that was read.
        public let validLength: Int64
        /// The bytes cut off the end, or, when ``leftInFile``, left unread at the end.
        public let droppedBytes: Int64
        /// What was wrong at `validLength`.
        public let reason: String
        /// The commits replayed from the valid prefix.
        public let commitsReplayed: Int
        /// Whether the dropped bytes are still in the file: a store opened read-only
        /// (``LogStoreConfiguration/allowsSave`` `false`) reads the valid prefix and cuts
        /// nothing. The next store to open the file for writing cuts them off. Stowage's
        /// addition.
        public let leftInFile: Bool

        init(validLength: Int64, droppedBytes: Int64, reason: String, commitsReplayed: Int, leftInFile: Bool = false) {
            self.validLength = validLength
            self.droppedBytes = droppedBytes
            self.reason = reason
            self.commitsReplayed = commitsReplayed
            self.leftInFile = leftInFile
        }

        public var description: String {
            leftInFile
                ? "read \(validLength) bytes (\(commitsReplayed) commits), ignored the last \(droppedBytes), "
                    + "left in the file (read-only): \(reason)"
                : "kept \(validLength) bytes (\(commitsReplayed) commits), dropped \(droppedBytes): \(reason)"
        }
    }

    /// Opens the store at the configuration's URL, creating it (and its directory) if
    /// there is no file there.
    /// - Throws: ``DataStoreError`` `.storeLocked`, `.wrongFormat`, `.corruptStore`,
    ///   `.schemaMismatch` or `.ioFailure`.
    public init(_ configuration: LogStoreConfiguration, migrationPlan: (any SchemaMigrationPlan.Type)?) throws {
        guard let schema = configuration.schema else {
            throw DataStoreError(.unsupportedFeature, "a LogStoreConfiguration needs a schema")
        }
        let url = URL(fileURLWithPath: StorePath.followingLink(configuration.url.standardizedFileURL.path))
        let opened = try Self.open(
            path: url.path, directory: url.deletingLastPathComponent().path, schema: schema,
            configuration: configuration)
        self.configuration = configuration
        self.schema = schema
        self.fs = configuration.fileSystem
        self.path = url.path
        self.directory = url.deletingLastPathComponent().path
        self.identifier = opened.map.storeIdentifier
        self.map = opened.map
        self.storedSchema = opened.description
        self.createdAt = opened.createdAt
        self.lastRecovery = opened.report
        self.openedFromCheckpoint = opened.usedCheckpoint
        self.table = Mutex(opened.table)
        self.writer = LogWriter(opened.writer)
        self.externalFiles = LogExternalFiles(
            fs: configuration.fileSystem, logPath: url.path, parent: url.deletingLastPathComponent().path)
        if opened.needsUpgrade {
            // A version 1 file cannot hold external references, and a file whose header lists
            // other indexes would have checkpoints of the wrong ones: rewrite it now.
            do {
                try compact()
            } catch {
                // Closing writes no checkpoint of these indexes into the old file.
                writer.withLock { if $0.unusable == nil { $0.unusable = "opening failed" } }
                close()
                throw error
            }
        }
    }

    deinit {
        close()
        // Free the records, indexes and cache now rather than as the properties go, so
        // that a large store's memory can go back to the system below.
        let count = table.withLock { table in
            let count = table.count
            table = SnapshotTable(schema: table.schema, storeIdentifier: table.storeIdentifier)
            return count
        }
        if count >= Self.trimAfterRecords { releaseFreedMemory() }
    }

    /// Records a store must have held for its closing to hand freed memory back.
    static let trimAfterRecords = 100_000

    /// Closes the file and releases the lock. Reads still answer from memory; saves throw
    /// ``DataStoreError/storeUnusable``. Dropping the store closes it too.
    public func close() {
        writer.withLockWhenNotSyncing { w in
            guard !w.closed else { return }
            // Saves still waiting for their sync get it (or its failure) now.
            try? settlePending(&w)
            checkpointOnClose(&w)
            // A closed file ends at its last record. Not synced: after a crash the reserved
            // zeros may come back, and they read as the end of the log. A read-only store
            // leaves the file as it found it.
            if configuration.allowsSave, w.fileSize > w.end, (try? fs.truncate(w.fd, to: w.end)) != nil {
                w.fileSize = w.end
            }
            fs.close(w.fd)
            if w.lockFD >= 0 { fs.close(w.lockFD) }
            w.closed = true
            if w.unusable == nil { w.unusable = "the store was closed" }
        }
    }

    /// The length of the log file's valid prefix, in bytes.
    public var fileLength: Int64 { writer.withLock { $0.end } }

    /// The `fdatasync`s that made saves durable since the store was opened.
    @_spi(Testing) public var commitSyncCount: Int { writer.withLock { $0.syncs } }

    var now: Int64 {
        configuration.clock?() ?? Int64((Date().timeIntervalSince1970 * 1000).rounded())
    }

    // MARK: Reading

    /// The reader of records held by location (format versions 4 and 5); `nil` for older files.
    var reader: LogRecordReader? { table.withLock { $0.source as? LogRecordReader } }

    /// Blocks read from the file since the store was opened or compacted, the
    /// uncompressed bytes and blocks cached now, the reads that decoded only the values a
    /// predicate needs, and the reads of the file those block reads made (fewer than the
    /// blocks for a scan, which reads ahead): for tests and benchmarks.
    @_spi(Testing) public var readStatistics:
        (blockReads: Int, cachedBytes: Int, cachedBlocks: Int, partialReads: Int, fileReads: Int)
    {
        guard let reader else { return (0, 0, 0, 0, 0) }
        let cached = reader.cached
        return (reader.blockReads, cached.bytes, cached.blocks, reader.partialReads, reader.fileReads)
    }

    // MARK: Writing

    public func withTable<R>(_ body: (SnapshotTable) throws -> R) rethrows -> R {
        try table.withLock { try body($0) }
    }

    public func save(_ request: DataStoreSaveChangesRequest) throws -> DataStoreSaveChangesResult {
        let (prepared, ticket, compact) = try writer.withLock { w in
            try commit(&w, author: request.editingState.author) { try $0.prepare(request) }
        }
        defer { if compact { startAutomaticCompaction() } }
        if let ticket { try waitUntilDurable(ticket) }
        return prepared.result(storeIdentifier: identifier, request: request)
    }

    public func delete<T: PersistentModel>(_ request: DataStoreBatchDeleteRequest<T>) throws -> [PersistentIdentifier] {
        var doomed: [PersistentIdentifier] = []
        let (_, ticket, compact) = try writer.withLock { w in
            try commit(&w, author: request.editingState.author) { table in
                let snapshots = try table.fetch(request.query)
                doomed = snapshots.map(\.persistentIdentifier)
                return try table.prepare(
                    DataStoreSaveChangesRequest(
                        editingState: request.editingState, inserted: [], updated: [], deleted: snapshots))
            }
        }
        defer { if compact { startAutomaticCompaction() } }
        if let ticket { try waitUntilDurable(ticket) }
        return doomed
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
        // Applying never reads: what the save replaces is read now, while it may fail.
        if located { try table.withLock { try $0.loadReplaced(&prepared) } }
        let commit = LogCommit(
            prepared, transactionID: w.nextTransactionID, timestamp: now, author: author)
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
    /// An unchanged value refers to its existing file again.
    func externalValues(
        of commit: LogCommit, current: [LogExternalSlot: LogExternalReference]
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
                    case .data(let current)? = stored?.values[p], current == bytes
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

    /// Writes one record at the end of the valid prefix. Syncing is the caller's business.
    /// On failure the file is cut back to the prefix, and the in-memory state is unchanged.
    func append(_ w: inout WriterState, type: LogFormat.RecordType, payload: [UInt8]) throws {
        guard payload.count <= LogFormat.maximumPayload else {
            throw DataStoreError(
                .unsupportedFeature, "a record of \(payload.count) bytes is larger than a log record can be")
        }
        try append(&w, type: type, record: LogFormat.frame(type: type, payload: payload, salt: w.salt, offset: w.end))
    }

    /// Writes one framed record (framed for `w.end`), as ``append(_:type:payload:)`` does.
    func append(_ w: inout WriterState, type: LogFormat.RecordType, record: [UInt8]) throws {
        guard record.count - LogFormat.frameSize <= LogFormat.maximumPayload else {
            throw DataStoreError(
                .unsupportedFeature,
                "a record of \(record.count - LogFormat.frameSize) bytes is larger than a log record can be")
        }
        let recordEnd = w.end + Int64(record.count)
        // A record that runs past the reserved zeros extends the file: reserve again after
        // it, so that the next saves' syncs find the file's size unchanged. The zeros go
        // first: if either write fails and so does the truncate, the file holds zeros or a
        // torn record after the valid prefix, never a whole record of a failed save.
        let reserve =
            recordEnd > max(w.fileSize, w.end)
            ? Self.reservation(after: recordEnd, most: configuration.reservedTail) : 0
        do {
            try writeZeros(w.fd, count: reserve, at: recordEnd)
            try fs.write(w.fd, record, at: w.end)
        } catch {
            cutBack(&w, to: w.end)
            throw DataStoreError(
                .ioFailure, "writing a \(type) record at offset \(w.end) of \(path) failed; nothing was saved",
                underlying: error)
        }
        w.end = recordEnd
        w.fileSize = max(w.fileSize, recordEnd + reserve)
    }

    /// Writes the pieces of a large record of `type` that starts at `start` (`Formats/log.md`,
    /// "Large commits"), each at its place after the frame's room; `started` says whether
    /// any piece was written, so that a failure cuts the file back.
    func pieces(of type: LogFormat.RecordType, fd: Int32, at start: Int64) -> (
        spill: LogCommitSpill, started: () -> Bool
    ) {
        var started = false
        let (fs, path) = (fs, path)
        let spill = LogCommitSpill(threshold: configuration.commitChunkBytes) { bytes, at in
            guard at + bytes.count - LogFormat.frameSize <= LogFormat.maximumPayload else {
                throw DataStoreError(.unsupportedFeature, "a \(type) of this size is larger than a log record can be")
            }
            started = true
            do {
                try fs.write(fd, bytes, at: start + Int64(at))
            } catch {
                throw DataStoreError(
                    .ioFailure, "writing a \(type) record at offset \(start) of \(path) failed; nothing was saved",
                    underlying: error)
            }
        }
        return (spill, { started })
    }

    /// Finishes a commit whose first `spilled` bytes are in the file already: its reserved
    /// zeros if it grows the file, the rest of its bytes, then its frame at `w.end`, so that
    /// the record is valid only once every byte of it is written.
    func appendSpilled(
        _ w: inout WriterState, type: LogFormat.RecordType = .commit, spilled: Int, tail: [UInt8], frame: [UInt8]
    ) throws {
        let start = w.end
        let recordEnd = start + Int64(spilled + tail.count)
        guard recordEnd - start - Int64(LogFormat.frameSize) <= Int64(LogFormat.maximumPayload) else {
            cutBack(&w, to: start)
            throw DataStoreError(.unsupportedFeature, "a \(type) of this size is larger than a log record can be")
        }
        let reserve =
            recordEnd > max(w.fileSize, w.end)
            ? Self.reservation(after: recordEnd, most: configuration.reservedTail) : 0
        do {
            try writeZeros(w.fd, count: reserve, at: recordEnd)
            if !tail.isEmpty { try fs.write(w.fd, tail, at: start + Int64(spilled)) }
            try fs.write(w.fd, frame, at: start)
        } catch {
            cutBack(&w, to: start)
            throw DataStoreError(
                .ioFailure, "writing a \(type) record at offset \(start) of \(path) failed; nothing was saved",
                underlying: error)
        }
        w.end = recordEnd
        w.fileSize = max(w.fileSize, recordEnd + reserve)
    }

    /// Zero bytes to write from, shared by every store: making a new array of up to 1 MiB
    /// of zeros each time a save grew the file cost a fresh allocation, its page faults and
    /// its `memset`, 15% of the benchmark's updates at a million records (perf).
    private static let zeros = [UInt8](repeating: 0, count: 64 << 10)

    /// Writes `count` zero bytes at `offset`, in writes of at most 64 KiB.
    func writeZeros(_ fd: Int32, count: Int64, at offset: Int64) throws {
        var done: Int64 = 0
        while done < count {
            let n = Int(min(count - done, Int64(Self.zeros.count)))
            try fs.write(fd, n == Self.zeros.count ? Self.zeros : Array(Self.zeros[..<n]), at: offset + done)
            done += Int64(n)
        }
    }

    /// Cuts the file back to `offset` after a failed write; if that fails too, the store
    /// refuses further saves (the next open's recovery cuts the torn bytes).
    func cutBack(_ w: inout WriterState, to offset: Int64) {
        do {
            try fs.truncate(w.fd, to: offset)
            w.fileSize = offset
        } catch {
            w.unusable = "a failed write could not be cut back off the end of the file (\(error))"
        }
    }

    /// How many zero bytes to reserve after a record that ends the file at `end`: an eighth
    /// of the file, at least 4 KiB and at most `most`, so that a small store stays small
    /// when its program exits without closing it.
    static func reservation(after end: Int64, most: Int) -> Int64 {
        guard most > 0 else { return 0 }
        return min(Int64(most), max(4096, end / 8))
    }

    /// Removes every record: the file is replaced by an empty log, atomically.
    public func erase() throws {
        try writer.withLockWhenNotSyncing { w in
            try checkWritable(w)
            try settlePending(&w)
            let empty = SnapshotTable(schema: schema, storeIdentifier: identifier)
            try rewrite(&w, from: empty)
            table.withLock { $0.removeAll() }
        }
    }
}

/// Opens a ``LogStore``: where the file is, how durable a save is, and what to do with a
/// damaged file.
public struct LogStoreConfiguration: DataStoreConfiguration {
    public typealias Store = LogStore

    /// When a save returns.
    public enum Durability: Sendable, Hashable {
        /// After `fdatasync`: a returned save survives power loss. The default.
        case full
        /// After the write, without a sync: an OS crash or power loss can lose the last
        /// saves, but never corrupts the file or leaves half a save.
        case relaxed
    }

    /// What opening does with a torn or damaged log (the names follow RocksDB's).
    public enum Recovery: Sendable, Hashable {
        /// Keep the valid prefix, cut the rest off (after a sync), and report it in
        /// ``LogStore/lastRecovery``. The default.
        case pointInTime
        /// Refuse to open a file with any damage, with ``DataStoreError/corruptStore``
        /// giving the offset. The file is left as it is.
        case strict
    }

    public var name: String
    public var schema: Schema?
    /// The log file. Its directory is created if missing; `<file>.lock` sits beside it.
    public var url: URL
    public var durability: Durability
    public var recovery: Recovery
    /// Whether the store may be written. `false` opens it read-only, as SwiftData's
    /// `ModelConfiguration(allowsSave: false)` does: for a store that the process may
    /// not or should not change, such as one installed with an app or on a read-only file
    /// system. Such a store:
    /// - opens the file for reading only, never creates it (a missing file is an
    ///   `ioFailure`), and writes, truncates, renames and deletes nothing, not even
    ///   external-value files no record refers to any longer;
    /// - reads a damaged or torn end as point-in-time recovery does, up to the first bad
    ///   record, but leaves those bytes in the file (``LogStore/RecoveryReport/leftInFile``);
    ///   strict recovery refuses it as before;
    /// - refuses every save, ``LogStore/compact()`` and ``LogStore/checkpoint()`` with
    ///   ``DataStoreError/storeUnusable``, and writes no checkpoint on closing;
    /// - takes a shared lock on `<file>.lock`: any number of read-only openers at once,
    ///   and none while a writer has the store open, nor a writer while they do (both get
    ///   ``DataStoreError/storeLocked``). The lock file is created when missing and
    ///   possible; where it can be neither opened for reading nor created (a read-only
    ///   directory, or another user's lock file), the store opens without a lock, and a
    ///   writer that may write there can then open the store too. The reader keeps
    ///   reading the file as it was when opened, except that an external value the
    ///   writer replaces can go missing (`corruptStore` on reading it).
    /// - reads a format version 1 file as it is, rather than rewriting it as the current
    ///   version.
    ///
    /// `ModelConfiguration(url:allowsSave: false)` opens a log store this way, as SwiftData
    /// opens a bundled store read-only. The shared lock and what opening reports are
    /// Stowage's own.
    public var allowsSave: Bool = true
    /// When the store compacts itself; `nil` turns automatic compaction off.
    /// ``compact()`` works either way.
    public var automaticCompaction: AutomaticCompaction? = AutomaticCompaction()

    /// The dead-byte threshold past which a save schedules a compaction in the background.
    ///
    /// Dead bytes are the bytes of record versions that later saves replaced or deleted.
    /// The store estimates them as the commit bytes times the share of dead versions
    /// (record versions in the file that are no longer live), which is exact when records
    /// are of one size. A save that leaves the estimate at or above both
    /// ``minimumDeadBytes`` and ``deadFraction`` of the file schedules one compaction on a
    /// background thread; the save itself returns without waiting for it. Saves made while
    /// it runs wait for its switch to the new file.
    public struct AutomaticCompaction: Sendable, Hashable {
        /// Dead bytes below which the store never compacts by itself.
        public var minimumDeadBytes: Int64
        /// The share of the file's commit bytes that must be dead, from 0 to 1.
        public var deadFraction: Double

        public init(minimumDeadBytes: Int64 = 8 << 20, deadFraction: Double = 0.5) {
            self.minimumDeadBytes = max(0, minimumDeadBytes)
            self.deadFraction = min(1, max(0, deadFraction))
        }
    }

    /// When closing the store writes a checkpoint; `nil` turns that off. Compaction and
    /// ``LogStore/checkpoint()`` write one either way.
    public var checkpoints: Checkpoints? = Checkpoints()

    /// When the store writes checkpoint records (`Formats/log.md`, format version 3), which
    /// let the next open load every index's sorted entries instead of building them.
    ///
    /// Closing the store (explicitly, or by dropping its container) writes one when the
    /// commits after the last checkpoint add up to at least ``minimumCommitBytes``.
    /// A store that is not closed (a crash) opens without the newest changes' checkpoint:
    /// correct, only slower. SwiftData has no such setting.
    public struct Checkpoints: Sendable, Hashable {
        /// Commit bytes after the last checkpoint below which closing writes none.
        public var minimumCommitBytes: Int64

        public init(minimumCommitBytes: Int64 = 1 << 20) {
            self.minimumCommitBytes = max(0, minimumCommitBytes)
        }
    }

    /// The file operations; tests put a fault-injecting one here.
    @_spi(Testing) public var fileSystem: any StoreFileSystem = POSIXStoreFileSystem()
    /// The most memory, as estimated, that a store of format version 4 or 5 gives to the blocks
    /// it keeps in memory (`Formats/log.md`, "Reading records"): a block read from the file
    /// counts its bytes as kept (version 4: uncompressed; version 5: each write as stored,
    /// compressed or not), and each decoded write twice its encoded bytes plus
    /// 48 (a block a save wrote keeps only its decoded writes). A read that misses reads
    /// one block from the file; a scan that misses block after block reads up to 256 KiB
    /// ahead, and once the cache is full keeps its current block beside it: those bytes and
    /// that block are held outside this capacity. SwiftData has no such setting.
    public var cacheCapacity: Int = 32 << 20
    /// The uncompressed bytes at which a save closes a block of records and starts the next
    /// (`Formats/log.md`, "Commit record"; 4 KiB, kept between 1 KiB and 1 MiB).
    ///
    /// A read that misses the cache reads and checks one whole block for its record (and
    /// decompresses that record alone; in format version 4 it decompressed and walked the
    /// whole block): with a cache much smaller than the store, smaller blocks make each such
    /// read cheaper, while larger ones cost the cache a little less for each record it holds
    /// (in version 4 they also compressed a little better). A scan past the cache reads many blocks in one
    /// `pread`, so their size hardly matters to it. In the benchmark at a million records
    /// with the default caches, 4 KiB blocks against 16 KiB took 10,000 point fetches from
    /// 148 to 87 ms, equality fetches from 8.0 to 4.9 s and range fetches from 242 to 117 ms;
    /// counts, the full enumerate and the updates took the same time (±3%), and the file
    /// was 2% larger.
    /// Readers accept blocks of any size, so it can change between opens; it applies to
    /// what is written from then on, and compaction rewrites every record with it. SwiftData
    /// has no such setting; RocksDB's `block_size` is the same trade.
    public var blockBytes: Int = LogBlocks.targetBytes
    /// The most zero bytes a store writes after its last record whenever a record grows
    /// the file (`Formats/log.md`, "Writing"): an eighth of the file, at least 4 KiB, up to
    /// this. A save whose record fits in them leaves the file's size unchanged, so its
    /// `fdatasync` has no file-system metadata to commit: on ext4 that took about 40% off
    /// each durable save's sync. Opening reads such a tail as the end of the log; closing
    /// cuts it off. 0 turns it off. SwiftData has no such setting.
    public var reservedTail: Int = 1 << 20
    /// A commit larger than this goes to the file in pieces of about this size as it is
    /// encoded, its frame last, instead of being held whole in memory first (4 MiB).
    @_spi(Testing) public var commitChunkBytes: Int = 4 << 20

    /// A fixed salt for new files (the sample files); otherwise a random one.
    @_spi(Testing) public var fixedSalt: UInt64?
    /// The format version of a new file: 1 writes the version 1 samples and the files the
    /// upgrade tests start from. Rewrites always write the current version.
    @_spi(Testing) public var newFileFormatVersion: UInt16 = LogFormat.version.rawValue
    /// A fixed store identifier for a new file (the sample files).
    @_spi(Testing) public var fixedStoreIdentifier: String?
    /// The clock for commit timestamps, in milliseconds since 1970 (the sample files).
    @_spi(Testing) public var clock: (@Sendable () -> Int64)?

    public init(
        name: String? = nil, schema: Schema? = nil, url: URL, durability: Durability = .full,
        recovery: Recovery = .pointInTime, allowsSave: Bool = true
    ) {
        self.name = name ?? url.deletingPathExtension().lastPathComponent
        self.schema = schema
        self.url = url
        self.durability = durability
        self.recovery = recovery
        self.allowsSave = allowsSave
    }

    public func makeStore(schema: Schema, migrationPlan: (any SchemaMigrationPlan.Type)?) throws -> any DataStore {
        var configuration = self
        configuration.schema = self.schema ?? schema
        return try LogStore(configuration, migrationPlan: migrationPlan)
    }
}

/// Hands the heap's free pages back to the system (glibc's `malloc_trim`), so that a
/// process that closed a large store does not keep its pages resident. Stowage's
/// addition: glibc otherwise keeps freed memory for later allocations, and a process's
/// resident size stays at its peak. Does nothing where the C library has no such call.
func releaseFreedMemory() {
    typealias Trim = @convention(c) (Int) -> Int32
    guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") else { return }
    _ = unsafeBitCast(symbol, to: Trim.self)(0)
}
