import Foundation

/// One decoded component of an ``IndexKey``.
public enum IndexKeyComponent: Hashable, Sendable {
    case null
    case bool(Bool)
    case int64(Int64)
    case uint64(UInt64)
    /// A `Double`; `-0.0` decodes as `+0.0` and NaN as the canonical NaN.
    case double(Double)
    /// A `Float`; `-0.0` decodes as `+0.0` and NaN as the canonical NaN.
    case float(Float)
    case date(secondsSinceReferenceDate: Double)
    case string(String)
    case bytes([UInt8])
    case uuid(UUID)
}

/// Why an ``IndexKey`` could not be decoded. Offsets are byte positions in the key.
public enum IndexKeyDecodingError: Error, Equatable, Sendable {
    /// The key ended inside a component.
    case unexpectedEnd(offset: Int)
    /// A byte that is not an ``IndexKeyTag``.
    case unknownTag(UInt8, offset: Int)
    /// `0x00` followed by something other than `0xFF` or `0x00` in a string or byte string.
    case invalidEscape(offset: Int)
    /// A string payload that is not valid UTF-8.
    case invalidUTF8(offset: Int)
    /// A Bool payload other than `0x00` or `0x01`.
    case invalidBool(offset: Int)
    /// A typed decode found a different tag.
    case typeMismatch(expected: IndexKeyTag, found: IndexKeyTag, offset: Int)
}

/// Reads the components of an ``IndexKey`` back, in order. Malformed input
/// throws ``IndexKeyDecodingError``; it never traps.
public struct IndexKeyDecoder: Sendable {
    /// The bytes being decoded.
    ///
    /// - Complexity: O(1)
    public let bytes: [UInt8]

    /// The offset of the next component.
    ///
    /// - Complexity: O(1)
    public private(set) var offset: Int = 0

    /// Starts decoding `key` from its first component.
    ///
    /// - Complexity: O(1)
    public init(_ key: IndexKey) {
        bytes = key.bytes
    }

    /// Whether all components have been read.
    ///
    /// - Complexity: O(1)
    public var isAtEnd: Bool { offset >= bytes.count }

    /// Decodes every remaining component.
    ///
    /// - Complexity: O(m) for m remaining bytes.
    public mutating func decodeAll() throws(IndexKeyDecodingError) -> [IndexKeyComponent] {
        var result: [IndexKeyComponent] = []
        while !isAtEnd {
            result.append(try decodeNext())
        }
        return result
    }

    /// Decodes the next component.
    ///
    /// - Complexity: O(m) for the m bytes of the component.
    public mutating func decodeNext() throws(IndexKeyDecodingError) -> IndexKeyComponent {
        let start = offset
        let tagByte = try readByte()
        guard let tag = IndexKeyTag(rawValue: tagByte) else {
            offset = start
            throw .unknownTag(tagByte, offset: start)
        }
        do throws(IndexKeyDecodingError) {
            switch tag {
            case .null:
                return .null
            case .bool:
                let payloadOffset = offset
                switch try readByte() {
                case 0: return .bool(false)
                case 1: return .bool(true)
                default: throw IndexKeyDecodingError.invalidBool(offset: payloadOffset)
                }
            case .int64:
                return .int64(Int64(bitPattern: try readUInt64() ^ (1 << 63)))
            case .uint64:
                return .uint64(try readUInt64())
            case .double:
                return .double(Self.double(fromOrderedBits: try readUInt64()))
            case .date:
                return .date(secondsSinceReferenceDate: Self.double(fromOrderedBits: try readUInt64()))
            case .float:
                var bits: UInt32 = 0
                for _ in 0..<4 {
                    bits = bits << 8 | UInt32(try readByte())
                }
                bits = bits & (1 << 31) != 0 ? bits ^ (1 << 31) : ~bits
                return .float(Float(bitPattern: bits))
            case .string:
                let payloadOffset = offset
                let content = try readEscaped()
                guard let string = String(validating: content, as: UTF8.self) else {
                    throw IndexKeyDecodingError.invalidUTF8(offset: payloadOffset)
                }
                return .string(string)
            case .bytes:
                return .bytes(try readEscaped())
            case .uuid:
                var raw = [UInt8](repeating: 0, count: 16)
                for i in 0..<16 {
                    raw[i] = try readByte()
                }
                let uuid = raw.withUnsafeBytes { $0.loadUnaligned(as: uuid_t.self) }
                return .uuid(UUID(uuid: uuid))
            }
        } catch {
            offset = start
            throw error
        }
    }

    /// Decodes the next component, which must be `nil` or a `Bool`.
    ///
    /// - Complexity: O(m) for the m bytes of the component.
    public mutating func decodeBool() throws(IndexKeyDecodingError) -> Bool? {
        switch try decodeTyped(.bool) {
        case .bool(let value): return value
        default: return nil
        }
    }

    /// Decodes the next component, which must be `nil` or an `Int64`.
    ///
    /// - Complexity: O(m) for the m bytes of the component.
    public mutating func decodeInt64() throws(IndexKeyDecodingError) -> Int64? {
        switch try decodeTyped(.int64) {
        case .int64(let value): return value
        default: return nil
        }
    }

    /// Decodes the next component, which must be `nil` or a `UInt64`.
    ///
    /// - Complexity: O(m) for the m bytes of the component.
    public mutating func decodeUInt64() throws(IndexKeyDecodingError) -> UInt64? {
        switch try decodeTyped(.uint64) {
        case .uint64(let value): return value
        default: return nil
        }
    }

    /// Decodes the next component, which must be `nil` or a `Double`.
    ///
    /// - Complexity: O(m) for the m bytes of the component.
    public mutating func decodeDouble() throws(IndexKeyDecodingError) -> Double? {
        switch try decodeTyped(.double) {
        case .double(let value): return value
        default: return nil
        }
    }

    /// Decodes the next component, which must be `nil` or a `Float`.
    ///
    /// - Complexity: O(m) for the m bytes of the component.
    public mutating func decodeFloat() throws(IndexKeyDecodingError) -> Float? {
        switch try decodeTyped(.float) {
        case .float(let value): return value
        default: return nil
        }
    }

    /// Decodes the next component, which must be `nil` or a date (seconds since the reference date).
    ///
    /// - Complexity: O(m) for the m bytes of the component.
    public mutating func decodeDate() throws(IndexKeyDecodingError) -> Double? {
        switch try decodeTyped(.date) {
        case .date(let value): return value
        default: return nil
        }
    }

    /// Decodes the next component, which must be `nil` or a `String`.
    ///
    /// - Complexity: O(m) for the m bytes of the component.
    public mutating func decodeString() throws(IndexKeyDecodingError) -> String? {
        switch try decodeTyped(.string) {
        case .string(let value): return value
        default: return nil
        }
    }

    /// Decodes the next component, which must be `nil` or a byte string.
    ///
    /// - Complexity: O(m) for the m bytes of the component.
    public mutating func decodeBytes() throws(IndexKeyDecodingError) -> [UInt8]? {
        switch try decodeTyped(.bytes) {
        case .bytes(let value): return value
        default: return nil
        }
    }

    /// Decodes the next component, which must be `nil` or a UUID.
    ///
    /// - Complexity: O(m) for the m bytes of the component.
    public mutating func decodeUUID() throws(IndexKeyDecodingError) -> UUID? {
        switch try decodeTyped(.uuid) {
        case .uuid(let value): return value
        default: return nil
        }
    }

    /// Decodes the next component if its tag is `expected` or `null`; otherwise
    /// throws without consuming anything.
    private mutating func decodeTyped(_ expected: IndexKeyTag) throws(IndexKeyDecodingError) -> IndexKeyComponent {
        let start = offset
        guard start < bytes.count else { throw .unexpectedEnd(offset: start) }
        if let found = IndexKeyTag(rawValue: bytes[start]), found != expected, found != .null {
            throw .typeMismatch(expected: expected, found: found, offset: start)
        }
        return try decodeNext()
    }

    static func double(fromOrderedBits ordered: UInt64) -> Double {
        let bits = ordered & (1 << 63) != 0 ? ordered ^ (1 << 63) : ~ordered
        return Double(bitPattern: bits)
    }

    private mutating func readByte() throws(IndexKeyDecodingError) -> UInt8 {
        guard offset < bytes.count else { throw .unexpectedEnd(offset: offset) }
        defer { offset += 1 }
        return bytes[offset]
    }

    private mutating func readUInt64() throws(IndexKeyDecodingError) -> UInt64 {
        var value: UInt64 = 0
        for _ in 0..<8 {
            value = value << 8 | UInt64(try readByte())
        }
        return value
    }

    /// Reads an escaped, `0x00 0x00`-terminated payload.
    private mutating func readEscaped() throws(IndexKeyDecodingError) -> [UInt8] {
        var content: [UInt8] = []
        while true {
            let byte = try readByte()
            if byte != 0 {
                content.append(byte)
                continue
            }
            let escapeOffset = offset
            switch try readByte() {
            case 0x00: return content
            case 0xFF: content.append(0)
            default: throw .invalidEscape(offset: escapeOffset)
            }
        }
    }
}

extension IndexKey {
    /// Decodes all components of this key.
    ///
    /// - Complexity: O(m) for m bytes.
    public func decoded() throws(IndexKeyDecodingError) -> [IndexKeyComponent] {
        var decoder = IndexKeyDecoder(self)
        return try decoder.decodeAll()
    }
}
