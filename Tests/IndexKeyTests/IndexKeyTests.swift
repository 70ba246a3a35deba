import Foundation
import IndexKey
import Testing

// MARK: - Helpers

func hex(_ key: IndexKey) -> String { key.description }

func key(_ build: (inout IndexKeyEncoder) -> Void) -> IndexKey { IndexKey(build) }

/// Bitwise equality for decoded components, so NaN payloads can be compared.
func same(_ a: IndexKeyComponent, _ b: IndexKeyComponent) -> Bool {
    switch (a, b) {
    case let (.double(x), .double(y)): return x.bitPattern == y.bitPattern
    case let (.float(x), .float(y)): return x.bitPattern == y.bitPattern
    case let (.date(x), .date(y)): return x.bitPattern == y.bitPattern
    default: return a == b
    }
}

/// Random Doubles covering every region: random bit patterns (all exponents,
/// subnormals), small integers (many ties), zeros of both signs, infinities.
func randomDouble(using rng: inout SplitMix64) -> Double {
    switch Int.random(in: 0..<6, using: &rng) {
    case 0: return Double(bitPattern: rng.next())
    case 1: return Double(Int.random(in: -5...5, using: &rng))
    case 2:
        return [
            0.0, -0.0, .infinity, -.infinity, .leastNonzeroMagnitude, -.leastNonzeroMagnitude,
            .greatestFiniteMagnitude, -.greatestFiniteMagnitude, .nan,
        ][Int.random(in: 0..<9, using: &rng)]
    case 3: return Double.random(in: -1...1, using: &rng)
    default: return Double.random(in: -1e12...1e12, using: &rng)
    }
}

func randomFloat(using rng: inout SplitMix64) -> Float {
    switch Int.random(in: 0..<4, using: &rng) {
    case 0: return Float(bitPattern: UInt32(truncatingIfNeeded: rng.next()))
    case 1: return Float(Int.random(in: -5...5, using: &rng))
    case 2:
        return [Float(0), -0.0, .infinity, -.infinity, .leastNonzeroMagnitude, .nan][Int.random(in: 0..<6, using: &rng)]
    default: return Float.random(in: -1000...1000, using: &rng)
    }
}

func randomInt64(using rng: inout SplitMix64) -> Int64 {
    switch Int.random(in: 0..<3, using: &rng) {
    case 0: return Int64(bitPattern: rng.next())
    case 1: return Int64.random(in: -3...3, using: &rng)
    default: return [Int64.min, Int64.min + 1, -1, 0, 1, Int64.max - 1, Int64.max][Int.random(in: 0..<7, using: &rng)]
    }
}

/// Random ASCII, including NUL and other control characters. Short lengths
/// over a small alphabet make shared prefixes and prefix pairs common.
func randomASCII(using rng: inout SplitMix64) -> String {
    let length = Int.random(in: 0...6, using: &rng)
    let small = Bool.random(using: &rng)
    var scalars = String.UnicodeScalarView()
    for _ in 0..<length {
        let value =
            small
            ? [0, 1, 0x41, 0x61, 0x7F][Int.random(in: 0..<5, using: &rng)] : Int.random(in: 0...0x7F, using: &rng)
        scalars.append(Unicode.Scalar(UInt8(value)))
    }
    return String(scalars)
}

/// Ranges of NFC-stable scalars with no combining marks, Hangul jamo,
/// compatibility ideographs or canonical singletons, so that Swift's
/// canonical-equivalence comparison reduces to scalar order. Mostly BMP, plus a
/// block of emoji to show the order is by scalar (UTF-8), not UTF-16 code unit.
let safeScalarRanges: [ClosedRange<UInt32>] = [
    0x20...0x7E, 0xA0...0xFF, 0x100...0x17F, 0x391...0x3A1, 0x3A3...0x3A9, 0x3B1...0x3C9,
    0x410...0x44F, 0x3041...0x3096, 0x4E00...0x4E80, 0xAC00...0xAC40, 0xE000...0xE010,
    0xFF10...0xFF5A, 0x1F600...0x1F64F,
]

func randomUnicode(using rng: inout SplitMix64) -> String {
    let length = Int.random(in: 0...5, using: &rng)
    var scalars = String.UnicodeScalarView()
    for _ in 0..<length {
        let range = safeScalarRanges[Int.random(in: 0..<safeScalarRanges.count, using: &rng)]
        // Bias to the range ends so that equal prefixes are frequent.
        let value = Bool.random(using: &rng) ? range.lowerBound : UInt32.random(in: range, using: &rng)
        if let scalar = Unicode.Scalar(value) {
            scalars.append(scalar)
        }
    }
    return String(scalars)
}

func randomBytes(using rng: inout SplitMix64) -> [UInt8] {
    (0..<Int.random(in: 0...5, using: &rng)).map { _ in
        [0x00, 0x01, 0xFE, 0xFF, 0x42][Int.random(in: 0..<5, using: &rng)]
    }
}

/// Checks `encode(a) < encode(b)` iff `a < b` and `encode(a) == encode(b)` iff
/// `a == b` for `count` random pairs, and that each value round-trips.
func checkOrder<T>(
    _ name: String, count: Int, seed: UInt64,
    generate: (inout SplitMix64) -> T,
    less: (T, T) -> Bool, equal: (T, T) -> Bool,
    encode: (inout IndexKeyEncoder, T) -> Void,
    component: (T) -> IndexKeyComponent,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    var rng = SplitMix64(seed: seed)
    var failures = 0
    for i in 0..<count {
        let a = generate(&rng)
        let b = generate(&rng)
        let ka = key { encode(&$0, a) }
        let kb = key { encode(&$0, b) }
        let ok = (ka < kb) == less(a, b) && (kb < ka) == less(b, a) && (ka == kb) == equal(a, b)
        if !ok && failures < 5 {
            failures += 1
            Issue.record(
                "\(name) seed \(seed) pair \(i): \(String(reflecting: a)) [\(hex(ka))] vs \(String(reflecting: b)) [\(hex(kb))]",
                sourceLocation: sourceLocation)
        }
        let decoded = try? ka.decoded()
        if decoded == nil || decoded!.count != 1 || !same(decoded![0], component(a)) {
            if failures < 5 {
                failures += 1
                Issue.record(
                    "\(name) seed \(seed) pair \(i): round trip of \(String(reflecting: a)) gave \(String(describing: decoded))",
                    sourceLocation: sourceLocation)
            }
        }
    }
}

/// `nil` first, then values in order.
func optionalLess<T>(_ a: T?, _ b: T?, _ less: (T, T) -> Bool) -> Bool {
    switch (a, b) {
    case (nil, nil): return false
    case (nil, _): return true
    case (_, nil): return false
    case let (x?, y?): return less(x, y)
    }
}

/// Total order used by the encoding for Doubles: Swift `<` with -0 == +0 and
/// all NaNs equal and greater than everything else.
func doubleLess(_ a: Double, _ b: Double) -> Bool {
    if a.isNaN { return false }
    if b.isNaN { return true }
    return a < b
}

func doubleEqual(_ a: Double, _ b: Double) -> Bool { (a.isNaN && b.isNaN) || a == b }

func canonical(_ d: Double) -> Double { d.isNaN ? Double(bitPattern: 0x7FF8_0000_0000_0000) : (d == 0 ? 0 : d) }
func canonical(_ f: Float) -> Float { f.isNaN ? Float(bitPattern: 0x7FC0_0000) : (f == 0 ? 0 : f) }

// MARK: - Tests

@Suite("IndexKey encoding")
struct IndexKeyTests {
    @Test("golden vectors from Formats/index-key.md")
    func goldenVectors() throws {
        let uuid = UUID(uuidString: "00112233-4455-6677-8899-AABBCCDDEEFF")!
        let vectors: [(IndexKey, String)] = [
            (key { $0.appendNil() }, "00"),
            (key { $0.append(false) }, "10 00"),
            (key { $0.append(true) }, "10 01"),
            (key { $0.append(Int64(42)) }, "20 80 00 00 00 00 00 00 2a"),
            (key { $0.append(Int64(-1)) }, "20 7f ff ff ff ff ff ff ff"),
            (key { $0.append(Int64.min) }, "20 00 00 00 00 00 00 00 00"),
            (key { $0.append(UInt64(1)) }, "21 00 00 00 00 00 00 00 01"),
            (key { $0.append(1.0) }, "30 bf f0 00 00 00 00 00 00"),
            (key { $0.append(-1.0) }, "30 40 0f ff ff ff ff ff ff"),
            (key { $0.append(-0.0) }, "30 80 00 00 00 00 00 00 00"),
            (key { $0.append(Double.nan) }, "30 ff f8 00 00 00 00 00 00"),
            (key { $0.append(-Double.signalingNaN) }, "30 ff f8 00 00 00 00 00 00"),
            (key { $0.append(Float(1.5)) }, "31 bf c0 00 00"),
            (key { $0.appendDate(secondsSinceReferenceDate: 0) }, "38 80 00 00 00 00 00 00 00"),
            (key { $0.append("") }, "40 00 00"),
            (key { $0.append("ab") }, "40 61 62 00 00"),
            (key { $0.append("a\u{0}b") }, "40 61 00 ff 62 00 00"),
            (key { $0.append("é") }, "40 c3 a9 00 00"),
            (key { $0.append([UInt8]([0x00, 0x01])) }, "50 00 ff 01 00 00"),
            (key { $0.append(uuid) }, "60 00 11 22 33 44 55 66 77 88 99 aa bb cc dd ee ff"),
            (
                key {
                    $0.append("Smith")
                    $0.appendNil()
                    $0.append(Int64(7))
                }.appendingPrimaryKey(1001),
                "40 53 6d 69 74 68 00 00 00 20 80 00 00 00 00 00 00 07 20 80 00 00 00 00 00 03 e9"
            ),
        ]
        for (encoded, expected) in vectors {
            #expect(hex(encoded) == expected)
        }
        let compound = try vectors.last!.0.decoded()
        #expect(compound == [.string("Smith"), .null, .int64(7), .int64(1001)])
        #expect(indexKeyFormatVersion == 1)
    }

    @Test("Int64 order and round trip")
    func int64Order() {
        checkOrder(
            "Int64", count: 12_000, seed: 1, generate: randomInt64, less: (<), equal: (==),
            encode: { $0.append($1) }, component: { .int64($0) })
    }

    @Test("UInt64 order and round trip")
    func uint64Order() {
        checkOrder(
            "UInt64", count: 12_000, seed: 2,
            generate: { rng in Bool.random(using: &rng) ? rng.next() : UInt64.random(in: 0...3, using: &rng) },
            less: (<), equal: (==), encode: { $0.append($1) }, component: { .uint64($0) })
    }

    @Test("Double order (total order, -0 == +0, NaN last) and round trip")
    func doubleOrder() {
        checkOrder(
            "Double", count: 12_000, seed: 3, generate: randomDouble, less: doubleLess, equal: doubleEqual,
            encode: { $0.append($1) }, component: { .double(canonical($0)) })
        checkOrder(
            "Date", count: 5_000, seed: 4, generate: randomDouble, less: doubleLess, equal: doubleEqual,
            encode: { $0.appendDate(secondsSinceReferenceDate: $1) },
            component: { .date(secondsSinceReferenceDate: canonical($0)) })
        #expect(key { $0.append(Double.infinity) } < key { $0.append(Double.nan) })
        #expect(key { $0.append(-Double.nan) } == key { $0.append(Double.nan) })
        #expect(key { $0.append(-Double.infinity) } < key { $0.append(-Double.greatestFiniteMagnitude) })
        let date = Date(timeIntervalSinceReferenceDate: 12.5)
        #expect(key { $0.append(date) } == key { $0.appendDate(secondsSinceReferenceDate: 12.5) })
    }

    @Test("Float order and round trip")
    func floatOrder() {
        checkOrder(
            "Float", count: 12_000, seed: 5, generate: randomFloat,
            less: { a, b in b.isNaN ? !a.isNaN : (!a.isNaN && a < b) },
            equal: { a, b in (a.isNaN && b.isNaN) || a == b },
            encode: { $0.append($1) }, component: { .float(canonical($0)) })
    }

    @Test("Bool order and round trip")
    func boolOrder() {
        checkOrder(
            "Bool", count: 200, seed: 6, generate: { Bool.random(using: &$0) },
            less: { !$0 && $1 }, equal: (==), encode: { $0.append($1) }, component: { .bool($0) })
    }

    @Test("String order matches Swift < on random ASCII (with NUL and control characters)")
    func asciiStringOrder() {
        checkOrder(
            "ASCII", count: 12_000, seed: 7, generate: randomASCII, less: (<), equal: (==),
            encode: { $0.append($1) }, component: { .string($0) })
    }

    @Test("String order matches Swift < on random BMP and emoji strings without combining marks")
    func unicodeStringOrder() {
        checkOrder(
            "Unicode", count: 12_000, seed: 8, generate: randomUnicode, less: (<), equal: (==),
            encode: { $0.append($1) }, component: { .string($0) })
    }

    @Test("byte strings order lexicographically; Data encodes like [UInt8]")
    func bytesOrder() {
        checkOrder(
            "Bytes", count: 12_000, seed: 9, generate: randomBytes,
            less: { $0.lexicographicallyPrecedes($1) }, equal: (==),
            encode: { $0.append($1) }, component: { .bytes($0) })
        var rng = SplitMix64(seed: 10)
        for _ in 0..<200 {
            let bytes = randomBytes(using: &rng)
            #expect(key { $0.append(Data(bytes)) } == key { $0.append(bytes) })
        }
    }

    @Test("UUID order is bytewise")
    func uuidOrder() {
        func bytes(_ u: UUID) -> [UInt8] { withUnsafeBytes(of: u.uuid) { Array($0) } }
        checkOrder(
            "UUID", count: 5_000, seed: 11,
            generate: { rng in
                var raw = (0..<16).map { _ in UInt8.random(in: 0...2, using: &rng) }
                raw[0] = UInt8.random(in: 0...1, using: &rng)
                return UUID(uuid: raw.withUnsafeBytes { $0.loadUnaligned(as: uuid_t.self) })
            },
            less: { bytes($0).lexicographicallyPrecedes(bytes($1)) }, equal: (==),
            encode: { $0.append($1) }, component: { .uuid($0) })
    }

    @Test("nil sorts before every present value of every type")
    func nilFirst() {
        let nilKey = key { $0.appendNil() }
        var rng = SplitMix64(seed: 12)
        for _ in 0..<500 {
            let present: [IndexKey] = [
                key { $0.append(randomInt64(using: &rng)) },
                key { $0.append(rng.next()) },
                key { $0.append(randomDouble(using: &rng)) },
                key { $0.append(randomFloat(using: &rng)) },
                key { $0.append(Bool.random(using: &rng)) },
                key { $0.append(randomASCII(using: &rng)) },
                key { $0.append(randomBytes(using: &rng)) },
                key { $0.append(UUID()) },
                key { $0.appendDate(secondsSinceReferenceDate: randomDouble(using: &rng)) },
            ]
            for value in present {
                #expect(nilKey < value)
            }
        }
        #expect(key { $0.append(Int(-5)) } == key { $0.append(Int64(-5)) })
    }

    @Test("compound keys order component by component, with optionals and the primary-key suffix")
    func compoundOrder() throws {
        struct Row {
            var name: String?
            var score: Double?
            var flag: Bool
            var id: Int64
        }
        func less(_ a: Row, _ b: Row) -> Bool {
            if optionalLess(a.name, b.name, <) { return true }
            if optionalLess(b.name, a.name, <) { return false }
            if optionalLess(a.score, b.score, doubleLess) { return true }
            if optionalLess(b.score, a.score, doubleLess) { return false }
            if a.flag != b.flag { return !a.flag }
            return a.id < b.id
        }
        func encode(_ row: Row) -> IndexKey {
            var encoder = IndexKeyEncoder()
            if let name = row.name { encoder.append(name) } else { encoder.appendNil() }
            if let score = row.score { encoder.append(score) } else { encoder.appendNil() }
            encoder.append(row.flag)
            return encoder.key.appendingPrimaryKey(row.id)
        }
        var rng = SplitMix64(seed: 13)
        func randomRow() -> Row {
            Row(
                name: Int.random(in: 0..<5, using: &rng) == 0 ? nil : randomASCII(using: &rng),
                score: Int.random(in: 0..<5, using: &rng) == 0 ? nil : Double(Int.random(in: -2...2, using: &rng)),
                flag: Bool.random(using: &rng),
                id: Int64.random(in: -3...3, using: &rng))
        }
        for i in 0..<20_000 {
            let a = randomRow()
            let b = randomRow()
            let (ka, kb) = (encode(a), encode(b))
            #expect((ka < kb) == less(a, b), "seed 13 pair \(i): \(a) [\(hex(ka))] vs \(b) [\(hex(kb))]")
            #expect((kb < ka) == less(b, a), "seed 13 pair \(i): \(b) vs \(a)")
            var decoder = IndexKeyDecoder(ka)
            #expect(try decoder.decodeString() == a.name)
            #expect(try decoder.decodeDouble() == a.score)
            #expect(try decoder.decodeBool() == a.flag)
            #expect(try decoder.decodeInt64() == a.id)
            #expect(decoder.isAtEnd)
        }
        // Sorting encoded keys equals sorting rows.
        let rows = (0..<2_000).map { _ in randomRow() }
        let byKey = rows.map { (encode($0), $0) }.sorted { $0.0 < $1.0 }.map { encode($0.1) }
        let byRow = rows.sorted(by: less).map(encode)
        #expect(byKey == byRow)
    }

    @Test("random heterogeneous tuples round-trip")
    func tupleRoundTrip() throws {
        var rng = SplitMix64(seed: 14)
        for i in 0..<3_000 {
            var encoder = IndexKeyEncoder()
            var expected: [IndexKeyComponent] = []
            for _ in 0..<Int.random(in: 0...6, using: &rng) {
                switch Int.random(in: 0..<10, using: &rng) {
                case 0:
                    encoder.appendNil()
                    expected.append(.null)
                case 1:
                    let v = Bool.random(using: &rng)
                    encoder.append(v)
                    expected.append(.bool(v))
                case 2:
                    let v = randomInt64(using: &rng)
                    encoder.append(v)
                    expected.append(.int64(v))
                case 3:
                    let v = rng.next()
                    encoder.append(v)
                    expected.append(.uint64(v))
                case 4:
                    let v = randomDouble(using: &rng)
                    encoder.append(v)
                    expected.append(.double(canonical(v)))
                case 5:
                    let v = randomFloat(using: &rng)
                    encoder.append(v)
                    expected.append(.float(canonical(v)))
                case 6:
                    let v = randomUnicode(using: &rng) + randomASCII(using: &rng)
                    encoder.append(v)
                    expected.append(.string(v))
                case 7:
                    let v = randomBytes(using: &rng)
                    encoder.append(v)
                    expected.append(.bytes(v))
                case 8:
                    let v = UUID()
                    encoder.append(v)
                    expected.append(.uuid(v))
                default:
                    let v = randomDouble(using: &rng)
                    encoder.appendDate(secondsSinceReferenceDate: v)
                    expected.append(.date(secondsSinceReferenceDate: canonical(v)))
                }
            }
            let decoded = try encoder.key.decoded()
            #expect(
                decoded.count == expected.count && zip(decoded, expected).allSatisfy(same),
                "seed 14 tuple \(i): \(expected) decoded as \(decoded)")
            // Every proper prefix either fails cleanly or decodes a prefix of the tuple.
            let bytes = encoder.bytes
            for length in 0..<bytes.count {
                if let partial = try? IndexKey(bytes: Array(bytes[..<length])).decoded() {
                    #expect(
                        partial.count <= expected.count && zip(partial, expected).allSatisfy(same),
                        "seed 14 tuple \(i) prefix \(length)")
                }
            }
        }
    }

    @Test("malformed input throws instead of trapping")
    func malformedInput() throws {
        #expect(throws: IndexKeyDecodingError.unknownTag(0x99, offset: 0)) { try IndexKey(bytes: [0x99]).decoded() }
        #expect(throws: IndexKeyDecodingError.unexpectedEnd(offset: 3)) { try IndexKey(bytes: [0x20, 1, 2]).decoded() }
        #expect(throws: IndexKeyDecodingError.invalidEscape(offset: 3)) {
            try IndexKey(bytes: [0x40, 0x61, 0x00, 0x05]).decoded()
        }
        #expect(throws: IndexKeyDecodingError.invalidUTF8(offset: 1)) {
            try IndexKey(bytes: [0x40, 0xC3, 0x28, 0, 0]).decoded()
        }
        #expect(throws: IndexKeyDecodingError.invalidBool(offset: 1)) { try IndexKey(bytes: [0x10, 0x02]).decoded() }
        #expect(throws: IndexKeyDecodingError.unexpectedEnd(offset: 2)) { try IndexKey(bytes: [0x50, 0x61]).decoded() }
        var decoder = IndexKeyDecoder(key { $0.append("x") })
        #expect(throws: IndexKeyDecodingError.typeMismatch(expected: .int64, found: .string, offset: 0)) {
            try decoder.decodeInt64()
        }
        #expect(decoder.offset == 0)
        #expect(try decoder.decodeString() == "x")
        #expect(throws: IndexKeyDecodingError.unexpectedEnd(offset: 4)) { try decoder.decodeString() }

        // Random garbage: decoding must never trap.
        var rng = SplitMix64(seed: 15)
        var successes = 0
        for _ in 0..<20_000 {
            let tags = IndexKeyTag.allCases.map(\.rawValue) + [0xFF]
            let bytes = (0..<Int.random(in: 0...12, using: &rng)).map { _ in
                Bool.random(using: &rng)
                    ? tags[Int.random(in: 0..<tags.count, using: &rng)] : UInt8.random(in: 0...255, using: &rng)
            }
            if (try? IndexKey(bytes: bytes).decoded()) != nil { successes += 1 }
        }
        #expect(successes > 0)
    }

    @Test("prefix upper bound brackets every extension")
    func prefixUpperBound() {
        #expect(IndexKey(bytes: [1, 2, 0xFF]).prefixUpperBound == IndexKey(bytes: [1, 3]))
        #expect(IndexKey(bytes: [0xFF, 0xFF]).prefixUpperBound == nil)
        #expect(IndexKey(bytes: []).prefixUpperBound == nil)
        var rng = SplitMix64(seed: 16)
        for _ in 0..<2_000 {
            let prefix = key { $0.append(randomASCII(using: &rng)) }
            let extended = prefix.appendingPrimaryKey(randomInt64(using: &rng))
            guard let upper = prefix.prefixUpperBound else {
                Issue.record("string keys always have an upper bound")
                continue
            }
            #expect(prefix <= extended && extended < upper)
        }
    }
}
