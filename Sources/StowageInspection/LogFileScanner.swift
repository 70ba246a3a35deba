import Foundation
import Stowage

/// Reads a whole log file record by record with the store's own reader
/// (``LogFormat/readRecord(_:_:at:fileSize:salt:)``: framing, lengths, checksum, LZ4) and
/// decoder (``LogCodec``), without opening the store: nothing is locked, truncated or
/// written. It folds the commits into the live records, as opening does, and keeps
/// what `inspect`, `history` and `verify` show.
///
/// Checkpoint records (format versions 3 and 4) are decoded against the stored schema
/// and compared with the records the commits before them leave
/// (``ToolVerifier/checkpointProblems(_:at:expected:schema:blobs:)``); what disagrees is
/// a problem at the checkpoint's offset. In a version 1 or 2 file a checkpoint is damage.
///
/// Version 4 commits hold their writes in blocks: every block's header, checksum and LZ4
/// bytes are checked as the commit is decoded, and each write's location (its block's
/// offset and its slot) is kept, for the checkpoints' key directories. A version 4 commit
/// record stored LZ4-compressed as a whole is damage.
///
/// Live and dead bytes: a commit record none of whose writes is still the current version
/// of a live record is dead in full (frame included). A commit that still holds a live
/// version is live, except for the share of its bytes (frame included, rounded down) that
/// its superseded writes and its delete entries take up in its uncompressed payload (in
/// version 4, the payload with its blocks decompressed). The last checkpoint is live,
/// every earlier one dead (`Formats/log.md`). The file header and the header record count
/// as live. Bytes after the valid prefix count as neither.
enum LogFileScanner {
    /// What a record of each type means to this reader: the one place that knows the
    /// record types and which format version has them.
    private enum RecordRole {
        case commit
        case checkpoint
        case unexpected(String)
    }

    private static func role(of type: LogFormat.RecordType, formatVersion: Int, at offset: Int64) -> RecordRole {
        let hasCheckpoints = formatVersion >= 3
        switch type {
        case .commit:
            return .commit
        case .checkpoint where hasCheckpoints:
            return .checkpoint
        case .checkpoint:
            return .unexpected(
                "a checkpoint record (type 3) at offset \(offset): format version \(formatVersion) has no checkpoints")
        case .header:
            return .unexpected(
                "a second header record at offset \(offset), where only commits "
                    + (hasCheckpoints ? "and checkpoints " : "") + "may follow the header")
        }
    }

    /// A live record version and where it came from.
    private struct Version {
        var values: [SnapshotValue]
        var commit: Int
        var size: Int64
        var external: [LogExternalReference]
        /// Version 4: its block and slot.
        var location: RecordLocation?
    }

    /// A commit's share of live and dead payload bytes.
    private struct Accounting {
        var deadPayload: Int64 = 0
        var liveWrites = 0
        /// The commit's payload with its blocks (version 4) decompressed.
        var payload: Int64 = 0
    }

    /// What compaction needs besides the store view.
    struct Extras {
        var description: StoredSchema
        var map: LogEntityMap
        var lastTransaction: UInt64
    }

    static func scan(_ file: ToolFile, path: String) throws(ToolFailure) -> ToolStore {
        try scanWithExtras(file, path: path).store
    }

    static func scanWithExtras(_ file: ToolFile, path: String) throws(ToolFailure) -> (
        store: ToolStore, extras: Extras?
    ) {
        let size = file.size
        let first = try file.read(count: LogFormat.fileHeaderSize, at: 0)
        let formatVersion = first.count >= 10 ? Int(first[8]) | Int(first[9]) << 8 : 0
        var store = ToolStore(
            path: path, format: .log, formatVersion: formatVersion, fileSize: size, schema: nil, storeIdentifier: nil,
            createdAt: nil, nextPrimaryKey: 1, records: [:], log: nil, damage: nil, problems: [])
        let preamble: LogPreamble
        let preambleRead: Result<LogPreamble, LogPreamble.Problem>
        do {
            preambleRead = try LogPreamble.read(file.fs, file.fd, fileSize: size)
        } catch {
            throw ToolFailure(.io, "\(path): reading the file header failed: \(error)")
        }
        switch preambleRead {
        case .success(let found): preamble = found
        case .failure(.wrongFormat(let reason)):
            throw ToolFailure(.notAStore, "\(path) is not a log store this tool reads: \(reason)")
        case .failure(.damaged(let offset, let reason, let header)):
            store.damage = ToolProblem(
                offset: offset, message: header == nil ? "the file header is damaged: \(reason)" : reason)
            store.log = details(
                formatVersion: formatVersion, salt: header?.salt ?? 0, generation: header?.generation ?? 0,
                dataStart: header == nil ? 0 : Int64(LogFormat.fileHeaderSize),
                validLength: header == nil ? 0 : Int64(LogFormat.fileHeaderSize), size: size)
            return (store, nil)
        }
        let header = preamble.header
        var log = details(
            formatVersion: formatVersion, salt: header.salt, generation: header.generation,
            dataStart: Int64(LogFormat.fileHeaderSize), validLength: Int64(LogFormat.fileHeaderSize), size: size)

        func read(_ offset: Int64) throws(ToolFailure) -> LogFormat.ReadOutcome {
            do {
                return try LogFormat.readRecord(file.fs, file.fd, at: offset, fileSize: size, salt: header.salt)
            } catch {
                throw ToolFailure(.io, "\(path): reading the record at offset \(offset) failed: \(error)")
            }
        }

        store.storeIdentifier = preamble.storeIdentifier
        store.createdAt = preamble.createdAt
        let description = preamble.schema
        log.payloadBytes += Int64(preamble.payloadBytes)
        log.storedPayloadBytes += preamble.storedPayloadBytes
        var offset = preamble.commitsStart
        let schema = ToolSchema(description)
        let identifier = store.storeIdentifier ?? ""
        store.schema = schema
        let map = LogEntityMap(
            storeIdentifier: identifier, description: description,
            formatVersion: LogFormatVersion(rawValue: UInt16(clamping: formatVersion)))
        log.dataStart = offset
        log.regions = [ToolRegion(offset: 0, length: offset, kind: .header)]

        var live: [String: [Int64: Version]] = [:]
        var accounting: [Accounting] = []
        var lastTransaction: UInt64 = 0
        var nextPrimaryKey: Int64 = 1
        /// Every write and delete of the commits so far (a version 4 checkpoint counts them).
        var versions: Int64 = 0
        var checkpoints: [ToolCheckpoint] = []
        let blobs = ToolExternalReader(logPath: path)

        /// An entity's live records, in primary-key order.
        func liveRecords(of name: String) -> [ToolRecord] {
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
        scan: while true {
            let outcome = try read(offset)
            switch outcome {
            case .end:
                break scan
            case .damaged(let reason):
                store.damage = ToolProblem(offset: offset, message: reason)
                break scan
            case .record(let type, let payload, let next):
                switch role(of: type, formatVersion: formatVersion, at: offset) {
                case .unexpected(let reason):
                    store.damage = ToolProblem(offset: offset, message: reason)
                    break scan
                case .checkpoint:
                    let checkpoint: LogCheckpoint
                    do {
                        checkpoint = try LogCheckpoint.decode(
                            payload, schema: description,
                            formatVersion: LogFormatVersion(rawValue: UInt16(clamping: formatVersion)),
                            fileSize: size)
                    } catch {
                        store.damage = ToolProblem(
                            offset: offset, message: "the checkpoint at offset \(offset) does not decode: \(error)")
                        break scan
                    }
                    var records: [String: [ToolRecord]] = [:]
                    for name in map.names where records[name] == nil { records[name] = liveRecords(of: name) }
                    store.problems += ToolVerifier.checkpointProblems(
                        checkpoint, at: offset,
                        expected: ToolVerifier.CheckpointExpectation(
                            transactionID: lastTransaction, nextPrimaryKey: nextPrimaryKey, versions: versions,
                            records: records),
                        schema: schema, blobs: blobs)
                    let stored = next - offset - Int64(LogFormat.frameSize)
                    checkpoints.append(
                        ToolCheckpoint(
                            offset: offset, recordLength: next - offset, payloadLength: Int64(payload.count),
                            isCompressed: stored != Int64(payload.count), transactionID: checkpoint.transactionID,
                            nextPrimaryKey: checkpoint.nextPrimaryKey,
                            records: checkpoint.entities.reduce(0) { $0 + $1.keys.count },
                            // Minus the commits before it; the total is added at the end.
                            commitsAfter: -log.commits.count))
                    log.payloadBytes += Int64(payload.count)
                    log.storedPayloadBytes += stored
                    offset = next
                case .commit:
                    let stored = next - offset - Int64(LogFormat.frameSize)
                    if formatVersion >= 4, stored != Int64(payload.count) {
                        store.damage = ToolProblem(
                            offset: offset,
                            message: "the version \(formatVersion) commit at offset \(offset) is compressed as a whole "
                                + "(a version \(formatVersion) commit record is stored raw; its blocks are compressed instead)"
                        )
                        break scan
                    }
                    let commit: LogCommit
                    do {
                        commit = try LogCodec.decodeCommit(payload, map: map, recordOffset: offset)
                    } catch {
                        let block = formatVersion >= 4 ? badBlock(in: payload, recordOffset: offset, map: map) : nil
                        store.damage = ToolProblem(
                            offset: offset,
                            message: "the commit at offset \(offset) does not decode: "
                                + (block.map { "its block at offset \($0.offset): \($0.reason)" } ?? "\(error)"))
                        break scan
                    }
                    let blocks =
                        formatVersion >= 4
                        ? blockSizes(
                            commit.locations, payload: payload, recordOffset: offset, version: map.formatVersion) : nil
                    let index = accounting.count
                    accounting.append(
                        Accounting(payload: Int64(payload.count) + (blocks.map { $0.uncompressed - $0.stored } ?? 0)))
                    if commit.transactionID < lastTransaction {
                        store.problems.append(
                            ToolProblem(
                                offset: offset,
                                message: "the commit at offset \(offset) has transaction \(commit.transactionID), "
                                    + "after transaction \(lastTransaction)"))
                    }
                    var inserts = 0
                    var updates = 0
                    for (entity, key) in commit.deletes {
                        var w = LogByteWriter(capacity: 16)
                        w.varint(map.indexByName[entity] ?? 0)
                        w.zigzag(key)
                        accounting[index].deadPayload += Int64(w.bytes.count)
                        if let old = live[entity]?.removeValue(forKey: key) {
                            accounting[old.commit].deadPayload += old.size
                            accounting[old.commit].liveWrites -= 1
                        }
                    }
                    for (position, write) in commit.writes.enumerated() {
                        if write.isInsert { inserts += 1 } else { updates += 1 }
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
                            values: write.snapshot.values, commit: index, size: Int64(w.bytes.count),
                            external: external,
                            location: position < commit.locations.count ? commit.locations[position] : nil)
                        accounting[index].liveWrites += 1
                        if let entity = schema.entity(named: write.entity) {
                            for problem in ToolValueChecker.problems(
                                write.snapshot.values, of: entity, storeIdentifier: identifier,
                                skipping: Set(external.map(\.property)))
                            {
                                store.problems.append(
                                    ToolProblem(
                                        offset: offset,
                                        message: "the commit at offset \(offset) writes \(write.entity) "
                                            + "\(write.key): \(problem)"))
                            }
                        }
                        if write.key >= commit.nextPrimaryKey {
                            store.problems.append(
                                ToolProblem(
                                    offset: offset,
                                    message: "the commit at offset \(offset) writes \(write.entity) \(write.key), "
                                        + "but its next primary key is \(commit.nextPrimaryKey)"))
                        }
                    }
                    log.commits.append(
                        ToolCommit(
                            offset: offset, recordLength: next - offset, payloadLength: Int64(payload.count),
                            isCompressed: stored != Int64(payload.count) || (blocks?.compressed ?? 0) > 0,
                            transactionID: commit.transactionID, timestamp: commit.timestamp, author: commit.author,
                            inserts: inserts, updates: updates, deletes: commit.deletes.count,
                            nextPrimaryKey: commit.nextPrimaryKey, blocks: blocks?.count ?? 0,
                            compressedBlocks: blocks?.compressed ?? 0))
                    versions += Int64(commit.deletes.count + commit.writes.count)
                    log.payloadBytes += accounting[index].payload
                    log.storedPayloadBytes += stored
                    lastTransaction = max(lastTransaction, commit.transactionID)
                    nextPrimaryKey = max(nextPrimaryKey, commit.nextPrimaryKey)
                    offset = next
                }
            }
        }
        log.validLength = offset

        // Live and dead bytes, commit by commit.
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
        if offset < size {
            // Replay ended there without damage: the rest is the reserved zero tail.
            let reserved = store.damage == nil
            log.regions.append(ToolRegion(offset: offset, length: size - offset, kind: reserved ? .reserved : .damaged))
        }
        log.deadBytes = deadBytes
        log.liveBytes = offset - deadBytes

        var maximumKey: Int64 = 0
        for entity in schema.entities {
            let records = liveRecords(of: entity.name)
            maximumKey = max(maximumKey, records.last?.key ?? 0)
            store.records[entity.name] = records
        }
        store.nextPrimaryKey = max(nextPrimaryKey, maximumKey &+ 1)
        store.log = log
        return (store, Extras(description: description, map: map, lastTransaction: lastTransaction))
    }

    /// The blocks of a decoded version 4 or 5 commit, found from its writes' locations: how
    /// many, how many hold LZ4 bytes (version 4: the block is compressed; version 5: at
    /// least one of its writes is), and their stored and uncompressed bytes.
    private static func blockSizes(
        _ locations: [RecordLocation], payload: [UInt8], recordOffset: Int64, version: LogFormatVersion
    ) -> (count: Int, compressed: Int, stored: Int64, uncompressed: Int64) {
        var result = (count: 0, compressed: 0, stored: Int64(0), uncompressed: Int64(0))
        var previous: Int64 = -1
        for location in locations where location.blockOffset != previous {
            previous = location.blockOffset
            let start = Int(location.blockOffset - recordOffset) - LogFormat.frameSize
            guard start >= 0, start < payload.count,
                let header = try? LogBlocks.header(
                    payload[start...], available: payload.count - start - LogBlocks.headerSize, version: version)
            else { continue }
            result.count += 1
            if header.compressed { result.compressed += 1 }
            let storedStart = start + LogBlocks.headerSize
            if header.perWrite, storedStart + header.storedLength <= payload.count,
                let table = try? LogBlocks.table(
                    header, stored: payload[storedStart..<storedStart + header.storedLength]),
                !table.lengths.isEmpty
            {
                result.compressed += 1
            }
            result.stored += Int64(header.storedLength)
            result.uncompressed += Int64(header.uncompressedLength)
        }
        return result
    }

    /// The first block of a version 4 commit payload that fails a check (header, lengths,
    /// checksum, LZ4, contents), with its file offset; `nil` when the blocks are whole or
    /// the commit does not decode before its blocks.
    private static func badBlock(in payload: [UInt8], recordOffset: Int64, map: LogEntityMap) -> (
        offset: Int64, reason: String
    )? {
        var r = LogByteReader(payload)
        do {
            _ = try r.varint()
            _ = try r.zigzag()
            if try r.u8() == 1 { _ = try r.string() }
            _ = try r.zigzag()
            for _ in 0..<(try r.count(minimumSize: 2)) {
                _ = try r.varint()
                _ = try r.zigzag()
            }
            _ = try r.count(minimumSize: 4)
        } catch {
            return nil
        }
        while !r.isAtEnd {
            let start = r.position
            let offset = recordOffset + Int64(LogFormat.frameSize + start)
            do {
                let header = try LogBlocks.header(
                    r.bytes[start...], available: r.remaining - LogBlocks.headerSize, version: map.formatVersion)
                let headerBytes = try r.bytes(LogBlocks.headerSize)
                let stored = try r.bytes(header.storedLength)
                let (contents, ends) = try LogBlocks.contents(header, headerBytes: headerBytes, stored: stored)
                // The writes: a kind byte and a snapshot each, to the end of the contents
                // (in version 5 each to the end its block's table gives it).
                var block = LogByteReader(contents)
                var references: [LogExternalReference] = []
                for i in 0..<header.writes {
                    let kind = try block.u8()
                    guard kind <= 1 else { return (offset, "bad write kind \(kind)") }
                    _ = try LogCodec.decodeSnapshot(&block, map: map, externalReferences: &references)
                    if let ends, block.position != ends[i] {
                        return (offset, "write \(i) ends at byte \(block.position), its table says \(ends[i])")
                    }
                }
                guard block.isAtEnd else { return (offset, "\(block.remaining) bytes after its last write") }
            } catch {
                return (offset, "\(error)")
            }
        }
        return nil
    }

    private static func details(
        formatVersion: Int, salt: UInt64, generation: UInt64, dataStart: Int64, validLength: Int64, size: Int64
    ) -> ToolLogDetails {
        ToolLogDetails(
            formatVersion: formatVersion, salt: salt, generation: generation, dataStart: dataStart,
            validLength: validLength, commits: [], checkpoints: 0, liveBytes: validLength, deadBytes: 0,
            deadVersions: 0, payloadBytes: 0, storedPayloadBytes: 0,
            regions: (validLength > 0 ? [ToolRegion(offset: 0, length: validLength, kind: .header)] : [])
                + (size > validLength
                    ? [ToolRegion(offset: validLength, length: size - validLength, kind: .damaged)] : []))
    }
}
