import Foundation

/// Encodes and decodes snapshots, commits and the header record without Codable.
package enum LogCodec {
    package static let maximumNesting = 64

    // MARK: Header record

    package static func encodeHeader(storeIdentifier: String, createdAt: Int64, schema: StoredSchema) -> [UInt8] {
        var w = LogByteWriter()
        w.string(storeIdentifier)
        w.zigzag(createdAt)
        schema.encode(into: &w)
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
    package static func decodeCommitSummary(_ payload: [UInt8], map: LogEntityMap) throws -> CommitSummary {
        var r = LogByteReader(payload)
        let (transactionID, _, _, nextPrimaryKey) = try decodeCommitStart(&r)
        let deleteCount = try r.count(minimumSize: 2)
        for _ in 0..<deleteCount {
            _ = try entityName(try r.varint(), map)
            _ = try r.zigzag()
        }
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
        return LogCommit(
            transactionID: transactionID, timestamp: timestamp, author: author, nextPrimaryKey: nextPrimaryKey,
            deletes: deletes, writes: writes, externalReferences: references, locations: locations)
    }

    // MARK: Snapshots

    package static func entityIndex(_ name: String, _ map: LogEntityMap) throws -> Int {
        guard let index = map.indexByName[name] else {
            throw SwiftDataError(.unknownModelType, "\(name) is not in the log store's schema")
        }
        return index
    }

    private static func entityName(_ index: UInt64, _ map: LogEntityMap) throws -> String {
        guard index < UInt64(map.names.count) else { throw LogDecodeError("entity index \(index) is out of range") }
        return map.names[Int(index)]
    }

    /// - Parameter entityIndex: `entity`'s index in `map`, when the caller knows it.
    package static func encodeSnapshot(
        _ snapshot: DefaultSnapshot, key: Int64, entity: String, into w: inout LogByteWriter, map: LogEntityMap,
        external: ((Int) -> LogExternalReference?)? = nil, entityIndex known: Int? = nil
    ) throws {
        let index = try known ?? entityIndex(entity, map)
        guard snapshot.values.count == map.propertyCounts[index] else {
            throw SwiftDataError(
                .modelValidationFailure,
                "\(entity): a snapshot has \(snapshot.values.count) values, the schema \(map.propertyCounts[index])")
        }
        w.varint(index)
        w.zigzag(key)
        w.varint(snapshot.values.count)
        for (position, value) in snapshot.values.enumerated() {
            if let reference = external?(position) {
                w.u8(0x11)
                w.varint(reference.transactionID)
                w.varint(reference.byteCount)
                w.u32(reference.checksum)
            } else {
                try encodeValue(value, into: &w, map: map)
            }
        }
    }

    /// Decodes a snapshot; an external reference (tag 0x11, version 2, an external-storage
    /// property) leaves `.null` in its slot and is appended to `externalReferences`.
    ///
    /// With `columns`, only the values at those positions are decoded (and only their
    /// external references gathered); the others are skipped and left `.null`, and a
    /// skipped string is not checked for valid UTF-8 (the block's checksum still covers it).
    package static func decodeSnapshot(
        _ r: inout LogByteReader, map: LogEntityMap, externalReferences: inout [LogExternalReference],
        columns: SnapshotColumns = .all
    ) throws -> DefaultSnapshot {
        let rawIndex = try r.varint()
        let entity = try entityName(rawIndex, map)
        let key = try r.zigzag()
        let count = try r.count()
        guard count == map.propertyCounts[Int(rawIndex)] else {
            throw LogDecodeError(
                "\(entity) snapshot has \(count) values, the schema \(map.propertyCounts[Int(rawIndex)])")
        }
        let external = map.external[Int(rawIndex)]
        var values: [SnapshotValue] = []
        values.reserveCapacity(count)
        for position in 0..<count {
            if !columns.contains(position) {
                try r.skipValue()
                values.append(.null)
            } else if !external.isEmpty, r.peek() == 0x11, external.contains(position) {
                _ = try r.u8()
                let transactionID = try r.varint()
                let byteCount = try r.varint()
                let checksum = try r.u32()
                externalReferences.append(
                    LogExternalReference(
                        property: position, transactionID: transactionID, byteCount: byteCount, checksum: checksum))
                values.append(.null)
            } else {
                values.append(try decodeValue(&r, map: map, depth: 0))
            }
        }
        return DefaultSnapshot(
            persistentIdentifier: .permanent(in: map.scopes[Int(rawIndex)], primaryKey: key),
            values: values)
    }

    /// Decodes a snapshot that may not hold external references.
    package static func decodeSnapshot(_ r: inout LogByteReader, map: LogEntityMap) throws -> DefaultSnapshot {
        var references: [LogExternalReference] = []
        let snapshot = try decodeSnapshot(&r, map: map, externalReferences: &references)
        guard references.isEmpty else { throw LogDecodeError("an external reference where none may be") }
        return snapshot
    }

    // MARK: Values

    package static func encodeValue(
        _ value: SnapshotValue, into w: inout LogByteWriter, map: LogEntityMap, depth: Int = 0
    )
        throws
    {
        switch value {
        case .null: w.u8(0x00)
        case .bool(let b): w.u8(b ? 0x02 : 0x01)
        case .int(let v):
            w.u8(0x03)
            w.zigzag(v)
        case .uint(let v):
            w.u8(0x04)
            w.varint(v)
        case .double(let v):
            w.u8(0x05)
            w.u64(v.bitPattern)
        case .string(let s):
            w.u8(0x06)
            w.string(s)
        case .date(let d):
            w.u8(0x07)
            w.u64(d.timeIntervalSinceReferenceDate.bitPattern)
        case .data(let d):
            w.u8(0x08)
            w.data(d)
        case .uuid(let u):
            w.u8(0x09)
            withUnsafeBytes(of: u.uuid) { w.bytes.append(contentsOf: $0) }
        case .url(let url):
            if let base = url.baseURL {
                w.u8(0x0B)
                w.string(url.relativeString)
                w.string(base.absoluteString)
            } else {
                w.u8(0x0A)
                w.string(url.relativeString)
            }
        case .decimal(let d):
            w.u8(0x0C)
            w.string(d.isNaN ? "NaN" : d.description)
        case .array where depth >= maximumNesting, .object where depth >= maximumNesting:
            throw SwiftDataError(
                .unsupportedValue, "a value nests arrays or objects deeper than \(maximumNesting) levels")
        case .array(let items):
            w.u8(0x0D)
            w.varint(items.count)
            for item in items { try encodeValue(item, into: &w, map: map, depth: depth + 1) }
        case .object(let fields):
            w.u8(0x0E)
            w.varint(fields.count)
            for key in fields.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
                w.string(key)
                try encodeValue(fields[key] ?? .null, into: &w, map: map, depth: depth + 1)
            }
        case .identifier(let id):
            if case .permanent(let key) = id.storage, id.storeIdentifier == map.storeIdentifier,
                let index = map.indexByName[id.entityName]
            {
                w.u8(0x0F)
                w.varint(index)
                w.zigzag(key)
            } else {
                w.u8(0x10)
                w.string(id.entityName)
                if let store = id.storeIdentifier {
                    w.u8(1)
                    w.string(store)
                } else {
                    w.u8(0)
                }
                switch id.storage {
                case .temporary(let n):
                    w.u8(0)
                    w.varint(n)
                case .permanent(let key):
                    w.u8(1)
                    w.zigzag(key)
                }
            }
        }
    }

    package static func decodeValue(_ r: inout LogByteReader, map: LogEntityMap, depth: Int) throws -> SnapshotValue {
        let tag = try r.u8()
        switch tag {
        case 0x00: return .null
        case 0x01: return .bool(false)
        case 0x02: return .bool(true)
        case 0x03: return .int(try r.zigzag())
        case 0x04: return .uint(try r.varint())
        case 0x05: return .double(Double(bitPattern: try r.u64()))
        case 0x06: return .string(try r.string())
        case 0x07: return .date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: try r.u64())))
        case 0x08:
            let length = try r.count()
            return .data(Data(try r.bytes(length)))
        case 0x09:
            // Loaded from the bytes where they lie: copying them into an array first was an
            // allocation a record.
            return .uuid(UUID(uuid: try r.uuid()))
        case 0x0A, 0x0B:
            let relative = try r.string()
            let base: URL?
            if tag == 0x0B {
                let baseString = try r.string()
                guard let parsed = URL(string: baseString) else { throw LogDecodeError("bad base URL \(baseString)") }
                base = parsed
            } else {
                base = nil
            }
            guard let url = URL(string: relative, relativeTo: base) else { throw LogDecodeError("bad URL \(relative)") }
            return .url(url)
        case 0x0C:
            let text = try r.string()
            if text == "NaN" { return .decimal(.nan) }
            guard let decimal = Decimal(string: text) else {
                throw LogDecodeError("bad decimal \(text)")
            }
            return .decimal(decimal)
        case 0x0D, 0x0E:
            guard depth < maximumNesting else { throw LogDecodeError("values nest deeper than \(maximumNesting)") }
            let count = try r.count()
            if tag == 0x0D {
                var items: [SnapshotValue] = []
                items.reserveCapacity(count)
                for _ in 0..<count { items.append(try decodeValue(&r, map: map, depth: depth + 1)) }
                return .array(items)
            }
            var fields: [String: SnapshotValue] = [:]
            fields.reserveCapacity(count)
            for _ in 0..<count {
                let key = try r.string()
                let value = try decodeValue(&r, map: map, depth: depth + 1)
                guard fields.updateValue(value, forKey: key) == nil else {
                    throw LogDecodeError("duplicate key \(key)")
                }
            }
            return .object(fields)
        case 0x0F:
            let index = try r.varint()
            _ = try entityName(index, map)
            return .identifier(.permanent(in: map.scopes[Int(index)], primaryKey: try r.zigzag()))
        case 0x10:
            let entity = try r.string()
            let store: String?
            switch try r.u8() {
            case 0: store = nil
            case 1: store = try r.string()
            case let flag: throw LogDecodeError("bad identifier store flag \(flag)")
            }
            switch try r.u8() {
            case 0:
                return .identifier(
                    PersistentIdentifier(
                        entityName: entity, storeIdentifier: store, storage: .temporary(try r.varint())))
            case 1:
                return .identifier(
                    PersistentIdentifier(
                        entityName: entity, storeIdentifier: store, storage: .permanent(try r.zigzag())))
            case let kind: throw LogDecodeError("bad identifier kind \(kind)")
            }
        default:
            throw LogDecodeError("unknown value tag \(tag) at byte \(r.position - 1)")
        }
    }
}
