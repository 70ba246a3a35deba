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
///   lightweight migration within one schema version.
/// - With a migration plan, a file written with an older version of the plan's schemas
///   runs the plan's stages first (``SchemaMigrationPlan``), on a working copy that
///   replaces the file only when every stage has finished.
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
    /// The configuration the store was opened with.
    public let configuration: LogStoreConfiguration
    /// The store's identifier (`log-` and a UUID), recorded in the file's header record
    /// when it was created and kept by compaction: identifiers and history tokens of its
    /// records name it.
    public let identifier: String
    /// The models the store holds.
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
    let table: PosixMutex<SnapshotTable>
    let writer: LogWriter
    /// `<file>.blobs/`: the external values.
    let externalFiles: LogExternalFiles

    /// Opens the store at the configuration's URL, creating it (and its directory) if
    /// there is no file there.
    /// - Throws: ``DataStoreError`` `.storeLocked`, `.wrongFormat`, `.corruptStore`,
    ///   `.schemaMismatch` or `.ioFailure`.
    public init(_ configuration: LogStoreConfiguration, migrationPlan: (any SchemaMigrationPlan.Type)?) throws {
        guard let schema = configuration.schema else {
            throw DataStoreError(.unsupportedFeature, "a LogStoreConfiguration needs a schema")
        }
        let url = URL(fileURLWithPath: StorePath.followingLink(configuration.url.standardizedFileURL.path))
        var configuration = configuration
        if let migrationPlan, configuration.allowsSave {
            let target = Self.migrationTarget(
                configuration, path: url.path, directory: url.deletingLastPathComponent().path)
            let runner = MigrationRunner(plan: migrationPlan, target: target)
            // Lightweight stages alone: the open below makes them all, as one layout record
            // (or one rewrite), without a copy of the store.
            if let chain = try runner.lightweightChain(containerSchema: schema) {
                configuration.plannedConversion = chain
            } else {
                try runner.run(containerSchema: schema)
            }
        }
        let opened: Opened
        do {
            opened = try Self.open(
                path: url.path, directory: url.deletingLastPathComponent().path, schema: schema,
                configuration: configuration)
        } catch {
            throw configuration.plannedConversion?.failure(error, path: url.path) ?? error
        }
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
        self.table = PosixMutex(opened.table)
        self.writer = LogWriter(opened.writer)
        self.externalFiles = LogExternalFiles(
            fs: configuration.fileSystem, logPath: url.path, parent: url.deletingLastPathComponent().path)
        if let record = opened.layoutRecord {
            // The change of layout is one record, synced before the store is returned; a
            // crash before it is whole leaves a torn tail, which the next open cuts.
            do {
                try writer.withLock { w in
                    try append(&w, type: .layout, record: record)
                    do {
                        try fs.sync(w.fd)
                    } catch {
                        cutBack(&w, to: w.end - Int64(record.count))
                        w.end -= Int64(record.count)
                        throw DataStoreError(
                            .ioFailure, "syncing the layout record of \(url.path) failed; nothing was changed",
                            underlying: error)
                    }
                }
            } catch {
                writer.withLock { if $0.unusable == nil { $0.unusable = "opening failed" } }
                close()
                throw error
            }
        }
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

    /// Runs `body` on the key directory, indexes and cached records under the store's lock,
    /// for reading only.
    public func withTable<R>(_ body: (SnapshotTable) throws -> R) rethrows -> R {
        try table.withLock { try body($0) }
    }

    /// Removes every record: the file is replaced by an empty log, atomically.
    public func erase() throws {
        try writer.withLockWhenNotSyncing { w in
            try checkWritable(w)
            try settlePending(&w)
            let empty = SnapshotTable(schema: schema, storeIdentifier: identifier)
            try rewrite(&w, from: empty, keepingHistory: false)
            table.withLock { $0.removeAll() }
        }
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
