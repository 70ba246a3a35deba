import Foundation

/// Turns a ``SnapshotValue`` back into any `Decodable` type.
///
/// Integer decoding checks ranges, so a stored value that does not fit the property's
/// type is an error rather than a trap.
struct SnapshotValueDecoder {
    /// Decodes a value of `type` from `value`.
    /// - Throws: ``SwiftDataError`` with code `.modelValidationFailure` naming the
    ///   coding path and what was found.
    static func decode<T: Decodable>(_ type: T.Type, from value: SnapshotValue) throws -> T {
        if let direct = try directValue(type, value, codingPath: []) { return direct }
        do {
            return try T(from: _SnapshotDecoder(value: value, codingPath: []))
        } catch let error as SwiftDataError {
            throw error
        } catch {
            throw SwiftDataError(.modelValidationFailure, "cannot decode \(T.self): \(error)")
        }
    }

    static func mismatch(_ expected: Any.Type, _ value: SnapshotValue, _ path: [any CodingKey]) -> SwiftDataError {
        let at = path.isEmpty ? "" : " at \(path.map(\.stringValue).joined(separator: "."))"
        return SwiftDataError(
            .modelValidationFailure, "expected \(expected) but found \(value.kindName)\(at)")
    }

    static func integer<I: FixedWidthInteger>(_ type: I.Type, _ value: SnapshotValue, _ path: [any CodingKey])
        throws -> I
    {
        switch value {
        case .int(let v): if let r = I(exactly: v) { return r }
        case .uint(let v): if let r = I(exactly: v) { return r }
        case .double(let v): if let r = I(exactly: v) { return r }
        default: break
        }
        throw mismatch(I.self, value, path)
    }

    static func floating(_ value: SnapshotValue, _ path: [any CodingKey]) throws -> Double {
        switch value {
        case .double(let v): return v
        case .int(let v): return Double(v)
        case .uint(let v): return Double(v)
        case .decimal(let v): return NSDecimalNumber(decimal: v).doubleValue
        default: throw mismatch(Double.self, value, path)
        }
    }

    /// The fast path for leaf types, including Foundation's.
    static func directValue<T>(_ type: T.Type, _ value: SnapshotValue, codingPath: [any CodingKey]) throws -> T? {
        func cast(_ v: Any) throws -> T {
            guard let r = v as? T else { throw mismatch(T.self, value, codingPath) }
            return r
        }
        switch type {
        case is String.Type:
            guard case .string(let v) = value else { throw mismatch(T.self, value, codingPath) }
            return try cast(v)
        case is Bool.Type:
            guard case .bool(let v) = value else { throw mismatch(T.self, value, codingPath) }
            return try cast(v)
        case is Int.Type: return try cast(integer(Int.self, value, codingPath))
        case is Int64.Type: return try cast(integer(Int64.self, value, codingPath))
        case is Int32.Type: return try cast(integer(Int32.self, value, codingPath))
        case is Int16.Type: return try cast(integer(Int16.self, value, codingPath))
        case is Int8.Type: return try cast(integer(Int8.self, value, codingPath))
        case is UInt.Type: return try cast(integer(UInt.self, value, codingPath))
        case is UInt64.Type: return try cast(integer(UInt64.self, value, codingPath))
        case is UInt32.Type: return try cast(integer(UInt32.self, value, codingPath))
        case is UInt16.Type: return try cast(integer(UInt16.self, value, codingPath))
        case is UInt8.Type: return try cast(integer(UInt8.self, value, codingPath))
        case is Double.Type: return try cast(floating(value, codingPath))
        case is Float.Type: return try cast(Float(floating(value, codingPath)))
        case is Date.Type:
            switch value {
            case .date(let v): return try cast(v)
            case .double(let v): return try cast(Date(timeIntervalSinceReferenceDate: v))
            default: throw mismatch(T.self, value, codingPath)
            }
        case is Data.Type:
            guard case .data(let v) = value else { throw mismatch(T.self, value, codingPath) }
            return try cast(v)
        case is UUID.Type:
            switch value {
            case .uuid(let v): return try cast(v)
            case .string(let s):
                guard let v = UUID(uuidString: s) else { throw mismatch(T.self, value, codingPath) }
                return try cast(v)
            default: throw mismatch(T.self, value, codingPath)
            }
        case is URL.Type:
            switch value {
            case .url(let v): return try cast(v)
            case .string(let s):
                guard let v = URL(string: s) else { throw mismatch(T.self, value, codingPath) }
                return try cast(v)
            default: throw mismatch(T.self, value, codingPath)
            }
        case is Decimal.Type:
            switch value {
            case .decimal(let v): return try cast(v)
            case .int(let v): return try cast(Decimal(v))
            case .uint(let v): return try cast(Decimal(v))
            case .double(let v): return try cast(Decimal(v))
            case .string(let s):
                guard let v = Decimal(string: s) else { throw mismatch(T.self, value, codingPath) }
                return try cast(v)
            default: throw mismatch(T.self, value, codingPath)
            }
        case is SnapshotValue.Type: return try cast(value)
        case is PersistentIdentifier.Type:
            guard case .identifier(let v) = value else { throw mismatch(T.self, value, codingPath) }
            return try cast(v)
        default:
            return nil
        }
    }
}

private struct _SnapshotDecoder: Decoder {
    let value: SnapshotValue
    var codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let fields) = value else {
            throw SnapshotValueDecoder.mismatch([String: Any].self, value, codingPath)
        }
        return KeyedDecodingContainer(_KeyedDecoder<Key>(fields: fields, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let items) = value else {
            throw SnapshotValueDecoder.mismatch([Any].self, value, codingPath)
        }
        return _UnkeyedDecoder(items: items, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        _SingleDecoder(value: value, codingPath: codingPath)
    }
}

private func decodeNested<T: Decodable>(_ type: T.Type, _ value: SnapshotValue, _ path: [any CodingKey]) throws -> T {
    if let direct = try SnapshotValueDecoder.directValue(type, value, codingPath: path) { return direct }
    return try T(from: _SnapshotDecoder(value: value, codingPath: path))
}

private struct _KeyedDecoder<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let fields: [String: SnapshotValue]
    var codingPath: [any CodingKey]
    var allKeys: [Key] { fields.keys.compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool { fields[key.stringValue] != nil }

    private func value(_ key: Key) throws -> SnapshotValue {
        guard let v = fields[key.stringValue] else {
            throw DecodingError.keyNotFound(
                key, .init(codingPath: codingPath, debugDescription: "no field \(key.stringValue)"))
        }
        return v
    }

    func decodeNil(forKey key: Key) throws -> Bool { (fields[key.stringValue] ?? .null).isNull }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try decodeNested(type, try value(key), codingPath + [key])
    }
    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        try _SnapshotDecoder(value: try value(key), codingPath: codingPath + [key]).container(keyedBy: type)
    }
    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try _SnapshotDecoder(value: try value(key), codingPath: codingPath + [key]).unkeyedContainer()
    }
    func superDecoder() throws -> any Decoder {
        _SnapshotDecoder(value: fields["super"] ?? .null, codingPath: codingPath)
    }
    func superDecoder(forKey key: Key) throws -> any Decoder {
        _SnapshotDecoder(value: fields[key.stringValue] ?? .null, codingPath: codingPath + [key])
    }
}

private struct _UnkeyedDecoder: UnkeyedDecodingContainer {
    let items: [SnapshotValue]
    var codingPath: [any CodingKey]
    var currentIndex = 0
    var count: Int? { items.count }
    var isAtEnd: Bool { currentIndex >= items.count }

    init(items: [SnapshotValue], codingPath: [any CodingKey]) {
        self.items = items
        self.codingPath = codingPath
    }

    private mutating func next() throws -> SnapshotValue {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(
                Any.self, .init(codingPath: codingPath, debugDescription: "unkeyed container is at its end"))
        }
        defer { currentIndex += 1 }
        return items[currentIndex]
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, items[currentIndex].isNull else { return false }
        currentIndex += 1
        return true
    }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let path = codingPath
        return try decodeNested(type, try next(), path)
    }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        try _SnapshotDecoder(value: try next(), codingPath: codingPath).container(keyedBy: type)
    }
    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try _SnapshotDecoder(value: try next(), codingPath: codingPath).unkeyedContainer()
    }
    mutating func superDecoder() throws -> any Decoder {
        _SnapshotDecoder(value: try next(), codingPath: codingPath)
    }
}

private struct _SingleDecoder: SingleValueDecodingContainer {
    let value: SnapshotValue
    var codingPath: [any CodingKey]

    func decodeNil() -> Bool { value.isNull }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try decodeNested(type, value, codingPath) }
}
