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

    /// Writes a new, empty log to `<file>.compact`, syncs it and renames it into place, so
    /// that a crash never leaves an empty or half-written file at the store's path.
    private static func create(
        lockFD: Int32, path: String, directory: String, schema: Schema, configuration: LogStoreConfiguration
    ) throws -> Opened {
        let fs = configuration.fileSystem
        let identifier = configuration.fixedStoreIdentifier ?? "log-" + UUID().uuidString
        let requested = LogFormatVersion(rawValue: configuration.newFileFormatVersion)
        let version = LogFormat.readableVersions.contains(requested) ? requested : LogFormat.version
        let description =
            version.hasExternalStorage ? StoredSchema(schema) : StoredSchema(schema).withoutExternalFlags
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
                    fs: fs, fd: try fs.duplicate(fd), path: path, map: map, capacity: configuration.cacheCapacity)
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

    /// The file header followed by the header record.
    package static func headerBytes(
        _ header: LogFormat.FileHeader, storeIdentifier: String, createdAt: Int64, schema: StoredSchema
    ) -> [UInt8] {
        var bytes = LogFormat.encodeFileHeader(header)
        let payload = LogCodec.encodeHeader(storeIdentifier: storeIdentifier, createdAt: createdAt, schema: schema)
        bytes += LogFormat.frame(type: .header, payload: payload, salt: header.salt, offset: Int64(bytes.count))
        return bytes
    }

    private static func openExisting(
        fd: Int32, lockFD: Int32, path: String, directory: String, schema: Schema,
        configuration: LogStoreConfiguration
    ) throws -> Opened {
        let fs = configuration.fileSystem
        let size = try fs.size(fd)
        let preamble: LogPreamble
        switch try LogPreamble.read(fs, fd, fileSize: size) {
        case .success(let read): preamble = read
        case .failure(.wrongFormat(let reason)):
            throw DataStoreError(.wrongFormat, "\(path) is not a Stowage log store: \(reason); it was left untouched")
        case .failure(.damaged(_, let reason, _)):
            throw DataStoreError(.corruptStore, "\(path): \(reason); it was left untouched")
        }
        let header = preamble.header
        let identifier = preamble.storeIdentifier
        let createdAt = preamble.createdAt
        let stored = preamble.schema
        var offset = preamble.commitsStart
        // A version 1 file records no external-storage flags.
        let live = StoredSchema(schema)
        let compared = header.version.hasExternalStorage ? live : live.withoutExternalFlags
        // Indexes (`#Index`) or uniqueness constraints added, removed or changed and nothing
        // else: the records are read as they are and the indexes built from them, not from
        // a checkpoint, which holds the old ones (`Formats/log.md`, "Opening and recovery").
        // Other changes that need no migration plan (`SchemaConversion`) convert every
        // record as it is read, and the file is rewritten in the schema's layout.
        var indexesChanged = false
        var addedUniqueness: [String: [[String]]] = [:]
        var conversion: SchemaConversion?
        if let difference = stored.difference(from: compared) {
            if !stored.differsOnlyInIndexes(from: compared) {
                do {
                    conversion = try SchemaConversion.make(from: stored, to: compared, schema: schema)
                } catch {
                    throw DataStoreError(
                        .schemaMismatch,
                        "\(path): the schema does not match the store's: \(difference); it needs a migration: "
                            + error.reason)
                }
            }
            indexesChanged = true
            addedUniqueness = stored.addedUniqueness(in: compared)
        }

        // Replay the commits, and stop at the first record that fails a check.
        let readMap = LogEntityMap(storeIdentifier: identifier, description: stored, formatVersion: header.version)
        let map = readMap
        let commitsStart = offset
        var replay = LogReplay(located: header.version.locatesRecords)
        var lastTransaction: UInt64 = 0
        var commits = 0
        var damage: String?
        // The last checkpoint (version 3) and where it ends; every checkpoint's bytes.
        var checkpoint: LogCheckpoint?
        var checkpointStart = commitsStart
        var checkpointEnd = commitsStart
        var checkpointBytes: Int64 = 0
        var lastCheckpointBytes: Int64 = 0
        let prefetch =
            header.version.hasCheckpoints && !indexesChanged
            ? LogCheckpointPrefetch.start(
                fs, fd, from: commitsStart, fileSize: size, salt: header.salt, schema: stored,
                formatVersion: header.version) : nil
        // Every return below waits for it, so that it never reads a closed descriptor.
        defer { _ = try? prefetch?.checkpoint() }
        // Version 4 (`Formats/log.md`, "Reading, version 4"): the commits before the last
        // checkpoint are summarized, not decoded, and those after it kept to apply to the
        // table the checkpoint gives.
        let summarizeBefore = header.version.checkpointsLocateRecords ? prefetch?.offset : nil
        var summary = (transaction: UInt64(0), nextKey: Int64(1), versions: Int64(0), commits: 0)
        var tail: [LogCommit] = []
        scan: while true {
            // The prefetched checkpoint passed every check the read below makes: take it
            // without reading its bytes again. If it failed, the read reports why.
            if let prefetch, prefetch.offset == offset, let (found, next) = try? prefetch.checkpoint() {
                checkpoint = found
                checkpointStart = offset
                checkpointEnd = next
                checkpointBytes += next - offset
                lastCheckpointBytes = next - offset
                offset = next
                continue
            }
            switch try LogFormat.readRecord(fs, fd, at: offset, fileSize: size, salt: header.salt) {
            case .end:
                break scan
            case .damaged(let reason):
                damage = reason
                break scan
            case .record(.commit, let payload, let next):
                if header.version.locatesRecords, Int64(payload.count) != next - offset - Int64(LogFormat.frameSize) {
                    damage = "the version 4 commit at offset \(offset) is compressed as a whole"
                    break scan
                }
                do {
                    if let summarizeBefore, offset < summarizeBefore {
                        let found = try LogCodec.decodeCommitSummary(payload, map: readMap)
                        summary.transaction = max(summary.transaction, found.transactionID)
                        summary.nextKey = max(summary.nextKey, found.nextPrimaryKey)
                        summary.versions += found.versions
                        summary.commits += 1
                        lastTransaction = max(lastTransaction, found.transactionID)
                    } else {
                        let commit = try LogCodec.decodeCommit(payload, map: readMap, recordOffset: offset)
                        lastTransaction = max(lastTransaction, commit.transactionID)
                        if summarizeBefore != nil { tail.append(commit) } else { replay.add(commit) }
                    }
                    commits += 1
                    offset = next
                } catch {
                    damage = "the commit at offset \(offset) does not decode: \(error)"
                    break scan
                }
            case .record(.checkpoint, let payload, let next) where header.version.hasCheckpoints:
                do {
                    checkpoint = try LogCheckpoint.decode(
                        payload, schema: stored, formatVersion: header.version, fileSize: size)
                    checkpointStart = offset
                    checkpointEnd = next
                    checkpointBytes += next - offset
                    lastCheckpointBytes = next - offset
                    offset = next
                } catch {
                    damage = "the checkpoint at offset \(offset) does not decode: \(error)"
                    break scan
                }
            case .record(let type, _, _):
                damage =
                    "a record of type \(type) at offset \(offset), where only commits"
                    + (header.version.hasCheckpoints ? " and checkpoints" : "") + " may follow the header"
                break scan
            }
        }

        var report: RecoveryReport?
        if let damage {
            if configuration.recovery == .strict {
                throw DataStoreError(
                    .corruptStore,
                    "\(path) is damaged at offset \(offset): \(damage); strict recovery refuses to open it "
                        + "(the file is unchanged; point-in-time recovery would keep the first \(offset) bytes)")
            }
            if configuration.allowsSave {
                try fs.truncate(fd, to: offset)
                try fs.sync(fd)
            }
            report = RecoveryReport(
                validLength: offset, droppedBytes: size - offset, reason: damage, commitsReplayed: commits,
                leftInFile: !configuration.allowsSave)
        }
        // Version 4 records are read back through a reader of their own descriptor.
        var reader: LogRecordReader?
        if header.version.locatesRecords {
            reader = LogRecordReader(
                fs: fs, fd: try fs.duplicate(fd), path: path, map: readMap, capacity: configuration.cacheCapacity)
        }
        var table: SnapshotTable?
        var versions = replay.versions
        // The live external values, as a checkpoint and the commits after it give them.
        var checkpointExternal: [LogExternalSlot: LogExternalReference]?
        if let summarizeBefore, let found = checkpoint, let reader {
            // The summarized commits end where the checkpoint starts: use it if it agrees.
            if checkpointStart == summarizeBefore, found.transactionID == summary.transaction,
                found.nextPrimaryKey == summary.nextKey, found.versions == summary.versions
            {
                // Applying the commits after it reads the records they replace; one that
                // cannot be read (an indexed external value whose old file an earlier open
                // deleted) sends opening to the full replay below, which needs no old value.
                table = try? Self.table(
                    from: found, after: tail, schema: schema, map: readMap, source: reader, path: path)
                versions = summary.versions + tail.reduce(0) { $0 + Int64($1.deletes.count + $1.writes.count) }
                checkpointExternal = Self.externalValues(of: found, after: tail, map: readMap)
            }
            // A checkpoint that disagrees is not trusted for anything else either.
            if table == nil { checkpoint = nil }
        }
        if table == nil, summary.commits > 0 || !tail.isEmpty {
            // The checkpoint could not be used: decode every commit of the valid prefix.
            replay = try Self.replayAll(
                fs, fd, from: commitsStart, to: offset, salt: header.salt, size: size, map: readMap, path: path)
            versions = replay.versions
        }
        replay.finish()
        // A checkpoint that ends the valid prefix and agrees with the records gives the
        // indexes' sorted entries; any other is ignored.
        var indexEntries: [String: [LogCheckpoint.Entries]]?
        if table == nil, let checkpoint, checkpointEnd == offset, !indexesChanged {
            indexEntries = checkpoint.indexEntries(
                agreeingWith: replay.liveRecords, map: readMap, transactionID: lastTransaction,
                nextPrimaryKey: replay.nextPrimaryKey)
        }
        // External values. Records held inline (versions 1 to 3) hold theirs, so every live
        // one is read back. Version 4 records are read by location, with their external
        // values, when fetched: opening reads only the values an index covers (to build it)
        // and checks that every other file is there with its length, without reading it
        // (a store of large values would otherwise read them all at every open); a value's
        // checksum is checked when it is read. Then the files nothing refers to go.
        let files = LogExternalFiles(fs: fs, logPath: path, parent: directory)
        let indexed =
            replay.located
            ? Dictionary(
                schema.entities.map { ($0.name, SnapshotTable.indexedExternalPositions(of: $0)) },
                uniquingKeysWith: { a, _ in a }) : nil
        try replay.resolveExternalValues { entity, key, reference in
            let entityIndex = readMap.indexByName[entity] ?? -1
            if let indexed, indexed[entity]?.contains(reference.property) != true {
                try files.check(reference, entity: entity, entityIndex: entityIndex, key: key)
                return nil
            }
            return try files.read(reference, entity: entity, entityIndex: entityIndex, key: key)
        }
        for (slot, reference) in checkpointExternal ?? [:] {
            let entity = slot.entity < readMap.names.count ? readMap.names[slot.entity] : "?"
            try files.check(reference, entity: entity, entityIndex: slot.entity, key: slot.key)
        }
        var external: [LogExternalSlot: LogExternalReference] = checkpointExternal ?? [:]
        for (entity, byKey) in replay.references {
            guard let entityIndex = readMap.indexByName[entity] else { continue }
            for (key, found) in byKey {
                for reference in found {
                    external[LogExternalSlot(entity: entityIndex, key: key, property: reference.property)] = reference
                }
            }
        }
        if configuration.allowsSave {
            files.collectGarbage(
                keeping: Set(external.map { $0.value.fileName(entityIndex: $0.key.entity, primaryKey: $0.key.key) }))
        }

        var writer = WriterState(
            fd: fd, lockFD: lockFD, salt: header.salt, generation: header.generation, end: offset,
            nextTransactionID: lastTransaction + 1)
        writer.dataStart = commitsStart
        // A reserved zero tail stays: the next saves write into it.
        writer.fileSize = report == nil || !configuration.allowsSave ? size : offset
        if !configuration.allowsSave { writer.unusable = "it was opened read-only (allowsSave: false)" }
        writer.versions = versions
        writer.formatVersion = header.version
        writer.checkpointBytes = checkpointBytes
        writer.lastCheckpointBytes = lastCheckpointBytes
        writer.lastCheckpointEnd = checkpointEnd
        writer.lastCommitTransaction = commits > 0 ? lastTransaction : 0
        writer.external = external
        // A read-only store reads a version 1 file as it is (its values are all inline), and
        // a file whose header lists other indexes without rewriting it.
        let externalUpgrade = !header.version.hasExternalStorage && live.hasExternalValues && configuration.allowsSave
        let needsUpgrade = externalUpgrade || (indexesChanged && configuration.allowsSave)
        var description = indexesChanged ? stored.withIndexes(of: live) : stored
        if externalUpgrade { description = description.withExternalFlags(of: live) }
        let usedCheckpoint = indexEntries != nil || table != nil
        var newMap: LogEntityMap?
        if let conversion {
            if let reader {
                // Records held by location are converted as they are read: to build the
                // indexes, by the store's reads, and by the rewrite below.
                table = replay.table(
                    schema: schema, storeIdentifier: identifier, source: ConvertingSnapshotSource(reader, conversion))
            } else {
                // Versions 1 to 3 hold every record in memory: convert them there.
                var converted: [String: [Int64: DefaultSnapshot]] = [:]
                for (name, records) in replay.liveRecords {
                    var byKey: [Int64: DefaultSnapshot] = [:]
                    byKey.reserveCapacity(records.keys.count)
                    for (key, old) in zip(records.keys, records.snapshots) {
                        byKey[key] = conversion.convert(old, of: name)
                    }
                    converted[name] = byKey
                }
                var convertedTable = SnapshotTable(schema: schema, storeIdentifier: identifier)
                convertedTable.bulkLoad(converted)
                convertedTable.nextPrimaryKey = max(convertedTable.nextPrimaryKey, replay.nextPrimaryKey)
                table = convertedTable
            }
            description = live
            newMap = LogEntityMap(
                storeIdentifier: identifier, description: live, formatVersion: max(header.version, 2))
            // The rewrite writes every external value to a new file: under a transaction no
            // file of the old layout has, so that none of theirs is overwritten.
            writer.external = [:]
            writer.nextTransactionID = lastTransaction + 2
        }
        let built =
            table
            ?? replay.table(
                schema: schema, storeIdentifier: identifier, indexEntries: indexEntries ?? [:], source: reader)
        // Records may break a constraint the schema adds (one the file has, they keep).
        if let broken = built.brokenUniqueness().first(where: {
            addedUniqueness[$0.entity]?.contains($0.constraint) == true
        }) {
            throw DataStoreError(
                .schemaMismatch,
                "\(path): the schema makes \(broken.entity)'s \(broken.constraint.joined(separator: ", ")) unique, "
                    + "but the store holds \(broken.surplus) more records than distinct values of it; the store "
                    + "was not rewritten")
        }
        return Opened(
            table: built,
            writer: writer,
            map: newMap
                ?? (externalUpgrade
                    ? LogEntityMap(storeIdentifier: identifier, description: description, formatVersion: 2) : map),
            description: description, createdAt: createdAt, report: report, needsUpgrade: needsUpgrade,
            usedCheckpoint: usedCheckpoint)
    }

    /// The live external value references a version 4 checkpoint gives, with the commits
    /// after it applied: deletes first, then each write's references (a property without
    /// one has none).
    private static func externalValues(of checkpoint: LogCheckpoint, after tail: [LogCommit], map: LogEntityMap)
        -> [LogExternalSlot: LogExternalReference]
    {
        var slots: [LogExternalSlot: LogExternalReference] = [:]
        for entity in checkpoint.entities {
            for (key, references) in zip(entity.keys, entity.external ?? []) {
                for reference in references.compactMap({ $0 }) {
                    slots[LogExternalSlot(entity: entity.entityIndex, key: key, property: reference.property)] =
                        reference
                }
            }
        }
        for commit in tail {
            for (name, key) in commit.deletes {
                guard let e = map.indexByName[name] else { continue }
                for p in map.external[e] { slots[LogExternalSlot(entity: e, key: key, property: p)] = nil }
            }
            for (position, write) in commit.writes.enumerated() {
                guard let e = map.indexByName[write.entity], !map.external[e].isEmpty else { continue }
                for p in map.external[e] { slots[LogExternalSlot(entity: e, key: write.key, property: p)] = nil }
                for reference in commit.externalReferences[position] ?? [] {
                    slots[LogExternalSlot(entity: e, key: write.key, property: reference.property)] = reference
                }
            }
        }
        return slots
    }

    /// Decodes every commit in `[start, end)`, a prefix already checked record by record.
    private static func replayAll(
        _ fs: any StoreFileSystem, _ fd: Int32, from start: Int64, to end: Int64, salt: UInt64, size: Int64,
        map: LogEntityMap, path: String
    ) throws -> LogReplay {
        var replay = LogReplay(located: map.formatVersion.locatesRecords)
        var offset = start
        while offset < end {
            guard
                case .record(let type, let payload, let next) = try LogFormat.readRecord(
                    fs, fd, at: offset, fileSize: size, salt: salt)
            else {
                throw DataStoreError(.corruptStore, "\(path): the record at offset \(offset) changed while opening")
            }
            if type == .commit {
                do {
                    replay.add(try LogCodec.decodeCommit(payload, map: map, recordOffset: offset))
                } catch {
                    throw DataStoreError(
                        .corruptStore, "\(path): the commit at offset \(offset) does not decode: \(error)")
                }
            }
            offset = next
        }
        return replay
    }

    /// The table a version 4 checkpoint gives (records by location, indexes from its
    /// entries), with the commits after it applied as saves.
    private static func table(
        from checkpoint: LogCheckpoint, after tail: [LogCommit], schema: Schema, map: LogEntityMap,
        source: LogRecordReader, path: String
    ) throws -> SnapshotTable? {
        var live: [String: LogReplay.Records] = [:]
        var entries: [String: [LogCheckpoint.Entries]] = [:]
        for entity in checkpoint.entities {
            guard entity.entityIndex < map.names.count, let locations = entity.locations,
                locations.count == entity.keys.count
            else { return nil }
            let name = map.names[entity.entityIndex]
            live[name] = LogReplay.Records(keys: entity.keys, snapshots: [], locations: locations)
            entries[name] = entity.indexes
        }
        var table = SnapshotTable(schema: schema, storeIdentifier: map.storeIdentifier)
        table.source = source
        for (name, records) in table.entities where live[name] != nil {
            guard entries[name]?.count == records.indexes.count else { return nil }
        }
        table.bulkLoad(sorted: live, indexEntries: entries)
        table.nextPrimaryKey = max(table.nextPrimaryKey, checkpoint.nextPrimaryKey)
        // An index over an external value needs the value: read it for the writes it covers.
        var indexedExternal: [String: Bool] = [:]
        for name in table.entities.keys { indexedExternal[name] = table.indexesCoverExternalValues(of: name) }
        for commit in tail {
            var prepared = SnapshotTable.PreparedSave()
            prepared.deletes = commit.deletes
            prepared.writes = commit.writes
            for (position, references) in commit.externalReferences
            where indexedExternal[commit.writes[position].entity] == true {
                let write = commit.writes[position]
                var snapshot = write.snapshot
                for reference in references where reference.property < snapshot.values.count {
                    snapshot.values[reference.property] = .data(
                        try source.externalFiles.read(
                            reference, entity: write.entity, entityIndex: map.indexByName[write.entity] ?? -1,
                            key: write.key))
                }
                prepared.writes.setSnapshot(snapshot, at: position)
            }
            prepared.storedRows = .locations(commit.locations)
            prepared.nextPrimaryKey = commit.nextPrimaryKey
            try table.loadReplaced(&prepared)
            table.apply(prepared)
        }
        return table
    }

    /// The start of every record in a log file, then its end: for tests and tools.
    @_spi(Testing) public static func recordOffsets(ofFileAt url: URL) throws -> [Int64] {
        let fs = POSIXStoreFileSystem()
        guard let fd = try fs.open(url.path, mode: .existing) else {
            throw DataStoreError(.ioFailure, "no file at \(url.path)")
        }
        defer { fs.close(fd) }
        let size = try fs.size(fd)
        guard case .success(let header) = LogFormat.decodeFileHeader(try fs.read(fd, count: 32, at: 0), fileSize: size)
        else {
            throw DataStoreError(.wrongFormat, "\(url.path) has no valid log header")
        }
        var offsets: [Int64] = []
        var offset = Int64(LogFormat.fileHeaderSize)
        while case .record(_, _, let next) = try LogFormat.readRecord(
            fs, fd, at: offset, fileSize: size, salt: header.salt)
        {
            offsets.append(offset)
            offset = next
        }
        offsets.append(offset)
        return offsets
    }
}
