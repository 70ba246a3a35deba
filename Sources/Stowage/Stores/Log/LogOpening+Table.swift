import Foundation

extension LogOpening {
    /// What building the table produced.
    struct Built {
        var table: SnapshotTable
        /// Every write and delete in the valid prefix: the record versions in the file.
        var versions: Int64
        /// Where every live external value's bytes are.
        var external: [LogExternalSlot: LogExternalReference]
        /// Whether the indexes came from a checkpoint instead of being built.
        var usedCheckpoint: Bool
        /// The schema the store writes from now on, and its entity map.
        var description: StoredSchema
        var map: LogEntityMap
        /// The records were converted to the container's schema: the file is rewritten.
        var converted: Bool
        /// The store rewrites the file before its first save: a version 1 file that needs
        /// external storage, or a file whose header lists other indexes than the schema.
        var needsUpgrade: Bool
        /// The layout record to append before the store is returned (format version 6), framed
        /// for the end of the valid prefix.
        var layoutRecord: [UInt8]?
    }

    /// Step 5: the table of the live records and their indexes, from the last checkpoint
    /// and the commits after it where they agree, else from every commit; then the
    /// external values, the conversion to the container's schema, and the check of the
    /// uniqueness constraints the schema adds.
    /// - Throws: ``DataStoreError`` `.corruptStore` for a commit that changed since the walk
    ///   or a missing or damaged external value, `.schemaMismatch` when the records break
    ///   an added constraint.
    func buildTable(_ walked: Walked, _ reconciliation: Reconciliation) throws -> Built {
        var walked = walked
        // A layout record to append: the records before it, all of them, are read through it.
        var layoutRecord: [UInt8]?
        var layouts = layouts
        if let record = reconciliation.layout {
            let framed = LogFormat.frame(
                type: .layout, payload: try record.encode(map: map), salt: header.salt, offset: walked.end)
            layouts = decodingLayouts(reconciliation, start: walked.end + Int64(framed.count))
            layoutRecord = framed
        }
        // Records held by location (version 4 and later) are read through a reader of
        // their own descriptor.
        let reader =
            version.locatesRecords
            ? LogRecordReader(
                fs: fs, fd: try fs.duplicate(fd), path: path, map: layouts.last.map, layouts: layouts,
                capacity: configuration.cacheCapacity, mapsFile: configuration.readsThroughMapping) : nil
        let restored = restore(from: &walked, reader: reader)
        if restored == nil, walked.summary.commits > 0 || !walked.tail.isEmpty {
            // The checkpoint could not be used: decode every commit of the valid prefix.
            walked.replay = try replayAll(walked, reconciliation)
        }
        var replay = walked.replay
        replay.finish()
        let versions = restored?.versions ?? replay.versions
        // A checkpoint that ends the valid prefix and agrees with the records gives the
        // indexes' sorted entries; any other is ignored.
        var indexEntries: [String: [SnapshotTable.SortedEntries]]?
        if restored == nil, let checkpoint = walked.checkpoint, walked.checkpointEnd == walked.end,
            !reconciliation.indexesChanged
        {
            indexEntries = checkpoint.indexEntries(
                agreeingWith: replay.liveRecords, map: map, transactionID: walked.lastTransaction,
                nextPrimaryKey: replay.nextPrimaryKey)
        }
        let external = try loadExternalValues(&replay, checkpointed: restored?.external)

        let live = reconciliation.live
        let table: SnapshotTable
        var description: StoredSchema
        var storedMap = map
        // A read-only store reads a version 1 file as it is (its values are all inline), and
        // a file whose header lists other indexes without rewriting it.
        let externalUpgrade = !version.hasExternalStorage && live.hasExternalValues && configuration.allowsSave
        if let conversion = reconciliation.conversion {
            for name in conversion.droppedEntities.sorted() {
                let records = replay.liveRecords[name]?.keys.count ?? 0
                guard records == 0 else {
                    let difference = fileSchema.difference(from: reconciliation.live) ?? "\(name) is dropped"
                    throw DataStoreError(
                        .schemaMismatch,
                        "\(path): the schema does not match the store's: \(difference); it needs a migration: "
                            + SchemaConversion.refusal(dropping: name, records: records) + "; it was left untouched")
                }
            }
            // The indexes are built from the records' values: in the container's layout.
            if reader != nil { replay.convertLive(conversion) }
            table = converted(replay, reader: reader, conversion: conversion)
            description = live
            storedMap = LogEntityMap(
                storeIdentifier: storeIdentifier, description: live, formatVersion: max(version, 2))
        } else {
            table =
                restored?.table
                ?? replay.table(
                    schema: schema, storeIdentifier: storeIdentifier, indexEntries: indexEntries ?? [:], source: reader)
            description = reconciliation.indexesChanged ? fileSchema.withIndexes(of: live) : fileSchema
            if reconciliation.layout != nil {
                description = layouts.last.schema
                storedMap = layouts.last.map
            }
            if externalUpgrade {
                description = description.withExternalFlags(of: live)
                storedMap = LogEntityMap(storeIdentifier: storeIdentifier, description: description, formatVersion: 2)
            }
        }
        let built = Built(
            table: table, versions: versions, external: external,
            usedCheckpoint: indexEntries != nil || restored != nil, description: description, map: storedMap,
            converted: reconciliation.conversion != nil,
            needsUpgrade: externalUpgrade || (reconciliation.indexesChanged && configuration.allowsSave),
            layoutRecord: layoutRecord)
        try checkAddedUniqueness(built.table, reconciliation)
        return built
    }

    /// What a version 4 checkpoint and the commits after it give.
    struct Restored {
        var table: SnapshotTable
        var versions: Int64
        var external: [LogExternalSlot: LogExternalReference]
    }

    /// Step 5a: the table from the last checkpoint, with the commits after it applied, when
    /// it agrees with the commits summarized before it (version 4 and later). A checkpoint
    /// that disagrees, or after which a commit cannot be applied, is not trusted for
    /// anything else either: `walked.checkpoint` is then cleared.
    private func restore(from walked: inout Walked, reader: LogRecordReader?) -> Restored? {
        guard let summarizedBefore = walked.summarizedBefore, let found = walked.checkpoint, let reader else {
            return nil
        }
        let summary = walked.summary
        // The summarized commits end where the checkpoint starts: use it if it agrees.
        guard walked.checkpointStart == summarizedBefore, found.transactionID == summary.transaction,
            found.nextPrimaryKey == summary.nextKey, found.versions == summary.versions,
            // Applying the commits after it reads the records they replace; one that cannot
            // be read (an indexed external value whose old file an earlier open deleted)
            // sends opening to the full replay, which needs no old value.
            let table = try? Self.table(from: found, after: walked.tail, schema: schema, map: map, source: reader)
        else {
            walked.checkpoint = nil
            return nil
        }
        return Restored(
            table: table,
            versions: summary.versions + walked.tail.reduce(0) { $0 + Int64($1.deletes.count + $1.writes.count) },
            external: Self.externalValues(of: found, after: walked.tail, map: map))
    }

    /// Step 5b: the external values. Records held inline (versions 1 to 3) hold theirs, so
    /// every live one is read back. Records held by location are read with their external
    /// values when fetched: opening reads only the values an index covers (to build it)
    /// and checks that every other file is there with its length, without reading it (a
    /// store of large values would otherwise read them all at every open); a value's
    /// checksum is checked when it is read. Then the files nothing refers to go.
    private func loadExternalValues(
        _ replay: inout LogReplay, checkpointed: [LogExternalSlot: LogExternalReference]?
    ) throws -> [LogExternalSlot: LogExternalReference] {
        let files = LogExternalFiles(fs: fs, logPath: path, parent: directory)
        let indexed =
            replay.located
            ? Dictionary(
                schema.entities.map { ($0.name, SnapshotTable.indexedExternalPositions(of: $0)) },
                uniquingKeysWith: { a, _ in a }) : nil
        let map = self.map
        try replay.resolveExternalValues { entity, key, reference in
            let entityIndex = map.indexByName[entity] ?? -1
            if let indexed, indexed[entity]?.contains(reference.property) != true {
                try files.check(reference, entity: entity, entityIndex: entityIndex, key: key)
                return nil
            }
            return try files.read(reference, entity: entity, entityIndex: entityIndex, key: key)
        }
        for (slot, reference) in checkpointed ?? [:] {
            let entity = slot.entity < map.names.count ? map.names[slot.entity] : "?"
            try files.check(reference, entity: entity, entityIndex: slot.entity, key: slot.key)
        }
        var external = checkpointed ?? [:]
        for (entity, byKey) in replay.references {
            guard let entityIndex = map.indexByName[entity] else { continue }
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
        return external
    }

    /// Step 5c: the table of the records converted to the container's schema
    /// (``SchemaConversion``); the store then writes the new layout.
    private func converted(_ replay: LogReplay, reader: LogRecordReader?, conversion: SchemaConversion)
        -> SnapshotTable
    {
        if let reader {
            // Records held by location are converted as they are read: to build the
            // indexes, by the store's reads, and by the rewrite.
            return replay.table(
                schema: schema, storeIdentifier: storeIdentifier,
                source: ConvertingSnapshotSource(reader, conversion))
        }
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
        var table = SnapshotTable(schema: schema, storeIdentifier: storeIdentifier)
        table.bulkLoad(converted)
        table.nextPrimaryKey = max(table.nextPrimaryKey, replay.nextPrimaryKey)
        return table
    }

    /// Step 5d: records may break a constraint the schema adds (one the file has, they keep).
    private func checkAddedUniqueness(_ table: SnapshotTable, _ reconciliation: Reconciliation) throws {
        guard
            let broken = table.brokenUniqueness().first(where: {
                reconciliation.addedUniqueness[$0.entity]?.contains($0.constraint) == true
            })
        else { return }
        throw DataStoreError(
            .schemaMismatch,
            "\(path): the schema makes \(broken.entity)'s \(broken.constraint.joined(separator: ", ")) unique, "
                + "but the store holds \(broken.surplus) more records than distinct values of it; the store "
                + "was not rewritten")
    }

    /// The live external value references a version 4 checkpoint gives, with the commits
    /// after it applied: deletes first, then each write's references (a property without
    /// one has none).
    static func externalValues(of checkpoint: LogCheckpoint, after tail: [LogCommit], map: LogEntityMap)
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

    /// The table a version 4 checkpoint gives (records by location, indexes from its
    /// entries), with the commits after it applied as saves.
    static func table(
        from checkpoint: LogCheckpoint, after tail: [LogCommit], schema: Schema, map: LogEntityMap,
        source: LogRecordReader
    ) throws -> SnapshotTable? {
        var live: [String: SnapshotTable.SortedRecords] = [:]
        var entries: [String: [SnapshotTable.SortedEntries]] = [:]
        for entity in checkpoint.entities {
            guard entity.entityIndex < map.names.count, let locations = entity.locations,
                locations.count == entity.keys.count
            else { return nil }
            let name = map.names[entity.entityIndex]
            live[name] = SnapshotTable.SortedRecords(keys: entity.keys, snapshots: [], locations: locations)
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
}
