import Foundation
import Synchronization

/// A store that keeps everything in one human-readable JSON document (`Formats/json.md`),
/// for data you want to read, diff or edit by hand.
///
/// - Opening reads and validates the whole document into memory, into the same table,
///   indexes and planner as ``MemoryStore``: queries cost what they cost there. A
///   malformed document is refused (``DataStoreError/corruptStore`` naming the line and
///   column, or the entity, record and field), and the file is never modified by a failed
///   open.
/// - **Every save rewrites the whole document, so a save costs O(size of the store).** The
///   new document goes to a temporary file in the same directory, which is `fsync`ed,
///   renamed over the old one, and the directory `fsync`ed; only then does the store's
///   in-memory state change. A failure at any step leaves the previous document and the
///   store as they were. Prefer ``LogStore`` for large stores saved often.
/// - One process at a time: an exclusive `flock` on `<file>.lock`; a second opener gets
///   ``DataStoreError/storeLocked``. A store opened read-only
///   (``JSONStoreConfiguration/allowsSave`` `false`) writes nothing and shares its lock
///   with other read-only openers.
public final class JSONStore: SnapshotTableStore, DataStoreBatching {
    /// The configuration the store was opened with.
    public let configuration: JSONStoreConfiguration
    /// The store's identifier (`json-` and a UUID), recorded in the document when it was
    /// created: identifiers and history tokens of its records name it.
    public let identifier: String
    /// The models the store holds.
    public let schema: Schema

    let fs: any StoreFileSystem
    let path: String
    let directory: String
    let table: PosixMutex<SnapshotTable>
    let writer: PosixMutex<WriterState>

    struct WriterState {
        var lockFD: Int32
        var closed = false
        /// Why saves are refused, once they are.
        var unusable: String?
        /// The last document's size, to size the next one's buffer.
        var lastSize = 0
    }

    /// Opens the document at the configuration's `fileURL`, creating it (and its
    /// directory) if there is none and `allowsSave` is `true`.
    /// - Throws: ``DataStoreError`` `.storeLocked`, `.wrongFormat`, `.corruptStore`,
    ///   `.schemaMismatch` or `.ioFailure`.
    public init(_ configuration: JSONStoreConfiguration, migrationPlan: (any SchemaMigrationPlan.Type)?) throws {
        guard let schema = configuration.schema else {
            throw DataStoreError(.unsupportedFeature, "a JSONStoreConfiguration needs a schema")
        }
        let url = URL(fileURLWithPath: StorePath.followingLink(configuration.fileURL.standardizedFileURL.path))
        if let migrationPlan, configuration.allowsSave {
            let target = Self.migrationTarget(
                configuration, path: url.path, directory: url.deletingLastPathComponent().path)
            try MigrationRunner(plan: migrationPlan, target: target).run(containerSchema: schema)
        }
        self.configuration = configuration
        self.schema = schema
        self.fs = configuration.fileSystem
        self.path = url.path
        self.directory = url.deletingLastPathComponent().path
        let (table, lockFD, size) = try Self.open(
            path: path, directory: directory, schema: schema, configuration: configuration)
        self.identifier = table.storeIdentifier
        self.table = PosixMutex(table)
        self.writer = PosixMutex(
            WriterState(
                lockFD: lockFD,
                unusable: configuration.allowsSave ? nil : "it was opened read-only (allowsSave: false)",
                lastSize: size))
    }

    deinit {
        close()
    }

    /// Releases the lock. Reads still answer from memory; saves throw
    /// ``DataStoreError/storeUnusable``. Dropping the store closes it too.
    public func close() {
        writer.withLock { w in
            guard !w.closed else { return }
            if w.lockFD >= 0 { fs.close(w.lockFD) }
            w.closed = true
            if w.unusable == nil { w.unusable = "the store was closed" }
        }
    }

    // MARK: Opening

    /// The bytes of the document open at `fd`, within the configuration's size limit.
    /// - Throws: ``DataStoreError`` `.corruptStore` for a larger file, `.ioFailure`.
    static func readDocument(_ fd: Int32, path: String, configuration: JSONStoreConfiguration) throws -> [UInt8] {
        let fs = configuration.fileSystem
        let size = try fs.size(fd)
        guard size <= configuration.maximumFileSize else {
            throw DataStoreError(
                .corruptStore,
                "\(path) is \(size) bytes, more than the limit of \(configuration.maximumFileSize) "
                    + "(JSONStoreConfiguration.maximumFileSize); it was left untouched")
        }
        return try fs.read(fd, count: Int(size), at: 0)
    }

    private static func open(
        path: String, directory: String, schema: Schema, configuration: JSONStoreConfiguration
    ) throws -> (SnapshotTable, Int32, Int) {
        let fs = configuration.fileSystem
        /// Reads and closes `fd`.
        func load(_ fd: Int32) throws -> (SnapshotTable, Int) {
            defer { fs.close(fd) }
            let bytes = try readDocument(fd, path: path, configuration: configuration)
            do {
                return (
                    try JSONDocument.load(bytes, schema: schema, options: configuration.conversionOptions), bytes.count
                )
            } catch {
                throw DataStoreError(error.code, "\(path): \(error.message); the file was left untouched")
            }
        }
        if !configuration.allowsSave {
            let (fd, lockFD) = try fs.openReadOnlyStore(path: path, directory: directory, kind: "JSON store")
            do {
                let (table, size) = try load(fd)
                return (table, lockFD, size)
            } catch {
                if lockFD >= 0 { fs.close(lockFD) }
                throw error
            }
        }
        let lockFD = try fs.lockStore(path: path, directory: directory, kind: "JSON store")
        do {
            // Temporary files of a save that crashed before its rename; the lock is ours.
            let prefix = URL(fileURLWithPath: path).lastPathComponent + ".tmp-"
            for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
            where name.hasPrefix(prefix) {
                try fs.remove(directory + "/" + name)
            }
            // So may a migration killed before or just after its rename.
            MigrationRunner.removeLeftovers(of: path, in: directory)
            if let fd = try fs.open(path, mode: .existing) {
                var (table, size) = try load(fd)
                // A document begins to keep history at its next save (it becomes version 2).
                if configuration.keepsHistory, table.history == nil { table.history = [] }
                return (table, lockFD, size)
            }
            let identifier = configuration.fixedStoreIdentifier ?? "json-" + UUID().uuidString
            var table = SnapshotTable(schema: schema, storeIdentifier: identifier)
            if configuration.keepsHistory { table.history = [] }
            let bytes = JSONDocument.render(table)
            try replace(fs: fs, path: path, directory: directory, with: bytes)
            return (table, lockFD, bytes.count)
        } catch {
            fs.close(lockFD)
            throw error
        }
    }

    // MARK: Writing the document

    /// Writes `bytes` to a new temporary file beside `path`, syncs it, renames it over
    /// `path` and syncs the directory. Before the rename, a failure removes the temporary
    /// file and leaves `path` as it was. Throws ``JSONStore/DirectorySyncFailure`` when
    /// only the last step failed (the rename happened).
    static func replace(fs: any StoreFileSystem, path: String, directory: String, with bytes: [UInt8]) throws {
        let temporary = path + ".tmp-" + String(UInt64.random(in: 0...UInt64.max), radix: 16)
        guard let fd = try fs.open(temporary, mode: .createNew) else {
            throw DataStoreError(.ioFailure, "cannot create \(temporary)")
        }
        do {
            try fs.write(fd, bytes, at: 0)
            try fs.sync(fd)
            fs.close(fd)
        } catch {
            fs.close(fd)
            try? fs.remove(temporary)
            throw DataStoreError(
                .ioFailure, "writing the new document to \(temporary) failed; \(path) is unchanged", underlying: error)
        }
        do {
            try fs.rename(temporary, to: path)
        } catch {
            try? fs.remove(temporary)
            throw DataStoreError(
                .ioFailure, "renaming the new document over \(path) failed; it is unchanged", underlying: error)
        }
        do {
            try fs.syncDirectory(directory)
        } catch {
            throw DirectorySyncFailure(underlying: error)
        }
    }

    struct DirectorySyncFailure: Error {
        let underlying: any Error
    }

    func checkWritable(_ w: WriterState) throws {
        if let reason = w.unusable {
            throw DataStoreError(.storeUnusable, "the JSON store at \(path) refuses saves: \(reason)")
        }
    }

    /// Makes `next` the stored document and then the in-memory table. `current` is the
    /// table now; if the directory sync fails after the rename, its document is written
    /// back, so that the file still holds the previous content.
    private func commit(_ w: inout WriterState, from current: SnapshotTable, to next: SnapshotTable) throws {
        let bytes = JSONDocument.render(next, capacity: w.lastSize + w.lastSize / 8 + 4096)
        guard bytes.count <= configuration.maximumFileSize else {
            throw DataStoreError(
                .unsupportedFeature,
                "the save would make \(path) \(bytes.count) bytes, more than the limit of "
                    + "\(configuration.maximumFileSize) (JSONStoreConfiguration.maximumFileSize); nothing was saved")
        }
        do {
            try Self.replace(fs: fs, path: path, directory: directory, with: bytes)
        } catch let failure as DirectorySyncFailure {
            // The rename may not be durable: put the previous document back.
            do {
                try Self.replace(fs: fs, path: path, directory: directory, with: JSONDocument.render(current))
            } catch {
                w.unusable = "syncing the directory failed and the previous document could not be restored (\(error))"
            }
            throw DataStoreError(
                .ioFailure, "syncing the directory of \(path) failed (\(failure.underlying)); nothing was saved",
                underlying: failure.underlying)
        }
        w.lastSize = bytes.count
        table.withLock { $0 = next }
    }

    /// Validates a change against the current table, writes the resulting document, and
    /// only then applies it.
    private func change(author: String?, _ prepare: (SnapshotTable) throws -> SnapshotTable.PreparedSave) throws
        -> SnapshotTable.PreparedSave
    {
        try writer.withLock { w in
            try checkWritable(w)
            let current = table.withLock { $0 }
            let prepared = try prepare(current)
            if prepared.isEmpty { return prepared }
            var next = current
            next.apply(prepared)
            next.recordHistory(
                prepared, author: author, timestamp: configuration.clock?() ?? HistoryEntry.now(),
                writer: .current(or: configuration.historyWriter))
            try commit(&w, from: current, to: next)
            return prepared
        }
    }

    // MARK: DataStore

    /// Runs `body` on the store's records under its lock, for reading only.
    public func withTable<R>(_ body: (SnapshotTable) throws -> R) rethrows -> R {
        try table.withLock { try body($0) }
    }

    /// Applies a save: the whole document is written again, to a temporary file that is
    /// synced and renamed over the old one, before the records in memory change. On failure
    /// the document and the store are as they were.
    public func save(_ request: DataStoreSaveChangesRequest<DefaultSnapshot>) throws -> DataStoreSaveChangesResult<
        DefaultSnapshot
    > {
        let prepared = try change(author: request.editingState.author) { try $0.prepare(request) }
        return prepared.result(storeIdentifier: identifier, request: request)
    }

    /// Deletes the records a request's predicate matches, as one save.
    public func delete<T: PersistentModel>(_ request: DataStoreBatchDeleteRequest<T>) throws {
        _ = try save(.batchDelete(request))
    }

    /// Removes every record: the document is replaced by an empty one, atomically.
    public func erase() throws {
        try writer.withLock { w in
            try checkWritable(w)
            let current = table.withLock { $0 }
            var empty = SnapshotTable(schema: schema, storeIdentifier: identifier)
            empty.nextPrimaryKey = current.nextPrimaryKey
            // An erased store has no history; its transactions go on from where they were.
            empty.history = current.history == nil ? nil : []
            empty.nextHistoryTransaction = current.nextHistoryTransaction
            try commit(&w, from: current, to: empty)
        }
    }

    /// Writes the document as the store holds it now, with the schema it was opened with:
    /// what a migration stage's conversion needs, since a conversion on open is otherwise
    /// written by the next save.
    func writeDocument() throws {
        try writer.withLock { w in
            try checkWritable(w)
            let current = table.withLock { $0 }
            try commit(&w, from: current, to: current)
        }
    }

    /// The document the store holds now, as it is (or would be) written.
    public func documentBytes() -> [UInt8] {
        JSONDocument.render(table.withLock { $0 })
    }
}

/// Opens a ``JSONStore``: the shape of Apple's sample JSON store configuration, plus a
/// size limit.
public struct JSONStoreConfiguration: DataStoreConfiguration {
    /// The configuration opens a ``JSONStore``.
    public typealias Store = JSONStore

    /// The default ``maximumFileSize``: 256 MiB.
    public static let defaultMaximumFileSize = 256 << 20

    /// The configuration's name.
    public var name: String
    /// The models the document holds, or `nil` for the container's.
    public var schema: Schema?
    /// The document. Its directory is created if missing; `<file>.lock` sits beside it.
    public var fileURL: URL
    /// Whether the store may be written. `false` opens an existing document read-only, as
    /// ``LogStoreConfiguration/allowsSave`` does a log: opened for reading only, never
    /// created, no leftover temporary file removed, every save refused with
    /// ``DataStoreError/storeUnusable``, and a shared lock on `<file>.lock` that other
    /// read-only openers share and a writer excludes (none where the lock file can be
    /// neither opened nor created).
    public var allowsSave: Bool = true
    /// The largest document the store reads or writes, in bytes. A larger file is refused
    /// at open (``DataStoreError/corruptStore``), a save that would exceed it throws
    /// ``DataStoreError/unsupportedFeature``.
    public var maximumFileSize: Int

    /// Whether saves are recorded in the document's history, for ``ModelContext/fetchHistory(_:)``.
    /// `false` by default, where SwiftData always keeps history: the document is rewritten
    /// whole by every save, so a history that grows with every save (a thousand updates of
    /// one record are a thousand transactions) would make each save slower until
    /// ``ModelContext/deleteHistory(_:)`` trims it, and the document would no longer be
    /// the same bytes for the same data. With `true`, a new document, or an old one at its
    /// next save, keeps a `history` member (`Formats/json.md`, version 2). A document
    /// that has one keeps it whatever this says: turning it off does not drop history that
    /// a reader may rely on. Without history, `fetchHistory` throws
    /// ``DataStoreError/unsupportedFeature``.
    public var keepsHistory = false

    /// The file operations; tests put a fault-injecting one here.
    @_spi(Testing) public var fileSystem: any StoreFileSystem = POSIXStoreFileSystem()
    /// A fixed store identifier for a new file (the sample files).
    @_spi(Testing) public var fixedStoreIdentifier: String?
    /// The history's clock, in milliseconds since 1970, instead of the system's (the
    /// sample files).
    @_spi(Testing) public var clock: (@Sendable () -> Int64)?
    /// The program and process the history names instead of this one's (the sample files).
    @_spi(Testing) public var historyWriter: (program: String, process: Int64)?
    /// What opening may convert beyond one schema version's changes: set by a migration
    /// plan's stage on its working copy (``SchemaMigrationPlan``), never by an app.
    var conversionOptions = SchemaConversion.Options()

    /// A configuration for the document at `fileURL`, holding `schema`'s models (the
    /// container's when `nil`), of at most `maximumFileSize` bytes, read-only when
    /// `allowsSave` is `false`.
    public init(
        name: String, schema: Schema? = nil, fileURL: URL, maximumFileSize: Int = defaultMaximumFileSize,
        allowsSave: Bool = true
    ) {
        self.name = name
        self.schema = schema
        self.fileURL = fileURL
        self.maximumFileSize = maximumFileSize
        self.allowsSave = allowsSave
    }

    /// Opens the ``JSONStore`` for this configuration's schema, or `schema` when it has none.
    public func makeStore(schema: Schema, migrationPlan: (any SchemaMigrationPlan.Type)?) throws -> any DataStore {
        var configuration = self
        configuration.schema = self.schema ?? schema
        return try JSONStore(configuration, migrationPlan: migrationPlan)
    }
}

/// The JSON store keeps its history in its document (`Formats/json.md`, version 2).
extension JSONStore: HistoryProviding, HistoryKeeping {
    /// The store's transactions are Stowage's default ones.
    public typealias HistoryType = DefaultHistoryTransaction
    /// ``DefaultHistoryTransaction``.
    public static var historyType: DefaultHistoryTransaction.Type { DefaultHistoryTransaction.self }

    /// The transactions the descriptor selects. Throws ``DataStoreError/unsupportedFeature``
    /// when the document keeps no history (``JSONStoreConfiguration/keepsHistory``).
    public func fetchHistory(_ descriptor: HistoryDescriptor<DefaultHistoryTransaction>) throws
        -> [DefaultHistoryTransaction]
    {
        try fetchDefaultHistory(descriptor)
    }

    /// Removes the transactions from the history: the document is written again.
    public func deleteHistory(_ descriptor: HistoryDescriptor<DefaultHistoryTransaction>) throws {
        try deleteDefaultHistory(descriptor)
    }

    package func historyEntries() throws -> [HistoryEntry] {
        guard let history = table.withLock({ $0.history }) else {
            throw DataStoreError(
                .unsupportedFeature,
                "\(path) keeps no history: set JSONStoreConfiguration.keepsHistory to true to record saves from now on")
        }
        return history
    }

    package func removeHistory(_ transactions: Set<Int64>) throws {
        guard !transactions.isEmpty else { return }
        try writer.withLock { w in
            try checkWritable(w)
            let current = table.withLock { $0 }
            var next = current
            next.history?.removeAll { transactions.contains($0.transactionID) }
            try commit(&w, from: current, to: next)
        }
    }
}

extension JSONStoreConfiguration {
    /// Two configurations are equal when they open the same document with the same schema
    /// (`DataStoreConfiguration` is `Hashable`); size limits and history settings do not
    /// make it another store.
    public static func == (lhs: JSONStoreConfiguration, rhs: JSONStoreConfiguration) -> Bool {
        lhs.name == rhs.name && lhs.fileURL == rhs.fileURL && lhs.schema == rhs.schema
            && lhs.allowsSave == rhs.allowsSave
    }

    /// Hashes the name and the document's URL.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(name)
        hasher.combine(fileURL)
    }
}
