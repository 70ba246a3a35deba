#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// An order-preserving binary encoding of a tuple of values (index-key format
/// version 1, see `Formats/index-key.md`).
///
/// Keys compare bytewise (`memcmp` order, a proper prefix sorts first), and
/// that order equals the order of the encoded tuples: component by component,
/// `nil` first, each type in its natural Swift order. Build keys with
/// ``IndexKeyEncoder`` and read them back with ``IndexKeyDecoder``.
public struct IndexKey: Comparable, Hashable, Sendable, CustomStringConvertible {
    /// The encoded bytes.
    public var bytes: [UInt8]

    /// Wraps already-encoded bytes.
    ///
    /// - Complexity: O(1)
    @inlinable
    public init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// Encodes a tuple by running `build` on a fresh encoder.
    ///
    /// - Complexity: O(m) for m encoded bytes.
    @inlinable
    public init(_ build: (inout IndexKeyEncoder) -> Void) {
        var encoder = IndexKeyEncoder()
        build(&encoder)
        self.bytes = encoder.bytes
    }

    /// Bytewise lexicographic order; a proper prefix sorts before its extensions.
    ///
    /// - Complexity: O(min(lhs.count, rhs.count))
    @inlinable
    public static func < (lhs: IndexKey, rhs: IndexKey) -> Bool {
        return IndexKey._compare(lhs.bytes, rhs.bytes) < 0
    }

    /// Three-way bytewise comparison: negative, zero or positive.
    ///
    /// - Complexity: O(min(lhs.count, rhs.count))
    @inlinable
    public static func _compare(_ lhs: [UInt8], _ rhs: [UInt8]) -> Int {
        return lhs.withUnsafeBufferPointer { a in
            rhs.withUnsafeBufferPointer { b in
                let common = Swift.min(a.count, b.count)
                if common > 0, let pa = a.baseAddress, let pb = b.baseAddress {
                    let result = memcmp(pa, pb, common)
                    if result != 0 { return Int(result) }
                }
                return a.count - b.count
            }
        }
    }

    /// This key followed by the encoded primary key: the index-entry convention
    /// that makes entries of non-unique indexes distinct (see the format spec).
    ///
    /// - Complexity: O(m)
    @inlinable
    public func appendingPrimaryKey(_ primaryKey: Int64) -> IndexKey {
        var encoder = IndexKeyEncoder(prefix: self)
        encoder.append(primaryKey)
        return encoder.key
    }

    /// The smallest key that is greater than every key starting with this
    /// key's bytes, or `nil` if there is none (all bytes are `0xFF`, or the key is
    /// empty). All keys extending this one lie in `self ..< prefixUpperBound`.
    ///
    /// - Complexity: O(m)
    public var prefixUpperBound: IndexKey? {
        var result = bytes
        while let last = result.last {
            if last < 0xFF {
                result[result.count - 1] = last + 1
                return IndexKey(bytes: result)
            }
            result.removeLast()
        }
        return nil
    }

    /// The bytes in lowercase hex, two digits per byte, space separated.
    ///
    /// - Complexity: O(m)
    public var description: String {
        let digits = Array("0123456789abcdef")
        return bytes.map { String([digits[Int($0 >> 4)], digits[Int($0 & 0x0F)]]) }
            .joined(separator: " ")
    }
}
