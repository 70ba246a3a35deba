import Foundation
import Stowage

/// What ``LogFileScanner`` has found so far in a log file: the live records, each commit's
/// share of live and dead bytes, the checkpoints, and the problems the tool's own checks
/// find. The scanner feeds it the records the walk reads, in file order, and
/// ``finish(validLength:damage:)`` turns it into the tool's view of the store.
struct LogScan {
    /// A live record version and where it came from.
    private struct Version {
        var values: [SnapshotValue]
        var commit: Int
        var size: Int64
        var external: [LogExternalReference]
        /// Version 4 and later: its block and slot.
        var location: RecordLocation?
    }

    /// A commit's share of live and dead payload bytes.
    private struct Accounting {
        var deadPayload: Int64 = 0
        var liveWrites = 0
        /// The commit's payload with its blocks (version 4 and later) decompressed.
        var payload: Int64 = 0
    }

    private var store: ToolStore
    private var log: ToolLogDetails
    private let description: StoredSchema
    private let schema: ToolSchema
    let map: LogEntityMap
    private let blobs: ToolExternalReader
    private let fileSize: Int64

    private var live: [String: [Int64: Version]] = [:]
    private var accounting: [Accounting] = []
    private var lastTransaction: UInt64 = 0
    private var nextPrimaryKey: Int64 = 1
    /// Every write and delete of the commits so far (a version 4 checkpoint counts them).
    private var versions: Int64 = 0
    private var checkpoints: [ToolCheckpoint] = []

    /// The scan of a file whose records are in `layouts` (the header record's alone before
    /// format version 6): the store is shown in the last.
    init(preamble: LogPreamble, layouts: LogLayouts, store: ToolStore, path: String, fileSize: Int64) {
        self.store = store
        self.fileSize = fileSize
        description = layouts.last.schema
        schema = ToolSchema(description)
        self.store.schema = schema
        map = layouts.last.map
        blobs = ToolExternalReader(logPath: path)
        log = LogFileScanner.details(
            formatVersion: store.formatVersion, salt: preamble.header.salt, generation: preamble.header.generation,
            dataStart: preamble.commitsStart, validLength: Int64(LogFormat.fileHeaderSize), size: fileSize)
        log.payloadBytes += Int64(preamble.payloadBytes)
        log.storedPayloadBytes += preamble.storedPayloadBytes
        log.regions = [ToolRegion(offset: 0, length: preamble.commitsStart, kind: .header)]
    }

    /// An entity's live records, in primary-key order.
    private func liveRecords(of name: String) -> [ToolRecord] {
        let entityIndex = map.indexByName[name] ?? 0
        return (live[name] ?? [:]).sorted { $0.key < $1.key }.map { key, version in
            var record = ToolRecord(
                key: key, values: version.values,
                offset: version.commit < log.commits.count ? log.commits[version.commit].offset : nil,
                location: version.location)
            for reference in version.external {
                record.external[reference.property] = ToolExternalValue(
                    fileName: reference.fileName(entityIndex: entityIndex, primaryKey: key),
                    byteCount: reference.byteCount, checksum: reference.checksum, reference: reference)
            }
            return record
        }
    }

    /// Adds a checkpoint, and the problems where it disagrees with the records before it.
    mutating func add(_ checkpoint: LogCheckpoint, _ record: LogRecordWalk.Record) {
        var records: [String: [ToolRecord]] = [:]
        for name in map.names where records[name] == nil { records[name] = liveRecords(of: name) }
        store.problems += ToolVerifier.checkpointProblems(
            checkpoint, at: record.offset,
            expected: ToolVerifier.CheckpointExpectation(
                transactionID: lastTransaction, nextPrimaryKey: nextPrimaryKey, versions: versions,
                records: records),
            schema: schema, blobs: blobs)
        checkpoints.append(
            ToolCheckpoint(
                offset: record.offset, recordLength: record.recordLength, payloadLength: Int64(record.payload.count),
                isCompressed: record.isStoredCompressed, transactionID: checkpoint.transactionID,
                nextPrimaryKey: checkpoint.nextPrimaryKey,
                records: checkpoint.entities.reduce(0) { $0 + $1.keys.count },
                // Minus the commits before it; the total is added at the end.
                commitsAfter: -log.commits.count))
        log.payloadBytes += Int64(record.payload.count)
        log.storedPayloadBytes += record.storedLength
    }

    /// Adds a layout record (format version 6): live, as the header record is.
    mutating func add(layout record: LogRecordWalk.Record) {
        log.layouts.append(record.offset)
        log.regions.append(ToolRegion(offset: record.offset, length: record.recordLength, kind: .header))
        log.payloadBytes += Int64(record.payload.count)
        log.storedPayloadBytes += record.storedLength
    }

    /// Adds a history record (format version 6): live, as the header record is.
    mutating func add(history record: LogRecordWalk.Record) {
        log.historyRecords += 1
        log.regions.append(ToolRegion(offset: record.offset, length: record.recordLength, kind: .header))
        log.payloadBytes += Int64(record.payload.count)
        log.storedPayloadBytes += record.storedLength
    }

    /// Adds a commit: its deletes and writes folded into the live records, the bytes they
    /// make dead in earlier commits, and the problems its transaction, values and keys have.
    mutating func add(_ commit: LogCommit, _ record: LogRecordWalk.Record) {
        let offset = record.offset
        let blocks =
            map.formatVersion.locatesRecords
            ? LogFileScanner.blockSizes(
                commit.locations, payload: record.payload, recordOffset: offset, version: map.formatVersion) : nil
        let index = accounting.count
        accounting.append(
            Accounting(payload: Int64(record.payload.count) + (blocks.map { $0.uncompressed - $0.stored } ?? 0)))
        if commit.transactionID < lastTransaction {
            problem(
                at: offset,
                "the commit at offset \(offset) has transaction \(commit.transactionID), after transaction "
                    + "\(lastTransaction)")
        }
        for (entity, key) in commit.deletes { delete(entity, key, in: index) }
        var inserts = 0
        var updates = 0
        for (position, write) in commit.writes.enumerated() {
            if write.isInsert { inserts += 1 } else { updates += 1 }
            add(write, of: commit, at: position, in: index, offset: offset)
        }
        log.commits.append(
            ToolCommit(
                offset: offset, recordLength: record.recordLength, payloadLength: Int64(record.payload.count),
                isCompressed: record.isStoredCompressed || (blocks?.compressed ?? 0) > 0,
                transactionID: commit.transactionID, timestamp: commit.timestamp, author: commit.author,
                inserts: inserts, updates: updates, deletes: commit.deletes.count,
                nextPrimaryKey: commit.nextPrimaryKey, blocks: blocks?.count ?? 0,
                compressedBlocks: blocks?.compressed ?? 0))
        versions += Int64(commit.deletes.count + commit.writes.count)
        log.payloadBytes += accounting[index].payload
        log.storedPayloadBytes += record.storedLength
        lastTransaction = max(lastTransaction, commit.transactionID)
        nextPrimaryKey = max(nextPrimaryKey, commit.nextPrimaryKey)
    }

    /// A delete: its own entry's bytes are dead, and so is the version it removes.
    private mutating func delete(_ entity: String, _ key: Int64, in index: Int) {
        var w = LogByteWriter(capacity: 16)
        w.varint(map.indexByName[entity] ?? 0)
        w.zigzag(key)
        accounting[index].deadPayload += Int64(w.bytes.count)
        if let old = live[entity]?.removeValue(forKey: key) {
            accounting[old.commit].deadPayload += old.size
            accounting[old.commit].liveWrites -= 1
        }
    }

    /// A write: the new live version of its record, which makes the one before it dead.
    private mutating func add(
        _ write: SaveWrites.Element, of commit: LogCommit, at position: Int, in index: Int, offset: Int64
    ) {
        let external = commit.externalReferences[position] ?? []
        var w = LogByteWriter(capacity: 64)
        w.u8(0)
        try? LogCodec.encodeSnapshot(
            write.snapshot, key: write.key, entity: write.entity, into: &w, map: map,
            external: { property in external.first { $0.property == property } })
        if let old = live[write.entity]?[write.key] {
            accounting[old.commit].deadPayload += old.size
            accounting[old.commit].liveWrites -= 1
        }
        live[write.entity, default: [:]][write.key] = Version(
            values: write.snapshot.values, commit: index, size: Int64(w.bytes.count), external: external,
            location: position < commit.locations.count ? commit.locations[position] : nil)
        accounting[index].liveWrites += 1
        if let entity = schema.entity(named: write.entity) {
            for found in ToolValueChecker.problems(
                write.snapshot.values, of: entity, storeIdentifier: store.storeIdentifier ?? "",
                skipping: Set(external.map(\.property)))
            {
                problem(at: offset, "the commit at offset \(offset) writes \(write.entity) \(write.key): \(found)")
            }
        }
        if write.key >= commit.nextPrimaryKey {
            problem(
                at: offset,
                "the commit at offset \(offset) writes \(write.entity) \(write.key), but its next primary key is "
                    + "\(commit.nextPrimaryKey)")
        }
    }

    private mutating func problem(at offset: Int64, _ message: String) {
        store.problems.append(ToolProblem(offset: offset, message: message))
    }

    /// The tool's view of the store once the walk has ended at `validLength`, with the
    /// damage that ended it, if any: live and dead bytes commit by commit, the file's
    /// regions, the live records, and what compaction needs.
    consuming func finish(validLength: Int64, damage: ToolProblem?) -> (
        store: ToolStore, extras: LogFileScanner.Extras?
    ) {
        store.damage = damage
        log.validLength = validLength
        var deadBytes: Int64 = 0
        for (i, commit) in log.commits.enumerated() {
            let share = accounting[i]
            if share.liveWrites == 0 {
                deadBytes += commit.recordLength
                log.regions.append(ToolRegion(offset: commit.offset, length: commit.recordLength, kind: .dead))
            } else {
                let payload = max(1, share.payload)
                let dead = commit.recordLength * min(share.deadPayload, payload) / payload
                deadBytes += dead
                log.regions.append(
                    ToolRegion(offset: commit.offset, length: commit.recordLength, kind: .live, deadLength: dead))
            }
        }
        // Checkpoints: the last one is live, every earlier one dead.
        for (i, checkpoint) in checkpoints.enumerated() {
            let isLast = i == checkpoints.count - 1
            if !isLast { deadBytes += checkpoint.recordLength }
            log.regions.append(
                ToolRegion(
                    offset: checkpoint.offset, length: checkpoint.recordLength, kind: .checkpoint,
                    deadLength: isLast ? 0 : checkpoint.recordLength))
            checkpoints[i].commitsAfter += log.commits.count
        }
        log.regions.sort { $0.offset < $1.offset }
        log.checkpoints = checkpoints.count
        log.lastCheckpoint = checkpoints.last
        log.deadVersions =
            log.commits.reduce(0) { $0 + $1.inserts + $1.updates + $1.deletes }
            - live.values.reduce(0) { $0 + $1.count }
        if validLength < fileSize {
            // The walk ended there without damage: the rest is the reserved zero tail.
            log.regions.append(
                ToolRegion(
                    offset: validLength, length: fileSize - validLength, kind: damage == nil ? .reserved : .damaged))
        }
        log.deadBytes = deadBytes
        log.liveBytes = validLength - deadBytes

        var maximumKey: Int64 = 0
        for entity in schema.entities {
            let records = liveRecords(of: entity.name)
            maximumKey = max(maximumKey, records.last?.key ?? 0)
            store.records[entity.name] = records
        }
        store.nextPrimaryKey = max(nextPrimaryKey, maximumKey &+ 1)
        store.log = log
        return (store, LogFileScanner.Extras(description: description, map: map, lastTransaction: lastTransaction))
    }
}
