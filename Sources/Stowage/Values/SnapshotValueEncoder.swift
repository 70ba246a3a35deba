import Foundation

/// Turns any `Encodable` value into a ``SnapshotValue``.
///
/// Foundation's leaf types (`Date`, `Data`, `URL`, `UUID`, `Decimal`) map to their own
/// cases rather than to their Codable forms, so they stay queryable and sortable.
struct SnapshotValueEncoder {
    /// Encodes `value`.
    /// - Throws: ``SwiftDataError`` with code `.unsupportedValue` when the value's
    ///   `encode(to:)` throws or encodes nothing.
    static func encode(_ value: some Encodable) throws -> SnapshotValue {
        if let direct = directValue(value) { return direct }
        let box = _EncoderBox()
        let encoder = _SnapshotEncoder(box: box, codingPath: [])
        do {
            try value.encode(to: encoder)
        } catch {
            throw SwiftDataError(
                .unsupportedValue, "a value of type \(type(of: value)) could not be encoded: \(error)")
        }
        return box.resolved ?? .object([:])
    }

    /// The fast path for the types that need no Codable round trip.
    ///
    /// The value's own type is compared first with the common leaf types and their
    /// optionals (`ModelBackingData.encodeDirectly`, a metatype comparison each), so that
    /// they cost no dynamic cast; an optional of them that holds nothing is `.null`, as
    /// every caller makes it anyway. Other values go through the casts below.
    static func directValue(_ value: Any) -> SnapshotValue? {
        if let direct = ModelBackingData.encodeDirectly(value) { return direct }
        switch value {
        case let v as String: return .string(v)
        case let v as Int: return .int(Int64(v))
        case let v as Bool: return .bool(v)
        case let v as Double: return .double(v)
        case let v as Date: return .date(v)
        case let v as UUID: return .uuid(v)
        case let v as Data: return .data(v)
        case let v as URL: return .url(v)
        case let v as Decimal: return .decimal(v)
        case let v as Int64: return .int(v)
        case let v as Int32: return .int(Int64(v))
        case let v as Int16: return .int(Int64(v))
        case let v as Int8: return .int(Int64(v))
        case let v as UInt: return .uint(UInt64(v))
        case let v as UInt64: return .uint(v)
        case let v as UInt32: return .uint(UInt64(v))
        case let v as UInt16: return .uint(UInt64(v))
        case let v as UInt8: return .uint(UInt64(v))
        case let v as Float: return .double(Double(v))
        case let v as SnapshotValue: return v
        case let v as PersistentIdentifier: return .identifier(v)
        default: return nil
        }
    }
}

final class _EncoderBox {
    var value: SnapshotValue?
    fileprivate var object: _ObjectStorage?
    fileprivate var array: _ArrayStorage?

    /// The encoded value, with nested containers folded in.
    var resolved: SnapshotValue? {
        if let object { return object.snapshot() }
        if let array { return array.snapshot() }
        return value
    }
}

private struct _SnapshotEncoder: Encoder {
    let box: _EncoderBox
    var codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        let storage = box.object ?? _ObjectStorage()
        box.object = storage
        return KeyedEncodingContainer(_KeyedEncoder<Key>(storage: storage, box: box, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        let storage = box.array ?? _ArrayStorage()
        box.array = storage
        return _UnkeyedEncoder(storage: storage, box: box, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        _SingleEncoder(box: box, codingPath: codingPath)
    }
}

private final class _ObjectStorage {
    var fields: [String: SnapshotValue] = [:]
    var nested: [String: _EncoderBox] = [:]
    func snapshot() -> SnapshotValue {
        var all = fields
        for (key, box) in nested { all[key] = box.resolved ?? .null }
        return .object(all)
    }
}

private final class _ArrayStorage {
    var items: [_EncoderBox] = []
    func snapshot() -> SnapshotValue { .array(items.map { $0.resolved ?? .null }) }
}

private func encodeNested(_ value: some Encodable, codingPath: [any CodingKey]) throws -> SnapshotValue {
    if let direct = SnapshotValueEncoder.directValue(value) { return direct }
    let box = _EncoderBox()
    try value.encode(to: _SnapshotEncoder(box: box, codingPath: codingPath))
    return box.resolved ?? .object([:])
}

private struct _KeyedEncoder<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let storage: _ObjectStorage
    let box: _EncoderBox
    var codingPath: [any CodingKey]

    private func set(_ value: SnapshotValue, _ key: Key) {
        storage.fields[key.stringValue] = value
    }

    mutating func encodeNil(forKey key: Key) throws { set(.null, key) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { set(.bool(value), key) }
    mutating func encode(_ value: String, forKey key: Key) throws { set(.string(value), key) }
    mutating func encode(_ value: Double, forKey key: Key) throws { set(.double(value), key) }
    mutating func encode(_ value: Float, forKey key: Key) throws { set(.double(Double(value)), key) }
    mutating func encode(_ value: Int, forKey key: Key) throws { set(.int(Int64(value)), key) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { set(.int(Int64(value)), key) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { set(.int(Int64(value)), key) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { set(.int(Int64(value)), key) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { set(.int(value), key) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { set(.uint(UInt64(value)), key) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { set(.uint(UInt64(value)), key) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { set(.uint(UInt64(value)), key) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { set(.uint(UInt64(value)), key) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { set(.uint(value), key) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        set(try encodeNested(value, codingPath: codingPath + [key]), key)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type, forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
        let nestedBox = _EncoderBox()
        storage.nested[key.stringValue] = nestedBox
        let nestedStorage = _ObjectStorage()
        nestedBox.object = nestedStorage
        return KeyedEncodingContainer(
            _KeyedEncoder<NestedKey>(storage: nestedStorage, box: nestedBox, codingPath: codingPath + [key]))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let nestedBox = _EncoderBox()
        storage.nested[key.stringValue] = nestedBox
        let nestedStorage = _ArrayStorage()
        nestedBox.array = nestedStorage
        return _UnkeyedEncoder(storage: nestedStorage, box: nestedBox, codingPath: codingPath + [key])
    }

    mutating func superEncoder() -> any Encoder {
        let item = _EncoderBox()
        storage.nested["super"] = item
        return _SnapshotEncoder(box: item, codingPath: codingPath)
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        let nestedBox = _EncoderBox()
        storage.nested[key.stringValue] = nestedBox
        return _SnapshotEncoder(box: nestedBox, codingPath: codingPath + [key])
    }
}

private struct _IndexKey: CodingKey {
    var stringValue: String
    var intValue: Int?
    init(_ index: Int) {
        stringValue = String(index)
        intValue = index
    }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { self.init(intValue) }
}

private struct _UnkeyedEncoder: UnkeyedEncodingContainer {
    let storage: _ArrayStorage
    let box: _EncoderBox
    var codingPath: [any CodingKey]
    var count: Int { storage.items.count }

    private func append(_ value: SnapshotValue) {
        let item = _EncoderBox()
        item.value = value
        storage.items.append(item)
    }

    mutating func encodeNil() throws { append(.null) }
    mutating func encode(_ value: Bool) throws { append(.bool(value)) }
    mutating func encode(_ value: String) throws { append(.string(value)) }
    mutating func encode(_ value: Double) throws { append(.double(value)) }
    mutating func encode(_ value: Float) throws { append(.double(Double(value))) }
    mutating func encode(_ value: Int) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: Int8) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: Int16) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: Int32) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: Int64) throws { append(.int(value)) }
    mutating func encode(_ value: UInt) throws { append(.uint(UInt64(value))) }
    mutating func encode(_ value: UInt8) throws { append(.uint(UInt64(value))) }
    mutating func encode(_ value: UInt16) throws { append(.uint(UInt64(value))) }
    mutating func encode(_ value: UInt32) throws { append(.uint(UInt64(value))) }
    mutating func encode(_ value: UInt64) throws { append(.uint(value)) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        append(try encodeNested(value, codingPath: codingPath + [_IndexKey(count)]))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type)
        -> KeyedEncodingContainer<NestedKey>
    {
        let item = _EncoderBox()
        let nestedStorage = _ObjectStorage()
        item.object = nestedStorage
        storage.items.append(item)
        return KeyedEncodingContainer(
            _KeyedEncoder<NestedKey>(storage: nestedStorage, box: item, codingPath: codingPath))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let item = _EncoderBox()
        let nestedStorage = _ArrayStorage()
        item.array = nestedStorage
        storage.items.append(item)
        return _UnkeyedEncoder(storage: nestedStorage, box: item, codingPath: codingPath)
    }

    mutating func superEncoder() -> any Encoder {
        let item = _EncoderBox()
        storage.items.append(item)
        return _SnapshotEncoder(box: item, codingPath: codingPath)
    }
}

private struct _SingleEncoder: SingleValueEncodingContainer {
    let box: _EncoderBox
    var codingPath: [any CodingKey]

    mutating func encodeNil() throws { box.value = .null }
    mutating func encode(_ value: Bool) throws { box.value = .bool(value) }
    mutating func encode(_ value: String) throws { box.value = .string(value) }
    mutating func encode(_ value: Double) throws { box.value = .double(value) }
    mutating func encode(_ value: Float) throws { box.value = .double(Double(value)) }
    mutating func encode(_ value: Int) throws { box.value = .int(Int64(value)) }
    mutating func encode(_ value: Int8) throws { box.value = .int(Int64(value)) }
    mutating func encode(_ value: Int16) throws { box.value = .int(Int64(value)) }
    mutating func encode(_ value: Int32) throws { box.value = .int(Int64(value)) }
    mutating func encode(_ value: Int64) throws { box.value = .int(value) }
    mutating func encode(_ value: UInt) throws { box.value = .uint(UInt64(value)) }
    mutating func encode(_ value: UInt8) throws { box.value = .uint(UInt64(value)) }
    mutating func encode(_ value: UInt16) throws { box.value = .uint(UInt64(value)) }
    mutating func encode(_ value: UInt32) throws { box.value = .uint(UInt64(value)) }
    mutating func encode(_ value: UInt64) throws { box.value = .uint(value) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        box.value = try encodeNested(value, codingPath: codingPath)
    }
}
