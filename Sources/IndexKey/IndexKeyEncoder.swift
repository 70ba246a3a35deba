import Foundation

/// Appends values to an ``IndexKey`` so that the bytewise order of the
/// resulting keys equals the Swift order of the encoded tuples
/// (index-key format version 1, see `Formats/index-key.md`).
///
/// Every component is a one-byte ``IndexKeyTag`` followed by a payload that is
/// prefix-free, so components can be concatenated into compound keys and
/// decoded back. Callers encode `nil` with ``appendNil()``; it sorts before
/// every present value.
///
/// Strings are encoded from their UTF-8 bytes as given, without Unicode
/// normalisation. For strings in NFC (which covers ASCII and typical text) the
/// order equals Swift's `<`; canonically equivalent strings in different
/// normalisation forms (for example `"é"` as U+00E9 versus `"e"` + U+0301) are
/// equal for Swift but encode to different keys.
public struct IndexKeyEncoder: Sendable {
    /// The key encoded so far.
    ///
    /// - Complexity: O(1)
    public private(set) var key: IndexKey

    /// The bytes encoded so far.
    ///
    /// - Complexity: O(m)
    public var bytes: [UInt8] { key.bytes }

    /// Canonical quiet NaN for `Double` (`0x7FF8000000000000`); every NaN is encoded as this.
    public static let canonicalDoubleNaNBits: UInt64 = 0x7FF8_0000_0000_0000

    /// Canonical quiet NaN for `Float` (`0x7FC00000`); every NaN is encoded as this.
    public static let canonicalFloatNaNBits: UInt32 = 0x7FC0_0000

    /// Creates an encoder with no components.
    ///
    /// - Complexity: O(1)
    public init() {
        key = IndexKey()
    }

    /// Creates an encoder that continues after the components of `prefix`.
    ///
    /// - Complexity: O(m) for m bytes in `prefix`.
    public init(prefix: IndexKey) {
        key = prefix
    }

    /// Appends an absent value (tag `0x00`), which sorts before any present value.
    ///
    /// - Complexity: O(1)
    public mutating func appendNil() {
        key.append(IndexKeyTag.null.rawValue)
    }

    /// Appends a `Bool` (`false` < `true`).
    ///
    /// - Complexity: O(1)
    public mutating func append(_ value: Bool) {
        key.append(IndexKeyTag.bool.rawValue)
        key.append(value ? 1 : 0)
    }

    /// Appends an `Int64`: big-endian with the sign bit flipped, so negative
    /// values sort before positive ones.
    ///
    /// - Complexity: O(1)
    public mutating func append(_ value: Int64) {
        key.append(IndexKeyTag.int64.rawValue)
        appendBigEndian(UInt64(bitPattern: value) ^ (1 << 63))
    }

    /// Appends an `Int`, encoded exactly like the `Int64` of the same value.
    ///
    /// - Complexity: O(1)
    public mutating func append(_ value: Int) {
        append(Int64(value))
    }

    /// Appends a `UInt64`, big-endian.
    ///
    /// - Complexity: O(1)
    public mutating func append(_ value: UInt64) {
        key.append(IndexKeyTag.uint64.rawValue)
        appendBigEndian(value)
    }

    /// Appends a `Double` in IEEE total order: `-0.0` is encoded as `+0.0`, and
    /// every NaN as one canonical NaN that sorts after `+infinity`.
    ///
    /// - Complexity: O(1)
    public mutating func append(_ value: Double) {
        key.append(IndexKeyTag.double.rawValue)
        appendBigEndian(Self.orderedBits(value))
    }

    /// Appends a `Float` with the same rules as `Double` (4-byte payload).
    ///
    /// - Complexity: O(1)
    public mutating func append(_ value: Float) {
        key.append(IndexKeyTag.float.rawValue)
        var bits: UInt32
        if value.isNaN {
            bits = Self.canonicalFloatNaNBits
        } else {
            bits = (value == 0 ? Float(0) : value).bitPattern
        }
        bits = bits & (1 << 31) != 0 ? ~bits : bits ^ (1 << 31)
        for shift in stride(from: 24, through: 0, by: -8) {
            key.append(UInt8(truncatingIfNeeded: bits >> UInt32(shift)))
        }
    }

    /// Appends a point in time given as seconds since the reference date
    /// (2001-01-01 00:00:00 UTC), with the `Double` rules and its own tag.
    ///
    /// - Complexity: O(1)
    public mutating func appendDate(secondsSinceReferenceDate seconds: Double) {
        key.append(IndexKeyTag.date.rawValue)
        appendBigEndian(Self.orderedBits(seconds))
    }

    /// Appends a `Date` (see ``appendDate(secondsSinceReferenceDate:)``).
    ///
    /// - Complexity: O(1)
    public mutating func append(_ date: Date) {
        appendDate(secondsSinceReferenceDate: date.timeIntervalSinceReferenceDate)
    }

    /// Appends a `String` from its UTF-8 bytes (no normalisation), escaping
    /// `0x00` as `0x00 0xFF` and terminating with `0x00 0x00`, so a string sorts
    /// before its extensions and compound keys stay separable.
    ///
    /// - Complexity: O(m) for m UTF-8 bytes.
    public mutating func append(_ value: String) {
        key.append(IndexKeyTag.string.rawValue)
        var value = value
        value.withUTF8 { appendEscaped($0) }
    }

    /// Appends a byte string with the same escaping as strings.
    ///
    /// - Complexity: O(m)
    public mutating func append(_ value: [UInt8]) {
        key.append(IndexKeyTag.bytes.rawValue)
        value.withUnsafeBufferPointer { appendEscaped($0) }
    }

    /// Appends `Data`, encoded exactly like the `[UInt8]` with the same bytes.
    ///
    /// - Complexity: O(m)
    public mutating func append(_ value: Data) {
        key.append(IndexKeyTag.bytes.rawValue)
        value.withUnsafeBytes { appendEscaped($0.bindMemory(to: UInt8.self)) }
    }

    /// Appends a UUID given as its 16 raw bytes; UUIDs order bytewise.
    ///
    /// - Complexity: O(1)
    public mutating func append(uuid: uuid_t) {
        key.append(IndexKeyTag.uuid.rawValue)
        // The 16 bytes as two big-endian words, in their order.
        withUnsafeBytes(of: uuid) { raw in
            key.append(bigEndian: UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self)))
            key.append(bigEndian: UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self)))
        }
    }

    /// Appends a `UUID` (see ``append(uuid:)``).
    ///
    /// - Complexity: O(1)
    public mutating func append(_ value: UUID) {
        append(uuid: value.uuid)
    }

    /// The order-preserving 64-bit image of a `Double`.
    @usableFromInline
    static func orderedBits(_ value: Double) -> UInt64 {
        let bits: UInt64
        if value.isNaN {
            bits = canonicalDoubleNaNBits
        } else {
            bits = (value == 0 ? 0.0 : value).bitPattern
        }
        return bits & (1 << 63) != 0 ? ~bits : bits ^ (1 << 63)
    }

    private mutating func appendBigEndian(_ value: UInt64) {
        key.append(bigEndian: value)
    }

    private mutating func appendEscaped(_ content: UnsafeBufferPointer<UInt8>) {
        for byte in content {
            key.append(byte)
            if byte == 0 {
                key.append(0xFF)
            }
        }
        key.append(0)
        key.append(0)
    }
}
