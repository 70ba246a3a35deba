import Foundation

extension LogStore {
    /// What opening a log file produced.
    struct Opened {
        var table: SnapshotTable
        var writer: WriterState
        var map: LogEntityMap
        var description: StoredSchema
        var createdAt: Int64
        var report: RecoveryReport?
        /// A version 1 file whose schema has external-storage attributes, or a file whose
        /// header lists other indexes than the schema: the store rewrites it in the current
        /// version, with the schema's description, before its first save.
        var needsUpgrade = false
        /// Whether the indexes were loaded from a checkpoint.
        var usedCheckpoint = false
        /// A layout record (format version 6) the store appends before it is returned.
        var layoutRecord: [UInt8]?
    }

    static func newSalt(_ configuration: LogStoreConfiguration, generation: UInt64) -> UInt64 {
        if let fixed = configuration.fixedSalt {
            let salt = fixed &+ generation
            return salt == 0 ? 1 : salt
        }
        return UInt64.random(in: 1...UInt64.max)
    }

    /// Locks, then opens or creates the file, then replays it. A read-only store
    /// (`allowsSave` false) takes a shared lock, opens the file for reading only and never
    /// creates it.
    static func open(
        path: String, directory: String, schema: Schema, configuration: LogStoreConfiguration
    ) throws -> Opened {
        let fs = configuration.fileSystem
        let fd: Int32
        let lockFD: Int32
        if configuration.allowsSave {
            lockFD = try fs.lockStore(path: path, directory: directory, kind: "log store")
            do {
                // A compaction that did not reach its rename leaves this behind; the lock is ours.
                try fs.remove(path + ".compact")
                // So may a migration killed before or just after its rename.
                MigrationRunner.removeLeftovers(of: path, in: directory)
                guard let existing = try fs.open(path, mode: .existing) else {
                    return try create(
                        lockFD: lockFD, path: path, directory: directory, schema: schema,
                        configuration: configuration)
                }
                fd = existing
            } catch {
                fs.close(lockFD)
                throw error
            }
        } else {
            (fd, lockFD) = try fs.openReadOnlyStore(path: path, directory: directory, kind: "log store")
        }
        do {
            return try openExisting(
                fd: fd, lockFD: lockFD, path: path, directory: directory, schema: schema, configuration: configuration)
        } catch {
            fs.close(fd)
            if lockFD >= 0 { fs.close(lockFD) }
            throw error
        }
    }

    /// The file header followed by the header record.
    package static func headerBytes(
        _ header: LogFormat.FileHeader, storeIdentifier: String, createdAt: Int64, schema: StoredSchema
    ) -> [UInt8] {
        var bytes = LogFormat.encodeFileHeader(header)
        let payload = LogCodec.encodeHeader(
            storeIdentifier: storeIdentifier, createdAt: createdAt, schema: schema, formatVersion: header.version)
        bytes += LogFormat.frame(type: .header, payload: payload, salt: header.salt, offset: Int64(bytes.count))
        return bytes
    }

    /// Opens an existing log file in named steps (``LogOpening``).
    private static func openExisting(
        fd: Int32, lockFD: Int32, path: String, directory: String, schema: Schema,
        configuration: LogStoreConfiguration
    ) throws -> Opened {
        var opening = try LogOpening(
            fd: fd, lockFD: lockFD, path: path, directory: directory, schema: schema, configuration: configuration)
        var reconciliation = try opening.reconcileSchema()
        var walked = try opening.walk(reconciliation)
        let report = try opening.recover(walked)
        if walked.end < opening.layouts.last.start {
            // Damage ended the valid prefix before a layout record the frames showed: the
            // file's schema is an earlier layout's. Open the valid prefix again.
            opening = try LogOpening(
                fd: fd, lockFD: lockFD, path: path, directory: directory, schema: schema, configuration: configuration,
                limit: walked.end)
            reconciliation = try opening.reconcileSchema()
            walked = try opening.walk(reconciliation)
        }
        let built = try opening.buildTable(walked, reconciliation)
        return Opened(
            table: built.table, writer: opening.writerState(walked, built, report: report), map: built.map,
            description: built.description, createdAt: opening.preamble.createdAt, report: report,
            needsUpgrade: built.needsUpgrade, usedCheckpoint: built.usedCheckpoint, layoutRecord: built.layoutRecord)
    }

    /// The start of every record in a log file, then its end: for tests and tools.
    @_spi(Testing) public static func recordOffsets(ofFileAt url: URL) throws -> [Int64] {
        let fs = POSIXStoreFileSystem()
        guard let fd = try fs.open(url.path, mode: .existing) else {
            throw DataStoreError(.ioFailure, "no file at \(url.path)")
        }
        defer { fs.close(fd) }
        let size = try fs.size(fd)
        guard case .success(let preamble) = try LogPreamble.read(fs, fd, fileSize: size) else {
            throw DataStoreError(.wrongFormat, "\(url.path) has no valid log header and header record")
        }
        // The header record, then every record the walk reads, then where they end.
        var offsets = [Int64(LogFormat.fileHeaderSize)]
        var records = LogRecordWalk(fs, fd, fileSize: size, preamble: preamble) { _, _ in }
        while let record = try records.next() { offsets.append(record.offset) }
        offsets.append(records.offset)
        return offsets
    }
}
