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
///
/// A key of up to ``inlineCapacity`` bytes is held in the value itself, with no
/// allocation: a UUID, a date or a short string, each with a primary key after it,
/// fits. A longer key keeps every byte in an array and its first 31 bytes inline
/// too, so most comparisons of long keys never read the array either.
public struct IndexKey: Comparable, Hashable, Sendable, CustomStringConvertible {
    /// The most bytes a key holds without an allocation.
    public static let inlineCapacity = 31

    /// The first 31 bytes, big-endian in four words and zero-padded; the low byte of
    /// `w3` is the key's length when the key is inline, and `0xFF` when it is not.
    @usableFromInline internal var w0: UInt64 = 0
    @usableFromInline internal var w1: UInt64 = 0
    @usableFromInline internal var w2: UInt64 = 0
    @usableFromInline internal var w3: UInt64 = 0
    /// Every byte, for a key longer than ``inlineCapacity``.
    @usableFromInline internal var spilled: [UInt8]?

    @usableFromInline internal static let spilledMarker: UInt64 = 0xFF

    /// The empty key.
    @inlinable
    public init() {}

    /// Wraps already-encoded bytes.
    ///
    /// - Complexity: O(m) for m bytes.
    @inlinable
    public init(bytes: [UInt8]) {
        if bytes.count > Self.inlineCapacity {
            for i in 0..<Self.inlineCapacity { setInline(bytes[i], at: i) }
            w3 |= Self.spilledMarker
            spilled = bytes
        } else {
            for (i, byte) in bytes.enumerated() { setInline(byte, at: i) }
            w3 |= UInt64(bytes.count)
        }
    }

    /// Encodes a tuple by running `build` on a fresh encoder.
    ///
    /// - Complexity: O(m) for m encoded bytes.
    @inlinable
    public init(_ build: (inout IndexKeyEncoder) -> Void) {
        var encoder = IndexKeyEncoder()
        build(&encoder)
        self = encoder.key
    }

    /// The encoded bytes. Reading them makes an array; ``withUnsafeBytes(_:)`` does not.
    ///
    /// - Complexity: O(m)
    public var bytes: [UInt8] {
        get {
            if let spilled { return spilled }
            return withUnsafeBytes { Array($0) }
        }
        set { self = IndexKey(bytes: newValue) }
    }

    /// The number of encoded bytes.
    ///
    /// - Complexity: O(1)
    @inlinable
    public var count: Int {
        if let spilled { return spilled.count }
        return Int(truncatingIfNeeded: w3 & 0xFF)
    }

    /// Calls `body` with the encoded bytes.
    ///
    /// - Complexity: O(1) plus `body`.
    @inlinable
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        if let spilled { return try spilled.withUnsafeBytes(body) }
        let count = Int(truncatingIfNeeded: w3 & 0xFF)
        var words = (w0.bigEndian, w1.bigEndian, w2.bigEndian, w3.bigEndian)
        return try Swift.withUnsafeBytes(of: &words) { try body(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
    }

    /// Appends one byte: the encoder builds keys with this.
    ///
    /// - Complexity: amortised O(1)
    @inlinable
    public mutating func append(_ byte: UInt8) {
        if spilled != nil {
            spilled!.append(byte)
            return
        }
        let count = Int(truncatingIfNeeded: w3 & 0xFF)
        if count < Self.inlineCapacity {
            setInline(byte, at: count)
            w3 = (w3 & ~0xFF) | UInt64(count + 1)
            return
        }
        var all = withUnsafeBytes { Array($0) }
        all.reserveCapacity(2 * Self.inlineCapacity + 2)
        all.append(byte)
        w3 = (w3 & ~0xFF) | Self.spilledMarker
        spilled = all
    }

    /// Appends `bytes` in order. While the key stays inline they go into its words up to
    /// eight at a time: a checkpoint's index entries are read back with this, where a call
    /// of ``append(_:)`` for each byte was a large part of opening a store (see
    /// `Benchmarks/RESULTS.md`, "Measurements behind the code").
    ///
    /// - Complexity: O(m) for m bytes.
    public mutating func append(contentsOf bytes: UnsafeRawBufferPointer) {
        var count = Int(truncatingIfNeeded: w3 & 0xFF)
        guard spilled == nil, count + bytes.count <= Self.inlineCapacity else {
            for byte in bytes { append(byte) }
            return
        }
        var i = 0
        while i < bytes.count {
            let n = Swift.min(8, bytes.count - i)
            var word: UInt64 = 0
            if n == 8 {
                word = UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self))
            } else {
                for j in 0..<n { word |= UInt64(bytes[i + j]) << UInt64(56 - 8 * j) }
            }
            orInline(word, at: count)
            count += n
            i += n
        }
        w3 = (w3 & ~0xFF) | UInt64(count)
    }

    /// ORs `word`'s bytes, most significant first, into the inline words from byte
    /// `count`. Its bytes that land at or past byte 31 must be zero.
    private mutating func orInline(_ word: UInt64, at count: Int) {
        // Byte `count` is the top byte of word `count / 8` shifted right by the bytes
        // already in that word; what does not fit there starts the next word.
        let offset = UInt64(truncatingIfNeeded: (count & 7) * 8)
        let high = word >> offset
        let low = offset == 0 ? 0 : word << (64 - offset)
        switch count >> 3 {
        case 0:
            w0 |= high
            w1 |= low
        case 1:
            w1 |= high
            w2 |= low
        case 2:
            w2 |= high
            w3 |= low
        default:
            w3 |= high
        }
    }

    /// Appends the eight bytes of `word`, most significant first: one write into the
    /// inline words when they fit, instead of eight appends of a byte.
    ///
    /// - Complexity: O(1) while the key stays inline.
    mutating func append(bigEndian word: UInt64) {
        let count = Int(truncatingIfNeeded: w3 & 0xFF)
        guard spilled == nil, count + 8 <= Self.inlineCapacity else {
            for shift in stride(from: 56, through: 0, by: -8) {
                append(UInt8(truncatingIfNeeded: word >> UInt64(shift)))
            }
            return
        }
        // The bytes written stay below byte 31, so the length in `w3`'s low byte is left
        // alone until it is set here.
        orInline(word, at: count)
        w3 = (w3 & ~0xFF) | UInt64(count + 8)
    }

    /// Writes byte `i` (below ``inlineCapacity``) into the zeroed inline words.
    @inlinable
    internal mutating func setInline(_ byte: UInt8, at i: Int) {
        let shift = UInt64(truncatingIfNeeded: (7 - (i & 7)) * 8)
        let value = UInt64(byte) << shift
        switch i >> 3 {
        case 0: w0 |= value
        case 1: w1 |= value
        case 2: w2 |= value
        default: w3 |= value
        }
    }

    /// Bytewise lexicographic order; a proper prefix sorts before its extensions.
    ///
    /// - Complexity: O(1) for keys that differ in their first 31 bytes or are inline.
    @inlinable
    public static func < (lhs: IndexKey, rhs: IndexKey) -> Bool {
        return compare(lhs, rhs) < 0
    }

    @inlinable
    public static func == (lhs: IndexKey, rhs: IndexKey) -> Bool {
        return lhs.w0 == rhs.w0 && lhs.w1 == rhs.w1 && lhs.w2 == rhs.w2 && lhs.w3 == rhs.w3
            && lhs.spilled == rhs.spilled
    }

    @inlinable
    public func hash(into hasher: inout Hasher) {
        if let spilled {
            hasher.combine(spilled)
        } else {
            hasher.combine(w0)
            hasher.combine(w1)
            hasher.combine(w2)
            hasher.combine(w3)
        }
    }

    /// A 64-bit hash of an inline key, well mixed in every bit, for a hash table kept
    /// beside a B+tree; `nil` for a key longer than ``inlineCapacity``. It is the same in
    /// every process (no random seed), and cheaper than `hash(into:)`: a few multiplies.
    ///
    /// Equal keys have equal hashes. The words are mixed with the finaliser of
    /// MurmurHash3, so a table may take its slot from the low bits and a fingerprint from
    /// the high ones.
    @inlinable
    public var inlineHash: UInt64? {
        guard spilled == nil else { return nil }
        @inline(__always) func mix(_ x: UInt64) -> UInt64 {
            var h = x
            h ^= h >> 33
            h &*= 0xff51_afd7_ed55_8ccd
            h ^= h >> 33
            h &*= 0xc4ce_b9fe_1a85_ec53
            h ^= h >> 33
            return h
        }
        var h = mix(w0 ^ 0x9e37_79b9_7f4a_7c15)
        h = mix(h ^ w1)
        h = mix(h ^ w2)
        return mix(h ^ w3)
    }

    /// Three-way bytewise comparison: negative, zero or positive.
    ///
    /// Zero padding and then the length order keys as `memcmp` with a proper prefix
    /// first does; only two keys whose first 31 bytes agree and one of which is
    /// longer than that compare their arrays.
    ///
    /// Always inlined, with the arrays compared out of line: a B+tree's search then reads
    /// the words of the key where it lies, where a call made it copy each key it tried
    /// (a retain and release of its array, even for a key that had none).
    @inlinable @inline(__always)
    public static func compare(_ lhs: IndexKey, _ rhs: IndexKey) -> Int {
        if lhs.w0 != rhs.w0 { return lhs.w0 < rhs.w0 ? -1 : 1 }
        if lhs.w1 != rhs.w1 { return lhs.w1 < rhs.w1 ? -1 : 1 }
        if lhs.w2 != rhs.w2 { return lhs.w2 < rhs.w2 ? -1 : 1 }
        let a = lhs.w3 >> 8
        let b = rhs.w3 >> 8
        if a != b { return a < b ? -1 : 1 }
        let lengthA = lhs.w3 & 0xFF
        let lengthB = rhs.w3 & 0xFF
        if lengthA != spilledMarker && lengthB != spilledMarker { return Int(lengthA) - Int(lengthB) }
        return compareSpilled(lhs, rhs)
    }

    /// ``compare(_:_:)`` of two keys whose first 31 bytes agree, one or both spilled.
    @usableFromInline @inline(never)
    static func compareSpilled(_ lhs: IndexKey, _ rhs: IndexKey) -> Int {
        lhs.withUnsafeBytes { x in rhs.withUnsafeBytes { y in _compare(x, y) } }
    }

    /// Three-way bytewise comparison of two buffers: negative, zero or positive.
    @inlinable
    public static func _compare(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Int {
        let common = Swift.min(a.count, b.count)
        if common > 0, let pa = a.baseAddress, let pb = b.baseAddress {
            let result = memcmp(pa, pb, common)
            if result != 0 { return Int(result) }
        }
        return a.count - b.count
    }

    /// The key of this key's first `length` bytes.
    ///
    /// - Precondition: `0 <= length <= count`
    /// - Complexity: O(1) when the result is inline, O(length) when it is not.
    public func prefix(_ length: Int) -> IndexKey {
        precondition(length >= 0 && length <= count, "a prefix longer than the key")
        if length > Self.inlineCapacity, let spilled {
            return IndexKey(bytes: Array(spilled[0..<length]))
        }
        func kept(_ word: UInt64, _ index: Int) -> UInt64 {
            let bytes = Swift.min(Swift.max(length - 8 * index, 0), 8)
            return bytes == 0 ? 0 : word & (UInt64.max << UInt64(64 - 8 * bytes))
        }
        var result = IndexKey()
        result.w0 = kept(w0, 0)
        result.w1 = kept(w1, 1)
        result.w2 = kept(w2, 2)
        result.w3 = kept(w3 & ~0xFF, 3) | UInt64(length)
        return result
    }

    /// The number of leading bytes this key and `other` share.
    ///
    /// - Complexity: O(m)
    public func sharedPrefixCount(with other: IndexKey) -> Int {
        withUnsafeBytes { a in
            other.withUnsafeBytes { b in
                let limit = Swift.min(a.count, b.count)
                var n = 0
                while n < limit && a[n] == b[n] { n += 1 }
                return n
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
