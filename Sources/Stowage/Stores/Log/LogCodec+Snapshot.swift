import Foundation

// Snapshots and values inside commit records (`Formats/snapshot.md`).
extension LogCodec {
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
                case .keyed:
                    throw DataStoreError(
                        .unsupportedFeature,
                        "\(id) is a record of a custom store with a non-integer key; the log store can refer "
                            + "only to records with integer keys")
                }
            }
        }
    }

    static func decodeValue(_ r: inout LogByteReader, map: LogEntityMap, depth: Int) throws -> SnapshotValue {
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
