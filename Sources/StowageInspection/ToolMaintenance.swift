import Foundation
import Stowage

/// What `stowage recover` did.
package struct ToolRecovery: Sendable {
    package enum Outcome: Sendable {
        /// The file was whole: nothing was written.
        case healthy
        /// The file was cut to its longest valid prefix, after a backup.
        case truncated(backup: String)
        /// The file cannot be recovered (a damaged header, or a JSON document that does
        /// not read): it was left untouched.
        case leftUntouched
    }

    package var outcome: Outcome
    package var format: ToolStoreFormat
    package var originalSize: Int64
    /// The bytes kept.
    package var validLength: Int64
    package var droppedBytes: Int64 { originalSize - validLength }
    /// Commits kept (log store).
    package var commits: Int
    /// What was wrong where the valid prefix ends.
    package var damage: ToolProblem?
    /// For a JSON document: where it breaks, as line and column.
    package var line: (line: Int, column: Int)?
}

/// What `stowage compact` did.
package struct ToolCompaction: Sendable {
    package var sizeBefore: Int64
    package var sizeAfter: Int64
    package var records: Int
    package var commitsBefore: Int
    package var commitsAfter: Int
    /// `false` for a JSON store, which holds no dead records and is not rewritten.
    package var rewritten: Bool
}

package enum ToolMaintenance {
    /// Brings a damaged log back to its longest valid prefix: takes the store's lock,
    /// copies the file to `backup` (synced) and only then truncates it and syncs it. A
    /// whole log, and any JSON document, are left as they are.
    /// - Parameter backup: The backup's path; by default `<file>.bak-<UTC time>`.
    package static func recover(path given: String, backup: String? = nil, now: Date = Date()) throws(ToolFailure)
        -> ToolRecovery
    {
        // Through a link, the lock and the cut are the real file's (as when a store opens).
        let path = StorePath.followingLink(given)
        let format = try ToolStore.format(ofFileAt: path)
        let lock = try ToolFileOperations.lock(path)
        defer { ToolFileOperations.unlock(lock) }
        let store = try ToolStore.read(path: path)
        var result = ToolRecovery(
            outcome: .healthy, format: format, originalSize: store.fileSize, validLength: store.fileSize,
            commits: store.log?.commits.count ?? 0, damage: store.damage, line: store.damageLine)
        if format == .json {
            // A JSON document is replaced whole on every save: there is no prefix to keep.
            let problems = ToolVerifier.problems(of: store)
            if let first = problems.first {
                result.damage = first
                result.outcome = .leftUntouched
            }
            return result
        }
        guard let damage = store.damage, let log = store.log else { return result }
        guard log.validLength > Int64(LogFormat.fileHeaderSize), store.schema != nil else {
            // Without the file header and the header record nothing can be kept.
            result.outcome = .leftUntouched
            return result
        }
        let backupPath = backup ?? defaultBackupPath(for: path, now: now)
        try ToolFileOperations.backUp(path, to: backupPath)
        try ToolFileOperations.truncate(path, to: log.validLength)
        result.validLength = log.validLength
        result.damage = damage
        result.outcome = .truncated(backup: backupPath)
        return result
    }

    /// `<file>.bak-YYYYMMDDTHHMMSSZ`, with `-2`, `-3` … added if that exists.
    static func defaultBackupPath(for path: String, now: Date) -> String {
        let milliseconds = Int64((now.timeIntervalSince1970 * 1000).rounded(.down))
        let iso = ToolJSON.time(milliseconds: milliseconds)
        let stamp = iso.prefix(19).filter { $0 != "-" && $0 != ":" } + "Z"
        let base = "\(path).bak-\(stamp)"
        var candidate = base
        var n = 2
        while FileManager.default.fileExists(atPath: candidate) {
            candidate = "\(base)-\(n)"
            n += 1
        }
        return candidate
    }

    /// Rewrites a log without its dead records, as `Formats/log.md` ("Compaction")
    /// describes: the live records as inserts, in commits of about 4 MiB of payload that
    /// carry the last transaction identifier, into `<file>.compact` with a new salt and
    /// generation + 1; then `fdatasync`, `rename` over the log, `fsync` of the directory.
    /// The file keeps its format version (a version 4 file its blocks: the commit records
    /// are raw, their blocks compressed), and a version 3 or 4 file gets no checkpoint.
    /// The new file is read back and compared with the old one's live records before the
    /// rename. It holds the store's lock throughout, and refuses a damaged log.
    /// - Parameter progress: Called with the live records written so far and their total.
    package static func compact(path given: String, progress: (Int, Int) -> Void = { _, _ in }) throws(ToolFailure)
        -> ToolCompaction
    {
        // Through a link, the new file replaces the real one, not the link.
        let path = StorePath.followingLink(given)
        let format = try ToolStore.format(ofFileAt: path)
        let lock = try ToolFileOperations.lock(path)
        defer { ToolFileOperations.unlock(lock) }
        let file = try ToolFile.openForReading(path)
        let scanned: (store: ToolStore, extras: LogFileScanner.Extras?)
        do {
            defer { file.close() }
            if format == .json {
                let store = try JSONFileReader.read(file, path: path)
                return ToolCompaction(
                    sizeBefore: store.fileSize, sizeAfter: store.fileSize, records: store.recordCount,
                    commitsBefore: 0, commitsAfter: 0, rewritten: false)
            }
            scanned = try LogFileScanner.scanWithExtras(file, path: path)
        }
        let store = scanned.store
        guard let extras = scanned.extras, let log = store.log, let identifier = store.storeIdentifier,
            let createdAt = store.createdAt
        else {
            throw ToolFailure(
                .damaged, "\(path) is damaged at offset \(store.damage?.offset ?? 0): \(store.damage?.message ?? "")")
        }
        if let damage = store.damage {
            throw ToolFailure(
                .damaged,
                "\(path) is damaged at offset \(damage.offset ?? 0): \(damage.message); "
                    + "run `stowage recover` first (compact rewrites only a whole log)")
        }

        let fs = POSIXStoreFileSystem()
        let generation = log.generation &+ 1
        var salt: UInt64 = 0
        while salt == 0 || salt == log.salt { salt = UInt64.random(in: 1...UInt64.max) }
        // The file keeps its format version: a version 1 file's schema records no
        // external-storage flags, so rewriting it as version 2 would no longer match an
        // app whose schema has such attributes (the store itself upgrades it on open).
        // A version 3 or 4 file gets no checkpoint: checkpoints are optional, and one computed
        // here from the file's values could differ from the store's indexes (an external
        // value's bytes, say) in a way its cheap agreement check at open does not see.
        let header = LogFormat.FileHeader(
            salt: salt, generation: generation,
            version: LogFormat.readableVersions.contains(
                LogFormatVersion(rawValue: UInt16(clamping: store.formatVersion)))
                ? LogFormatVersion(rawValue: UInt16(clamping: store.formatVersion)) : LogFormat.version)
        let temporary = path + ".compact"
        let total = store.recordCount
        var end: Int64 = 0
        var commits = 0
        do {
            try fs.remove(temporary)
            guard let fd = try fs.open(temporary, mode: .createNew) else {
                throw ToolFailure(.io, "cannot create \(temporary)")
            }
            defer { fs.close(fd) }
            let start = LogStore.headerBytes(
                header, storeIdentifier: identifier, createdAt: createdAt, schema: extras.description)
            try fs.write(fd, start, at: 0)
            end = Int64(start.count)
            let timestamp = Int64((Date().timeIntervalSince1970 * 1000).rounded())
            var writes: SaveWrites = []
            // External values (format version 2) keep their files: the same references.
            var external: [[LogExternalReference]] = []
            var pending = 0
            var written = 0
            func flush(force: Bool) throws {
                guard !writes.isEmpty || force else { return }
                let commit = LogCommit(
                    transactionID: extras.lastTransaction, timestamp: timestamp, author: nil,
                    nextPrimaryKey: store.nextPrimaryKey, deletes: [], writes: writes)
                let references = external
                let encoded = try LogCodec.encodeCommit(
                    commit, map: extras.map,
                    external: { write, property in references[write].first { $0.property == property } })
                let record = encoded.record(salt: header.salt, offset: end)
                try fs.write(fd, record, at: end)
                end += Int64(record.count)
                commits += 1
                written += writes.count
                writes.removeAll(keepingCapacity: true)
                external.removeAll(keepingCapacity: true)
                pending = 0
                progress(written, total)
            }
            progress(0, total)
            for name in extras.map.names {
                for record in store.records[name] ?? [] {
                    let snapshot = DefaultSnapshot(
                        persistentIdentifier: .permanent(
                            entityName: name, storeIdentifier: identifier, primaryKey: record.key),
                        values: record.values)
                    let references = record.external.values.map(\.reference)
                    var w = LogByteWriter()
                    try LogCodec.encodeSnapshot(
                        snapshot, key: record.key, entity: name, into: &w, map: extras.map,
                        external: { property in references.first { $0.property == property } })
                    writes.append((name, record.key, snapshot, true))
                    external.append(references)
                    pending += w.bytes.count + 1
                    if pending >= LogStore.compactionChunkSize { try flush(force: false) }
                }
            }
            // An empty store that has handed out keys still records its next key.
            try flush(force: total == 0 && store.nextPrimaryKey > 1)
            try fs.sync(fd)
        } catch {
            try? fs.remove(temporary)
            if let failure = error as? ToolFailure { throw failure }
            throw ToolFailure(.io, "writing \(temporary) failed: \(error); \(path) is unchanged")
        }

        // Read the new file back before it replaces the old one.
        do {
            let check = try ToolStore.read(path: temporary)
            guard check.damage == nil, sameRecords(check, store, map: extras.map) else {
                throw ToolFailure(.io, "the rewritten file does not hold the same records")
            }
        } catch {
            try? fs.remove(temporary)
            throw ToolFailure(.io, "checking \(temporary) failed: \(error); \(path) is unchanged")
        }
        do {
            try fs.rename(temporary, to: path)
        } catch {
            try? fs.remove(temporary)
            throw ToolFailure(.io, "renaming \(temporary) over \(path) failed: \(error); \(path) is unchanged")
        }
        do {
            try fs.syncDirectory(ToolFileOperations.directory(of: path))
        } catch {
            throw ToolFailure(.io, "\(path) was rewritten, but syncing its directory failed: \(error)")
        }
        return ToolCompaction(
            sizeBefore: store.fileSize, sizeAfter: end, records: total, commitsBefore: log.commits.count,
            commitsAfter: commits, rewritten: true)
    }

    /// Whether two reads hold the same records, compared by their encoded bytes (so that
    /// a NaN equals itself), and the same next primary key.
    private static func sameRecords(_ a: ToolStore, _ b: ToolStore, map: LogEntityMap) -> Bool {
        func encoded(_ store: ToolStore, _ name: String) -> [[UInt8]] {
            (store.records[name] ?? []).map { record in
                var w = LogByteWriter()
                w.zigzag(record.key)
                for value in record.values { try? LogCodec.encodeValue(value, into: &w, map: map) }
                for (position, external) in record.external.sorted(by: { $0.key < $1.key }) {
                    w.varint(position)
                    w.varint(external.byteCount)
                    w.u32(external.checksum)
                }
                return w.bytes
            }
        }
        for name in Set(a.records.keys).union(b.records.keys) where encoded(a, name) != encoded(b, name) {
            return false
        }
        return a.nextPrimaryKey == b.nextPrimaryKey
    }
}
