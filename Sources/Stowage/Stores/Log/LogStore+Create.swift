import Foundation

extension LogStore {
    /// Writes a new, empty log to `<file>.compact`, syncs it and renames it into place, so
    /// that a crash never leaves an empty or half-written file at the store's path.
    static func create(
        lockFD: Int32, path: String, directory: String, schema: Schema, configuration: LogStoreConfiguration
    ) throws -> Opened {
        let fs = configuration.fileSystem
        let identifier = configuration.fixedStoreIdentifier ?? "log-" + UUID().uuidString
        let requested = LogFormatVersion(rawValue: configuration.newFileFormatVersion)
        let described = StoredSchema(schema)
        var version = LogFormat.readableVersions.contains(requested) ? requested : LogFormat.version
        if version == LogFormat.version { version = LogFormatVersion.forNewFile(described) }
        var description = version.hasExternalStorage ? described : described.withoutExternalFlags
        if !version.recordsSuperentities { description = description.withoutSuperentities }
        let createdAt = configuration.clock?() ?? Int64((Date().timeIntervalSince1970 * 1000).rounded())
        let header = LogFormat.FileHeader(
            salt: newSalt(configuration, generation: 0), generation: 0, version: version)
        let bytes = headerBytes(header, storeIdentifier: identifier, createdAt: createdAt, schema: description)
        let temporary = path + ".compact"
        guard let fd = try fs.open(temporary, mode: .createNew) else {
            throw DataStoreError(.ioFailure, "cannot create \(temporary)")
        }
        do {
            try fs.write(fd, bytes, at: 0)
            try fs.sync(fd)
            try fs.rename(temporary, to: path)
        } catch {
            fs.close(fd)
            try? fs.remove(temporary)
            throw error
        }
        do {
            try fs.syncDirectory(directory)
        } catch {
            fs.close(fd)
            throw error
        }
        let map = LogEntityMap(storeIdentifier: identifier, description: description, formatVersion: version)
        // Files left by an earlier store of this name would never be referred to again.
        LogExternalFiles(fs: fs, logPath: path, parent: directory).collectGarbage(keeping: [])
        var writer = WriterState(
            fd: fd, lockFD: lockFD, salt: header.salt, generation: 0, end: Int64(bytes.count), nextTransactionID: 1)
        writer.dataStart = Int64(bytes.count)
        writer.formatVersion = version
        writer.lastCheckpointEnd = Int64(bytes.count)
        var table = SnapshotTable(schema: schema, storeIdentifier: identifier)
        if version.locatesRecords {
            do {
                table.source = LogRecordReader(
                    fs: fs, fd: try fs.duplicate(fd), path: path, map: map, capacity: configuration.cacheCapacity,
                    mapsFile: configuration.readsThroughMapping)
            } catch {
                fs.close(fd)
                throw error
            }
        }
        return Opened(
            table: table,
            writer: writer,
            map: map, description: description, createdAt: createdAt, report: nil)
    }
}
