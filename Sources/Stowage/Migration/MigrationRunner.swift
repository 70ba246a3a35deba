import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Runs a ``SchemaMigrationPlan`` on a disk store before the store opens.
///
/// 1. Take the store's lock, so no other opener sees it half way; remove what a killed
///    migration left beside it.
/// 2. Find the store's version among the plan's `schemas`: by version identifier and
///    shape, else by shape alone (a store written before the app had versions), else by
///    identifier alone (a store whose indexes changed within its version). A store at the
///    last version, or at the container's version and shape, needs nothing.
/// 3. Copy the store to `<file>.migrating` (values in `<file>.blobs` are linked, not
///    copied) and run each stage on the copy, in order: a custom stage's `willMigrate` on
///    a context of the old version's models; the conversion, opening the copy with the
///    new version's schema; `didMigrate` on a context of the new version's models.
/// 4. Sync the copy, link its new values into `<file>.blobs`, and rename it over the
///    store: that rename is the one moment the store changes. A failure or a crash
///    before it leaves the store as it was, at its old version, ready to run the plan
///    again; after it, the store is fully migrated.
struct MigrationRunner {
    let plan: any SchemaMigrationPlan.Type
    let target: MigrationTarget

    /// The suffix of the working copy's path, and the prefix of everything beside it.
    static let workingSuffix = ".migrating"

    var path: String { target.path }
    var fs: any StoreFileSystem { target.fs }
    var working: String { path + Self.workingSuffix }

    /// Runs whatever stages the store needs. Returns the number of stages run.
    /// - Throws: ``DataStoreError`` `.schemaMismatch` when the store's version is not in
    ///   the plan or the plan's stages do not join its versions; `.migrationFailed` when a
    ///   stage throws or its conversion is refused; `.storeLocked`, `.ioFailure`. The store
    ///   is unchanged after every one of them.
    @discardableResult
    func run(containerSchema: Schema) throws -> Int {
        let lockFD = try fs.lockStore(path: path, directory: target.directory, kind: target.kind)
        defer { if lockFD >= 0 { fs.close(lockFD) } }
        removeWorkingFiles()
        guard let stored = try target.storedSchema(path) else { return 0 }
        let versions = plan.schemas
        let described = versions.map { StoredSchema(Schema(versionedSchema: $0)) }
        let live = StoredSchema(containerSchema)
        if stored.version == live.version, stored.hasSameShape(as: live) { return 0 }
        guard let start = try position(of: stored, among: described, live: live) else { return 0 }
        let stages = try self.stages(from: start, versions: versions)
        if stages.isEmpty { return 0 }
        do {
            try copyStore(from: path, to: working)
            if stored != described[start] {
                // Found by its shape or its identifier alone: the copy first becomes exactly
                // the plan's version, so that the stage's old-version contexts open it as it is.
                try convert(
                    to: Schema(versionedSchema: versions[start]), replacing: false,
                    name: "matching the store to version \(versions[start].versionIdentifier)")
            }
            for (index, stage) in stages.enumerated() {
                try run(stage, versions: (versions[start + index], versions[start + index + 1]))
            }
            try swapIn()
        } catch {
            removeWorkingFiles()
            if let switched = error as? Switched { throw switched.error }
            if let error = error as? DataStoreError, error.code == .migrationFailed { throw error }
            throw DataStoreError(
                (error as? DataStoreError)?.code == .ioFailure ? .ioFailure : .migrationFailed,
                "migrating \(path) from schema version \(stored.versionText) failed: \(Self.describe(error)); "
                    + "the store is unchanged, at version \(stored.versionText)",
                underlying: error)
        }
        return stages.count
    }

    /// The conversion that a chain of lightweight stages makes, all of them at once, when
    /// the store needs only such stages: `nil` when it needs none, or needs a custom one,
    /// or was found by its shape or identifier alone, or when the container is not the
    /// plan's last version. The store's own open then makes the whole change in one step
    /// (a log store: one layout record, or one rewrite), atomic as any open's conversion,
    /// instead of running each stage on a copy of the store.
    func lightweightChain(containerSchema: Schema) throws -> SchemaConversion.Planned? {
        guard let stored = try target.storedSchema(path) else { return nil }
        let versions = plan.schemas
        let described = versions.map { StoredSchema(Schema(versionedSchema: $0)) }
        let live = StoredSchema(containerSchema)
        if stored.version == live.version, stored.hasSameShape(as: live) { return nil }
        guard let last = described.last, last.version == live.version, last.hasSameShape(as: live),
            let start = try position(of: stored, among: described, live: live), stored == described[start]
        else { return nil }
        let stages = try self.stages(from: start, versions: versions)
        var chain = SchemaConversion()
        for (index, stage) in stages.enumerated() {
            guard case .lightweight = stage else { return nil }
            let (from, to) = (start + index, start + index + 1)
            do {
                chain = chain.then(
                    try SchemaConversion.make(
                        from: described[from], to: described[to], schema: Schema(versionedSchema: versions[to]),
                        options: SchemaConversion.Options(acrossVersions: true)))
            } catch {
                throw DataStoreError(
                    .migrationFailed,
                    "the stage from \(versions[from].versionIdentifier) to \(versions[to].versionIdentifier) cannot "
                        + "convert \(path): \(error.reason); the store is unchanged, at version \(stored.versionText)")
            }
        }
        let pairs = (start..<versions.count - 1).map {
            "\(versions[$0].versionIdentifier) to \(versions[$0 + 1].versionIdentifier)"
        }
        return SchemaConversion.Planned(
            from: stored, conversion: chain,
            name: (pairs.count == 1 ? "the stage from " : "the stages from ")
                + (pairs.count > 1 ? pairs.dropLast().joined(separator: ", ") + " and " : "") + (pairs.last ?? ""))
    }

    // MARK: Finding the version

    /// The position in the plan's `schemas` of the version the store was written with, or
    /// `nil` when the store is at the container's version (opening converts what differs
    /// within one version, or refuses it).
    func position(of stored: StoredSchema, among described: [StoredSchema], live: StoredSchema) throws -> Int? {
        let found =
            described.lastIndex { $0.version == stored.version && $0.hasSameShape(as: stored) }
            ?? described.firstIndex { $0.hasSameShape(as: stored) }
            ?? described.lastIndex { $0.version == stored.version }
        if let found { return found == described.count - 1 ? nil : found }
        if stored.version == live.version { return nil }
        let known = described.map(\.versionText).joined(separator: ", ")
        let hashes = stored.structuralHashes.sorted { $0.key < $1.key }
            .map { "\($0.key) \(String($0.value, radix: 16))" }.joined(separator: ", ")
        throw DataStoreError(
            .schemaMismatch,
            "\(path) holds schema version \(stored.versionText) (entities \(hashes)), which is not among the "
                + "migration plan's versions (\(known)) by identifier or by shape; the store is unchanged")
    }

    /// The stages from the version at `start` to the last, one a pair of consecutive
    /// versions: the plan's stage for the pair, or a lightweight one where it has none.
    func stages(from start: Int, versions: [any VersionedSchema.Type]) throws -> [MigrationStage] {
        let position = Dictionary(
            versions.enumerated().map { (ObjectIdentifier($0.element), $0.offset) }, uniquingKeysWith: { a, _ in a })
        var byStart: [Int: MigrationStage] = [:]
        for stage in plan.stages {
            let (from, to) = stage.versions
            guard let a = position[ObjectIdentifier(from)], let b = position[ObjectIdentifier(to)], b == a + 1 else {
                throw DataStoreError(
                    .schemaMismatch,
                    "the migration plan has a stage from \(from.versionIdentifier) to \(to.versionIdentifier), "
                        + "which are not consecutive versions of its schemas; the store at \(path) is unchanged")
            }
            guard byStart[a] == nil else {
                throw DataStoreError(
                    .schemaMismatch,
                    "the migration plan has two stages from version \(from.versionIdentifier); the store at "
                        + "\(path) is unchanged")
            }
            byStart[a] = stage
        }
        return (start..<(versions.count - 1)).map {
            byStart[$0] ?? .lightweight(fromVersion: versions[$0], toVersion: versions[$0 + 1])
        }
    }

    // MARK: Running a stage

    /// Runs one stage on the working copy.
    func run(_ stage: MigrationStage, versions: (from: any VersionedSchema.Type, to: any VersionedSchema.Type))
        throws
    {
        let old = Schema(versionedSchema: versions.from)
        let new = Schema(versionedSchema: versions.to)
        let name = "the stage from \(versions.from.versionIdentifier) to \(versions.to.versionIdentifier)"
        guard case .custom(_, _, let willMigrate, let didMigrate) = stage else {
            try convert(to: new, replacing: false, name: name)
            return
        }
        if let willMigrate {
            try withContext(old, at: working) { context in
                try stageCode(name, "willMigrate") {
                    try willMigrate(context)
                    if context.hasChanges { try context.save() }
                }
            }
        }
        guard let didMigrate else {
            try convert(to: new, replacing: true, name: name)
            return
        }
        // The records as they were before the conversion, for valuesBeforeMigration.
        let before = working + "-before"
        try copyStore(from: working, to: before)
        defer { removeStoreFiles(before) }
        try convert(to: new, replacing: true, name: name)
        try withContext(old, at: before, readOnly: true) { previous in
            try withContext(new, at: working) { context in
                context.migrationPredecessor = previous
                defer { context.migrationPredecessor = nil }
                try stageCode(name, "didMigrate") {
                    try didMigrate(context)
                    if context.hasChanges { try context.save() }
                }
            }
        }
    }

    /// Opens the working copy with `schema`, converting its records (the stage's step
    /// between its two closures), makes the file hold them, and closes it.
    func convert(to schema: Schema, replacing: Bool, name: String) throws {
        let options = SchemaConversion.Options(acrossVersions: true, replacesChangedProperties: replacing)
        let configuration = target.configuration(schema, working, options, false)
        let store: any DataStore<DefaultSnapshot>
        do {
            store = try configuration.makeContextStore(schema: schema, migrationPlan: nil)
        } catch let error as DataStoreError where error.code == .schemaMismatch {
            throw DataStoreError(
                .migrationFailed,
                "\(name) cannot convert \(path): \(error.message.replacingOccurrences(of: working, with: path)); "
                    + "the store is unchanged",
                underlying: error)
        }
        defer { target.close(store) }
        try target.settle(store)
    }

    /// Runs `body` with a context on the store at `path` opened with `schema`, and closes the
    /// store when it returns, whatever the body kept of the context.
    func withContext<R>(_ schema: Schema, at path: String, readOnly: Bool = false, _ body: (ModelContext) throws -> R)
        throws -> R
    {
        let configuration = target.configuration(schema, path, SchemaConversion.Options(), readOnly)
        let container = try ModelContainer(for: schema, configurations: [configuration])
        defer { for store in container.stores { target.close(store) } }
        return try body(ModelContext(container))
    }

    /// Runs a stage's code, wrapping what it throws.
    func stageCode(_ name: String, _ closure: String, _ body: () throws -> Void) throws {
        do {
            try body()
        } catch {
            throw DataStoreError(
                .migrationFailed,
                "\(closure) of \(name) threw: \(Self.describe(error)); the store at \(path) is unchanged",
                underlying: error)
        }
    }

    static func describe(_ error: any Error) -> String {
        if let error = error as? DataStoreError { return error.message }
        if let error = error as? SwiftDataError { return error.message.isEmpty ? "\(error.code)" : error.message }
        return String(describing: error)
    }

    // MARK: Files

    /// Copies the store at `source` (its file, and its companion directories by link) to
    /// `destination`, synced.
    func copyStore(from source: String, to destination: String) throws {
        try copyFile(from: source, to: destination)
        for suffix in target.companionSuffixes {
            let from = source + suffix
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: from) else { continue }
            let to = destination + suffix
            try FileManager.default.createDirectory(
                atPath: to, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
            for name in names { try linkOrCopy(from + "/" + name, to + "/" + name) }
            try fs.syncDirectory(to)
        }
        try fs.syncDirectory(target.directory)
    }

    func copyFile(from source: String, to destination: String) throws {
        guard let input = try fs.open(source, mode: .readOnly) else {
            throw DataStoreError(.ioFailure, "\(source) disappeared during the migration")
        }
        defer { fs.close(input) }
        try fs.remove(destination)
        guard let output = try fs.open(destination, mode: .createNew) else {
            throw DataStoreError(.ioFailure, "cannot create \(destination)")
        }
        defer { fs.close(output) }
        let size = try fs.size(input)
        var offset: Int64 = 0
        let chunk: Int64 = 4 << 20
        while offset < size {
            let bytes = try fs.read(input, count: Int(min(chunk, size - offset)), at: offset)
            if bytes.isEmpty { break }
            try fs.write(output, bytes, at: offset)
            offset += Int64(bytes.count)
        }
        try fs.sync(output)
    }

    /// A hard link: values' files are written once and never changed.
    func linkOrCopy(_ source: String, _ destination: String) throws {
        if fs.link(source, to: destination) { return }
        try copyFile(from: source, to: destination)
    }

    /// Makes the working copy the store: its new values' files join the store's, then one
    /// rename replaces the file.
    func swapIn() throws {
        guard let fd = try fs.open(working, mode: .readOnly) else {
            throw DataStoreError(.ioFailure, "the working copy \(working) disappeared")
        }
        do {
            try fs.sync(fd)
            fs.close(fd)
        } catch {
            fs.close(fd)
            throw error
        }
        // New values' files join the store's; a failure before the rename takes them out
        // again, so that the store is as it was, byte for byte.
        var linked: [String] = []
        do {
            for suffix in target.companionSuffixes {
                let from = working + suffix
                guard let names = try? FileManager.default.contentsOfDirectory(atPath: from), !names.isEmpty else {
                    continue
                }
                let to = path + suffix
                if !FileManager.default.fileExists(atPath: to) {
                    try FileManager.default.createDirectory(
                        atPath: to, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
                    linked.append(to)
                }
                let existing = Set((try? FileManager.default.contentsOfDirectory(atPath: to)) ?? [])
                for name in names where !existing.contains(name) {
                    try linkOrCopy(from + "/" + name, to + "/" + name)
                    linked.append(to + "/" + name)
                }
                try fs.syncDirectory(to)
            }
            try fs.syncDirectory(target.directory)
            // The moment the store changes.
            try fs.rename(working, to: path)
        } catch {
            for added in linked.reversed() { try? FileManager.default.removeItem(atPath: added) }
            throw error
        }
        do {
            try fs.syncDirectory(target.directory)
        } catch {
            throw Switched(
                error: DataStoreError(
                    .ioFailure,
                    "\(path) was migrated and renamed into place, but syncing its directory failed: after a power "
                        + "loss it may be the old store again, which the plan migrates on the next open",
                    underlying: error))
        }
        removeWorkingFiles()
    }

    /// A failure after the rename: the store is migrated already.
    struct Switched: Error {
        let error: DataStoreError
    }

    /// Removes the working copy and everything beside it: its lock, its companions, its
    /// temporary files, the copy kept for valuesBeforeMigration.
    func removeWorkingFiles() {
        Self.removeLeftovers(of: path, in: target.directory)
    }

    /// Removes what a migration of the store at `path` left beside it (`<file>.migrating*`):
    /// every writer's open does this under the store's lock, which a running migration holds.
    static func removeLeftovers(of path: String, in directory: String) {
        let prefix = URL(fileURLWithPath: path).lastPathComponent + workingSuffix
        for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        where name.hasPrefix(prefix) {
            try? FileManager.default.removeItem(atPath: directory + "/" + name)
        }
    }

    /// Removes a store's file, its lock and its companions.
    func removeStoreFiles(_ path: String) {
        for suffix in [""] + [".lock"] + target.companionSuffixes {
            try? FileManager.default.removeItem(atPath: path + suffix)
        }
    }
}
