import Foundation

/// Opens a ``LogStore``: where the file is, how durable a save is, and what to do with a
/// damaged file.
public struct LogStoreConfiguration: DataStoreConfiguration {
    /// The configuration opens a ``LogStore``.
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

    /// The configuration's name: by default the file name of ``url`` without its extension.
    public var name: String
    /// The models the store holds, or `nil` for the container's.
    public var schema: Schema?
    /// The log file. Its directory is created if missing; `<file>.lock` sits beside it.
    public var url: URL
    /// When a save returns: after `fdatasync` (``Durability/full``, the default) or right
    /// after the write (``Durability/relaxed``).
    public var durability: Durability
    /// What opening does with a torn or damaged end: cut it off
    /// (``Recovery/pointInTime``, the default) or refuse to open (``Recovery/strict``).
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
    /// ``LogStore/compact()`` works either way.
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

        /// Compacts once at least `minimumDeadBytes` (8 MiB by default) are dead and they are
        /// at least `deadFraction` (half by default) of the commit bytes. Negative values
        /// count as 0, and the fraction is kept between 0 and 1.
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

        /// Writes a checkpoint on closing once at least `minimumCommitBytes` (1 MiB by
        /// default; a negative value counts as 0) of commits came after the last one.
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
    /// that block are held outside this capacity. Read through a mapping
    /// (``readsThroughMapping``, the default), a block costs only where its writes are, and
    /// its bytes count only towards deciding whether decoded writes are kept. SwiftData has
    /// no such setting.
    public var cacheCapacity: Int = 32 << 20
    /// Whether records are read through a read-only mapping of the file (`mmap`) instead of
    /// with `pread` (`Formats/log.md`, "Reading records"). Mapped, a block's bytes are the
    /// kernel's page cache's: reading one makes no system call and no copy, its checksum is
    /// checked once while the cache keeps where its writes are, and the cache
    /// (``cacheCapacity``) holds only that and decoded writes, so it covers a store many
    /// times its size. Unmapped, the cache keeps blocks' bytes, and a read past it reads its
    /// block from the file.
    ///
    /// Like SQLite's `mmap_size`, which is off by default there, a mapping trusts that no
    /// other program shortens the file while the store is open: touching a page cut off
    /// ends the process with `SIGBUS`. The store's lock keeps other stores out, not other
    /// programs. Measured in `Benchmarks/RESULTS.md` ("The workload as an app writes it").
    /// SwiftData has no such setting.
    public var readsThroughMapping: Bool = true
    /// The uncompressed bytes at which a save closes a block of records and starts the next
    /// (`Formats/log.md`, "Commit record"; 4 KiB, kept between 1 KiB and 1 MiB).
    ///
    /// A read that misses the cache reads and checks one whole block for its record (and
    /// decompresses that record alone; in format version 4 it decompressed and walked the
    /// whole block): with a cache much smaller than the store, smaller blocks make each such
    /// read cheaper, while larger ones cost the cache a little less for each record it holds
    /// (in version 4 they also compressed a little better). A scan past the cache reads many blocks in one
    /// `pread`, so their size hardly matters to it. Against 16 KiB, 4 KiB blocks made the
    /// benchmark's fetches past the cache much faster, left counts, the full enumerate and
    /// the updates as they were, and made the file slightly larger (see
    /// `Benchmarks/RESULTS.md`, "Measurements behind the code").
    /// Readers accept blocks of any size, so it can change between opens; it applies to
    /// what is written from then on, and compaction rewrites every record with it. SwiftData
    /// has no such setting; RocksDB's `block_size` is the same trade.
    public var blockBytes: Int = LogBlocks.targetBytes
    /// The most zero bytes a store writes after its last record whenever a record grows
    /// the file (`Formats/log.md`, "Writing"): an eighth of the file, at least 4 KiB, up to
    /// this. A save whose record fits in them leaves the file's size unchanged, so its
    /// `fdatasync` has no file-system metadata to commit, which on ext4 makes each durable
    /// save's sync much shorter (see `Benchmarks/RESULTS.md`, "Measurements behind the
    /// code"). Opening reads such a tail as the end of the log; closing cuts it off. 0 turns
    /// it off. SwiftData has no such setting.
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
    /// The program and process the history names instead of this one's (the sample files).
    @_spi(Testing) public var historyWriter: (program: String, process: Int64)?
    /// What opening may convert beyond one schema version's changes: set by a migration
    /// plan's stage on its working copy (``SchemaMigrationPlan``), never by an app.
    var conversionOptions = SchemaConversion.Options()
    /// A migration plan's chain of lightweight stages, made by the open itself.
    var plannedConversion: SchemaConversion.Planned?

    /// A configuration for the log at `url`, holding `schema`'s models (the container's
    /// when `nil`), with the given durability and recovery, read-only when `allowsSave` is
    /// `false`. Every other option starts at its default.
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

    /// Opens the ``LogStore`` for this configuration's schema, or `schema` when it has none.
    public func makeStore(schema: Schema, migrationPlan: (any SchemaMigrationPlan.Type)?) throws -> any DataStore {
        var configuration = self
        configuration.schema = self.schema ?? schema
        return try LogStore(configuration, migrationPlan: migrationPlan)
    }
}

extension LogStoreConfiguration {
    /// Two configurations are equal when they open the same file with the same schema, as
    /// ``ModelConfiguration``'s are (`DataStoreConfiguration` is `Hashable`). Settings that
    /// tune how the file is written (durability, blocks, compaction) do not make it
    /// another store.
    public static func == (lhs: LogStoreConfiguration, rhs: LogStoreConfiguration) -> Bool {
        lhs.name == rhs.name && lhs.url == rhs.url && lhs.schema == rhs.schema && lhs.allowsSave == rhs.allowsSave
    }

    /// Hashes the name and the file's URL.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(name)
        hasher.combine(url)
    }
}
