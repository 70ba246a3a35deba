import Foundation
import IndexKey
import Testing

/// Keys are held inline up to `IndexKey.inlineCapacity` bytes and in an array past it.
/// These tests compare keys of every length around that boundary with plain byte arrays.
@Suite("IndexKey storage")
struct IndexKeyStorageTests {
    /// `memcmp` order with a proper prefix first, on arrays.
    static func byteOrder(_ a: [UInt8], _ b: [UInt8]) -> Int {
        for (x, y) in zip(a, b) where x != y { return x < y ? -1 : 1 }
        return a.count - b.count
    }

    /// Random bytes of a length near the inline boundary, mostly sharing a prefix, with
    /// zeros and 0xFF common, so that zero padding and long shared prefixes are exercised.
    static func randomBytes(_ rng: inout SplitMix64, prefix: [UInt8]) -> [UInt8] {
        let length = Int(rng.next() % 70)
        var bytes: [UInt8] = []
        for i in 0..<length {
            switch rng.next() % 6 {
            case 0: bytes.append(0)
            case 1: bytes.append(0xFF)
            case 2, 3: bytes.append(i < prefix.count ? prefix[i] : 0)
            default: bytes.append(UInt8(truncatingIfNeeded: rng.next()))
            }
        }
        return bytes
    }

    @Test func orderEqualityAndHashMatchTheBytes() {
        var rng = SplitMix64(seed: 31)
        let prefix = (0..<70).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        let samples =
            (0..<600).map { _ in Self.randomBytes(&rng, prefix: prefix) }
            + [[], [0], [0, 0], Array(repeating: 0, count: 31), Array(repeating: 0, count: 32)]
            + [Array(prefix[0..<30]), Array(prefix[0..<31]), Array(prefix[0..<32]), Array(prefix[0..<33])]
            + [Array(prefix[0..<31]) + [0], Array(prefix[0..<31]) + [0, 0], Array(repeating: 0xFF, count: 40)]
        let keys = samples.map(IndexKey.init(bytes:))
        for (bytes, key) in zip(samples, keys) {
            #expect(key.bytes == bytes)
            #expect(key.count == bytes.count)
            #expect(key.withUnsafeBytes { Array($0) } == bytes)
        }
        for i in samples.indices {
            for j in samples.indices where (i * 7 + j) % 5 == 0 || samples[i].count == samples[j].count {
                let expected = Self.byteOrder(samples[i], samples[j]).signum()
                let found = IndexKey.compare(keys[i], keys[j]).signum()
                #expect(found == expected, "\(samples[i]) vs \(samples[j])")
                #expect((keys[i] < keys[j]) == (expected < 0))
                #expect((keys[i] == keys[j]) == (expected == 0))
                if keys[i] == keys[j] { #expect(keys[i].hashValue == keys[j].hashValue) }
            }
        }
        #expect(keys.sorted().map(\.bytes) == samples.sorted { Self.byteOrder($0, $1) < 0 })
    }

    /// `inlineHash`: the same for keys with the same bytes however they were built, `nil`
    /// past the inline capacity, and spread over its bits: keys that differ in one byte,
    /// at any position, land in different low bits (a table's slot) and high bits (its
    /// fingerprint).
    @Test func inlineHashFollowsTheBytesAndSpreads() {
        #expect(IndexKey(bytes: Array(repeating: 7, count: 32)).inlineHash == nil)
        #expect(IndexKey(bytes: Array(repeating: 7, count: 31)).inlineHash != nil)
        let built = IndexKey {
            $0.append("same")
            $0.append(Int64(42))
        }
        #expect(IndexKey(bytes: built.bytes).inlineHash == built.inlineHash)
        #expect(IndexKey().inlineHash != IndexKey(bytes: [0]).inlineHash)

        var rng = SplitMix64(seed: 77)
        var lowSlots = Set<UInt64>()
        var fingerprints = Set<UInt64>()
        var hashes = Set<UInt64>()
        var count = 0
        for length in 1...31 {
            let base = (0..<length).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            for position in 0..<length {
                for delta: UInt8 in [1, 2, 128] {
                    var bytes = base
                    bytes[position] &+= delta
                    let hash = IndexKey(bytes: bytes).inlineHash!
                    hashes.insert(hash)
                    lowSlots.insert(hash & 0xFFFF)
                    fingerprints.insert(hash >> 48)
                    count += 1
                }
            }
        }
        // 1488 keys: no two hashes alike, and 16 bits at either end nearly all distinct
        // (a uniform hash would repeat about 17 of them).
        #expect(hashes.count == count)
        #expect(lowSlots.count > count - 60, "\(lowSlots.count) of \(count)")
        #expect(fingerprints.count > count - 60, "\(fingerprints.count) of \(count)")
    }

    @Test func appendingByteByByteBuildsTheSameKey() {
        var rng = SplitMix64(seed: 5)
        for length in 0...80 {
            let bytes = (0..<length).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            var built = IndexKey()
            for byte in bytes { built.append(byte) }
            #expect(built == IndexKey(bytes: bytes), "length \(length)")
            #expect(built.bytes == bytes)
            #expect(built.hashValue == IndexKey(bytes: bytes).hashValue)
        }
    }

    /// Bytes appended as a run go into the inline words up to eight at a time: after a
    /// prefix of every length, runs of every length (across word boundaries, up to the
    /// capacity exactly, and past it into a spilled key) must give the key the bytes give.
    @Test func appendingRunsAfterPrefixesOfEveryLengthMatchesTheBytes() {
        var rng = SplitMix64(seed: 23)
        for prefixLength in 0...40 {
            for runLength in 0...40 {
                // Nonzero bytes, so that a byte written into the wrong place shows.
                let prefix = (0..<prefixLength).map { _ in UInt8(truncatingIfNeeded: rng.next() | 1) }
                let run = (0..<runLength).map { _ in UInt8(truncatingIfNeeded: rng.next() | 1) }
                var key = IndexKey(bytes: prefix)
                run.withUnsafeBytes { key.append(contentsOf: $0) }
                let what = "prefix \(prefixLength), run \(runLength)"
                #expect(key.bytes == prefix + run, "\(what)")
                #expect(key == IndexKey(bytes: prefix + run), "\(what)")
                #expect(key.count == prefixLength + runLength, "\(what)")
                #expect(key.hashValue == IndexKey(bytes: prefix + run).hashValue, "\(what)")
            }
        }
    }

    /// Integers and UUIDs are written a word at a time into the inline words: after a
    /// prefix of every length, across word boundaries and into a spilled key, the key
    /// must hold exactly the bytes a byte-by-byte encoding would.
    @Test func wordWritesAfterPrefixesOfEveryLengthMatchTheBytes() {
        var rng = SplitMix64(seed: 17)
        for length in 0...40 {
            let prefixBytes = (0..<length).map { _ in UInt8(truncatingIfNeeded: rng.next() | 1) }
            let value = rng.next()
            let uuidBytes = (0..<16).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            let uuid: uuid_t = uuidBytes.withUnsafeBytes { $0.loadUnaligned(as: uuid_t.self) }

            var encoder = IndexKeyEncoder(prefix: IndexKey(bytes: prefixBytes))
            encoder.append(value)
            encoder.append(uuid: uuid)
            let bigEndian = (0..<8).map { UInt8(truncatingIfNeeded: value >> UInt64(56 - 8 * $0)) }
            let expected =
                prefixBytes + [IndexKeyTag.uint64.rawValue] + bigEndian + [IndexKeyTag.uuid.rawValue] + uuidBytes
            #expect(encoder.key.bytes == expected, "prefix of \(length) bytes")
            #expect(encoder.key == IndexKey(bytes: expected), "prefix of \(length) bytes")
            #expect(encoder.key.hashValue == IndexKey(bytes: expected).hashValue)
        }
    }

    @Test func sharedPrefixesAcrossTheBoundary() {
        let base = (0..<50).map { UInt8($0 + 1) }
        for cut in [0, 1, 30, 31, 32, 33, 49] {
            var other = base
            other[cut] = 0
            #expect(IndexKey(bytes: base).sharedPrefixCount(with: IndexKey(bytes: other)) == cut)
            #expect(IndexKey(bytes: base).sharedPrefixCount(with: IndexKey(bytes: Array(base[0..<cut]))) == cut)
        }
    }

    @Test func prefixesOfEveryLength() {
        var rng = SplitMix64(seed: 9)
        for length in [0, 5, 30, 31, 32, 33, 64] {
            let bytes = (0..<length).map { _ in UInt8(truncatingIfNeeded: rng.next() | 1) }
            let key = IndexKey(bytes: bytes)
            for cut in 0...length {
                let prefix = key.prefix(cut)
                #expect(prefix == IndexKey(bytes: Array(bytes[0..<cut])), "\(cut) of \(length)")
                #expect(prefix.bytes == Array(bytes[0..<cut]))
                var extended = prefix
                for byte in bytes[cut...] { extended.append(byte) }
                #expect(extended == key, "\(cut) of \(length), extended back")
            }
        }
    }

    @Test func encodedKeysStayInlineUpToTheCapacity() {
        // A UUID, and a short string followed by a primary key, as indexes store them.
        let uuid = IndexKey { $0.append(uuid: (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16)) }
        #expect(uuid.count == 17)
        let short = IndexKey { $0.append("Destination 42") }.appendingPrimaryKey(7)
        #expect(short.count == 26)
        #expect(short.count <= IndexKey.inlineCapacity)
        let long = IndexKey { $0.append(String(repeating: "x", count: 40)) }.appendingPrimaryKey(7)
        #expect(long.count == 52)
        #expect(long > IndexKey { $0.append(String(repeating: "x", count: 40)) })
        #expect(long < IndexKey { $0.append(String(repeating: "x", count: 41)) })
    }
}
