import Foundation

/// Encodes and decodes snapshots, commits and the header record without Codable.
package enum LogCodec {
    package static let maximumNesting = 64

    // MARK: Header record

    package static func encodeHeader(
        storeIdentifier: String, createdAt: Int64, schema: StoredSchema, formatVersion: LogFormatVersion
    ) -> [UInt8] {
        var w = LogByteWriter()
        w.string(storeIdentifier)
        w.zigzag(createdAt)
        schema.encode(into: &w, formatVersion: formatVersion)
        return w.bytes
    }

    package static func decodeHeader(_ payload: [UInt8], formatVersion: LogFormatVersion = LogFormat.version) throws
        -> (
            storeIdentifier: String, createdAt: Int64, schema: StoredSchema
        )
    {
        var r = LogByteReader(payload)
        let identifier = try r.string()
        let createdAt = try r.zigzag()
        let schema = try StoredSchema.decode(from: &r, formatVersion: formatVersion)
        guard r.isAtEnd else { throw LogDecodeError("\(r.remaining) bytes after the header record's schema") }
        return (identifier, createdAt, schema)
    }

    // MARK: Commits

    /// - Parameter external: the reference to write for a write's property (by write
    ///   position and property position), instead of its value; `nil` writes the value.
    /// - Parameter keepContents: versions 4 and 5: how many uncompressed bytes of the last blocks
    ///   to keep in the result, for the cache.
    /// - Parameter blockBytes: versions 4 and 5: the uncompressed bytes at which a block is closed.
    package static func encodeCommit(
        _ commit: LogCommit, map: LogEntityMap, external: ((Int, Int) -> LogExternalReference?)? = nil,
        keepContents: Int = 0, spill: LogCommitSpill? = nil, blockBytes: Int = LogBlocks.targetBytes
    ) throws -> LogEncodedCommit {
        let headroom = map.formatVersion.locatesRecords ? LogFormat.frameSize : 0
        // Room for a typical record (a few hundred bytes), so that a large commit's buffer is
        // not copied as it grows; pages never written are never resident.
        var w = LogByteWriter(capacity: headroom + 64 + commit.writes.count * 256)
        w.bytes.append(contentsOf: repeatElement(0, count: headroom))
        w.varint(commit.transactionID)
        w.zigzag(commit.timestamp)
        if let author = commit.author {
            w.u8(1)
            w.string(author)
        } else {
            w.u8(0)
        }
        w.zigzag(commit.nextPrimaryKey)
        w.varint(commit.deletes.count)
        for (entity, key) in commit.deletes {
            w.varint(try entityIndex(entity, map))
            w.zigzag(key)
        }
        if map.formatVersion.keepsHistory { try encodeHistory(commit.history, into: &w, map: map) }
        if map.formatVersion.locatesRecords {
            var spilled = LogSpilled()
            let blocks = try encodeBlocks(
                commit, into: &w, map: map, external: external, keepContents: keepContents, headroom: headroom,
                spill: spill, spilled: &spilled, blockBytes: blockBytes)
            return LogEncodedCommit(
                bytes: w.bytes, headroom: headroom, blocks: blocks, formatVersion: map.formatVersion, spilled: spilled)
        }
        w.varint(commit.writes.count)
        for (position, write) in commit.writes.enumerated() {
            w.u8(write.isInsert ? 0 : 1)
            try encodeSnapshot(
                write.snapshot, key: write.key, entity: write.entity, into: &w, map: map,
                external: external.map { lookup in { lookup(position, $0) } })
        }
        return LogEncodedCommit(bytes: w.bytes, headroom: headroom, blocks: [], formatVersion: map.formatVersion)
    }

    /// What a commit's header says, read without decoding its writes: for a version 4
    /// or 5 commit, its blocks are walked by their headers and not decompressed.
    package struct CommitSummary {
        package var transactionID: UInt64
        package var nextPrimaryKey: Int64
        /// Its deletes and writes.
        package var versions: Int64
    }

    /// Reads a commit's transaction, next key and number of versions. For a version 4
    /// or 5 commit the block lengths are checked, not the blocks' checksums or contents.
    static func decodeCommitSummary(_ payload: [UInt8], map: LogEntityMap) throws -> CommitSummary {
        var r = LogByteReader(payload)
        let (transactionID, _, _, nextPrimaryKey) = try decodeCommitStart(&r)
        let deleteCount = try r.count(minimumSize: 2)
        for _ in 0..<deleteCount {
            _ = try entityName(try r.varint(), map)
            _ = try r.zigzag()
        }
        if map.formatVersion.keepsHistory { _ = try decodeHistory(&r, map: map) }
        let writeCount = try r.count(minimumSize: 4)
        guard map.formatVersion.locatesRecords else {
            throw LogDecodeError("only a version 4 or 5 commit can be summarized without decoding its writes")
        }
        var writes = 0
        while !r.isAtEnd {
            let header = try LogBlocks.header(
                r.bytes[r.position...], available: r.remaining - LogBlocks.headerSize, version: map.formatVersion)
            _ = try r.bytes(LogBlocks.headerSize + header.storedLength)
            writes += header.writes
        }
        guard writes == writeCount else {
            throw LogDecodeError("the commit's blocks hold \(writes) writes, its header says \(writeCount)")
        }
        return CommitSummary(
            transactionID: transactionID, nextPrimaryKey: nextPrimaryKey, versions: Int64(deleteCount + writeCount))
    }

    private static func decodeCommitStart(_ r: inout LogByteReader) throws -> (UInt64, Int64, String?, Int64) {
        let transactionID = try r.varint()
        let timestamp = try r.zigzag()
        let author: String?
        switch try r.u8() {
        case 0: author = nil
        case 1: author = try r.string()
        case let flag: throw LogDecodeError("bad author flag \(flag)")
        }
        return (transactionID, timestamp, author, try r.zigzag())
    }

    /// Decodes a whole commit. A version 4 or 5 commit's blocks are checked (checksums, tables, LZ4)
    /// and the writes' locations computed from `recordOffset`, where the record starts.
    package static func decodeCommit(_ payload: [UInt8], map: LogEntityMap, recordOffset: Int64 = 0) throws -> LogCommit
    {
        var r = LogByteReader(payload)
        let (transactionID, timestamp, author, nextPrimaryKey) = try decodeCommitStart(&r)
        var deletes: [(entity: String, key: Int64)] = []
        let deleteCount = try r.count(minimumSize: 2)
        deletes.reserveCapacity(deleteCount)
        for _ in 0..<deleteCount {
            let entity = try entityName(try r.varint(), map)
            deletes.append((entity, try r.zigzag()))
        }
        var writes: SaveWrites = []
        var references: [Int: [LogExternalReference]] = [:]
        let history = map.formatVersion.keepsHistory ? try decodeHistory(&r, map: map) : SaveHistory()
        let writeCount = try r.count(minimumSize: 4)
        writes.reserveCapacity(writeCount)
        var locations: [RecordLocation] = []
        /// `ends`: where each write must end (version 5), else `nil`.
        func decodeWrites(_ r: inout LogByteReader, _ count: Int, ends: [Int]? = nil) throws {
            for i in 0..<count {
                let isInsert: Bool
                switch try r.u8() {
                case 0: isInsert = true
                case 1: isInsert = false
                case let kind: throw LogDecodeError("bad write kind \(kind)")
                }
                var found: [LogExternalReference] = []
                let snapshot = try decodeSnapshot(&r, map: map, externalReferences: &found)
                if !found.isEmpty { references[writes.count] = found }
                guard let key = snapshot.persistentIdentifier.primaryKey else {
                    throw LogDecodeError("snapshot without a key")
                }
                writes.append((snapshot.persistentIdentifier.entityName, key, snapshot, isInsert))
                if let ends, r.position != ends[i] {
                    throw LogDecodeError("write \(i) of a block ends at byte \(r.position), its table says \(ends[i])")
                }
            }
        }
        if map.formatVersion.locatesRecords {
            locations.reserveCapacity(writeCount)
            while !r.isAtEnd {
                let start = r.position
                let header = try LogBlocks.header(
                    r.bytes[r.position...], available: r.remaining - LogBlocks.headerSize, version: map.formatVersion)
                guard writes.count + header.writes <= writeCount else {
                    throw LogDecodeError("the commit's blocks hold more than its \(writeCount) writes")
                }
                let headerBytes = try r.bytes(LogBlocks.headerSize)
                let stored = try r.bytes(header.storedLength)
                let contents = try LogBlocks.contents(header, headerBytes: headerBytes, stored: stored)
                var block = LogByteReader(contents.bytes)
                try decodeWrites(&block, header.writes, ends: contents.writeEnds)
                guard block.isAtEnd else { throw LogDecodeError("\(block.remaining) bytes after a block's last write") }
                let blockOffset = recordOffset + Int64(LogFormat.frameSize + start)
                for slot in 0..<header.writes { locations.append(RecordLocation(blockOffset: blockOffset, slot: slot)) }
            }
            guard writes.count == writeCount else {
                throw LogDecodeError("the commit's blocks hold \(writes.count) writes, its header says \(writeCount)")
            }
        } else {
            try decodeWrites(&r, writeCount)
        }
        guard r.isAtEnd else { throw LogDecodeError("\(r.remaining) bytes after the commit's last write") }
        var commit = LogCommit(
            transactionID: transactionID, timestamp: timestamp, author: author, nextPrimaryKey: nextPrimaryKey,
            deletes: deletes, writes: writes, externalReferences: references, locations: locations)
        try checkHistory(history, of: commit)
        commit.history = history
        return commit
    }

    // MARK: History (version 6)

    /// Appends a commit's history section (`Formats/log.md`, "Commit record", version 6).
    static func encodeHistory(_ history: SaveHistory, into w: inout LogByteWriter, map: LogEntityMap) throws {
        w.string(history.writer.program)
        w.varint(UInt64(clamping: history.writer.process))
        w.varint(history.updated.count)
        for (i, write) in history.updated.writes.enumerated() {
            let positions = history.updated.positions(at: i)
            w.varint(write)
            w.varint(positions.count)
            for position in positions { w.varint(position) }
        }
        w.varint(history.tombstones.count)
        for delete in history.tombstones.keys.sorted() {
            let values = history.tombstones[delete] ?? []
            w.varint(delete)
            w.varint(values.count)
            for (position, value) in values {
                w.varint(position)
                try encodeValue(value, into: &w, map: map)
            }
        }
    }

    /// Reads a commit's history section; its positions are checked against the commit by
    /// ``checkHistory(_:of:)`` once its writes are decoded.
    static func decodeHistory(_ r: inout LogByteReader, map: LogEntityMap) throws -> SaveHistory {
        var history = SaveHistory()
        history.writer = try decodeWriter(&r)
        var previous = -1
        for _ in 0..<(try r.count(minimumSize: 2)) {
            let write = try historyIndex(&r)
            guard write > previous else { throw LogDecodeError("the history's updates are not in ascending order") }
            previous = write
            history.updated.addUpdate(write)
            var last = -1
            for _ in 0..<(try r.count()) {
                let position = try historyIndex(&r)
                guard position > last else { throw LogDecodeError("an update's changed positions are not ascending") }
                last = position
                history.updated.addChanged(position)
            }
        }
        previous = -1
        for _ in 0..<(try r.count(minimumSize: 2)) {
            let delete = try historyIndex(&r)
            guard delete > previous else { throw LogDecodeError("the history's tombstones are not in ascending order") }
            previous = delete
            var values: [(Int, SnapshotValue)] = []
            for _ in 0..<(try r.count(minimumSize: 2)) {
                values.append((try historyIndex(&r), try decodeValue(&r, map: map, depth: 0)))
            }
            history.tombstones[delete] = values
        }
        return history
    }

    /// The program and process of a history section or a history record's entry.
    static func decodeWriter(_ r: inout LogByteReader) throws -> HistoryWriter {
        let program = try r.string()
        let process = try r.varint()
        guard process <= UInt64(Int32.max) else { throw LogDecodeError("a process identifier of \(process)") }
        return HistoryWriter(program: program, process: Int64(process))
    }

    /// A position in a history section: a varint below 2^31.
    private static func historyIndex(_ r: inout LogByteReader) throws -> Int {
        let value = try r.varint()
        guard value < 1 << 31 else { throw LogDecodeError("a history position of \(value) is out of range") }
        return Int(value)
    }

    /// A history section must name updates and deletes the commit has, and positions its
    /// entities have.
    static func checkHistory(_ history: SaveHistory, of commit: LogCommit) throws {
        for (i, write) in history.updated.writes.enumerated() {
            let positions = history.updated.positions(at: i)
            guard write < commit.writes.count, !commit.writes[write].isInsert else {
                throw LogDecodeError("the history names write \(write), which is not an update of the commit")
            }
            guard (positions.last ?? -1) < commit.writes[write].snapshot.values.count else {
                throw LogDecodeError("the history names a value write \(write) does not have")
            }
        }
        for delete in history.tombstones.keys where delete >= commit.deletes.count {
            throw LogDecodeError("the history names delete \(delete), which the commit does not have")
        }
    }

    // MARK: Snapshots

    package static func entityIndex(_ name: String, _ map: LogEntityMap) throws -> Int {
        guard let index = map.indexByName[name] else {
            throw SwiftDataError(.unknownModelType, "\(name) is not in the log store's schema")
        }
        return index
    }

    static func entityName(_ index: UInt64, _ map: LogEntityMap) throws -> String {
        guard index < UInt64(map.names.count) else { throw LogDecodeError("entity index \(index) is out of range") }
        return map.names[Int(index)]
    }

}
