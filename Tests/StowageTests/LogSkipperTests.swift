import Foundation
import StowageTestSupport
import Testing

@testable import Stowage

/// `LogCodec.writeStarts(_:writes:)` finds where each write of a block starts through a
/// pointer. These tests hold it to the reader it replaced, kept here as the reference: on
/// random blocks of every value tag, and on those blocks damaged, both give the same starts
/// or both refuse the block.
@Suite("Finding the writes of a block")
struct LogSkipperTests {
    /// The reference: one write at a time through `LogByteReader`, as blocks were read
    /// before the pointer version.
    enum Reference {
        static func writeStarts(_ contents: [UInt8], writes: Int) throws -> [Int32] {
            var r = LogByteReader(contents)
            var starts: [Int32] = []
            for _ in 0..<writes {
                starts.append(Int32(r.position))
                guard try r.u8() <= 1 else { throw LogDecodeError("bad write kind") }
                _ = try r.varint()
                _ = try r.zigzag()
                let count = try r.count()
                for _ in 0..<count { try skipValue(&r, depth: 0) }
            }
            guard r.isAtEnd else { throw LogDecodeError("\(r.remaining) bytes after its last write") }
            return starts
        }

        static func skipValue(_ r: inout LogByteReader, depth: Int) throws {
            let tag = try r.u8()
            switch tag {
            case 0x00, 0x01, 0x02: return
            case 0x03, 0x04: _ = try r.varint()
            case 0x05, 0x07: try r.skip(8)
            case 0x06, 0x08, 0x0A, 0x0C: try r.skip(try r.count())
            case 0x09: try r.skip(16)
            case 0x0B:
                try r.skip(try r.count())
                try r.skip(try r.count())
            case 0x0D, 0x0E:
                guard depth < LogCodec.maximumNesting else { throw LogDecodeError("too deep") }
                for _ in 0..<(try r.count()) {
                    if tag == 0x0E { try r.skip(try r.count()) }
                    try skipValue(&r, depth: depth + 1)
                }
            case 0x0F:
                _ = try r.varint()
                _ = try r.zigzag()
            case 0x10:
                try r.skip(try r.count())
                if try r.u8() == 1 { try r.skip(try r.count()) }
                _ = try r.u8()
                _ = try r.varint()
            case 0x11:
                guard depth == 0 else { throw LogDecodeError("an external reference inside a value") }
                _ = try r.varint()
                _ = try r.varint()
                _ = try r.u32()
            default:
                throw LogDecodeError("unknown value tag \(tag)")
            }
        }
    }

    static func bytes(_ n: Int, _ rng: inout SeededRandom) -> [UInt8] {
        (0..<n).map { _ in UInt8.random(in: 0...255, using: &rng) }
    }

    /// A random varint: small most of the time, up to 64 bits sometimes.
    static func varint(_ rng: inout SeededRandom) -> UInt64 {
        switch Int.random(in: 0..<4, using: &rng) {
        case 0: UInt64.random(in: 0..<0x80, using: &rng)
        case 1: UInt64.random(in: 0..<0x4000, using: &rng)
        case 2: UInt64.random(in: 0...UInt64(UInt32.max), using: &rng)
        default: rng.next()
        }
    }

    static func lengthPrefixed(_ w: inout LogByteWriter, _ rng: inout SeededRandom) {
        let n = Int.random(in: 0...40, using: &rng)
        w.varint(n)
        w.bytes += bytes(n, &rng)
    }

    /// A random value of any tag, nested up to three deep.
    static func value(_ w: inout LogByteWriter, depth: Int, _ rng: inout SeededRandom) {
        let tags: [UInt8] = depth == 0 ? Array(0x00...0x11) : Array(0x00...0x10)
        let tag = tags.randomElement(using: &rng) ?? 0
        let nestedTag = depth < 3 ? tag : 0x06
        w.u8(nestedTag)
        switch nestedTag {
        case 0x00, 0x01, 0x02: break
        case 0x03, 0x04: w.varint(varint(&rng))
        case 0x05, 0x07: w.bytes += bytes(8, &rng)
        case 0x06, 0x08, 0x0A, 0x0C: lengthPrefixed(&w, &rng)
        case 0x09: w.bytes += bytes(16, &rng)
        case 0x0B:
            lengthPrefixed(&w, &rng)
            lengthPrefixed(&w, &rng)
        case 0x0D, 0x0E:
            let n = Int.random(in: 0...4, using: &rng)
            w.varint(n)
            for _ in 0..<n {
                if nestedTag == 0x0E { lengthPrefixed(&w, &rng) }
                value(&w, depth: depth + 1, &rng)
            }
        case 0x0F:
            w.varint(varint(&rng))
            w.zigzag(Int64(bitPattern: varint(&rng)))
        case 0x10:
            lengthPrefixed(&w, &rng)
            let hasSecond = Bool.random(using: &rng)
            w.u8(hasSecond ? 1 : 0)
            if hasSecond { lengthPrefixed(&w, &rng) }
            w.u8(UInt8.random(in: 0...255, using: &rng))
            w.varint(varint(&rng))
        default:
            w.varint(varint(&rng))
            w.varint(varint(&rng))
            w.u32(UInt32.random(in: 0...UInt32.max, using: &rng))
        }
    }

    /// The contents of a block of `writes` random writes, and where each starts.
    static func block(writes: Int, _ rng: inout SeededRandom) -> (contents: [UInt8], starts: [Int32]) {
        var w = LogByteWriter()
        var starts: [Int32] = []
        for _ in 0..<writes {
            starts.append(Int32(w.bytes.count))
            w.u8(UInt8.random(in: 0...1, using: &rng))
            w.varint(varint(&rng))
            w.zigzag(Int64.random(in: -1_000_000...1_000_000, using: &rng))
            let count = Int.random(in: 0...8, using: &rng)
            w.varint(count)
            for _ in 0..<count { value(&w, depth: 0, &rng) }
        }
        return (w.bytes, starts)
    }

    /// Both readers' answers for `contents`: the starts, or nil when it is refused.
    static func answers(_ contents: [UInt8], writes: Int) -> (fast: [Int32]?, reference: [Int32]?) {
        (try? LogCodec.writeStarts(contents, writes: writes), try? Reference.writeStarts(contents, writes: writes))
    }

    @Test func wholeBlocksGiveTheStartsTheyWereWrittenWith() {
        var rng = SeededRandom(seed: 41)
        for round in 0..<400 {
            let writes = Int.random(in: 0...30, using: &rng)
            let (contents, starts) = Self.block(writes: writes, &rng)
            let (fast, reference) = Self.answers(contents, writes: writes)
            #expect(fast == starts, "round \(round)")
            #expect(reference == starts, "round \(round)")
        }
    }

    /// Damage of every kind: a changed byte, a cut, extra bytes, a wrong write count. The
    /// two readers agree on every one, and some of each are refused.
    @Test func damagedBlocksAreAnsweredAsTheReferenceAnswersThem() {
        var rng = SeededRandom(seed: 97)
        var refused = 0
        var compared = 0
        for round in 0..<400 {
            let writes = Int.random(in: 1...12, using: &rng)
            let (contents, _) = Self.block(writes: writes, &rng)
            var cases: [(String, [UInt8], Int)] = []
            for _ in 0..<8 {
                var flipped = contents
                let at = Int.random(in: 0..<flipped.count, using: &rng)
                flipped[at] = UInt8.random(in: 0...255, using: &rng)
                cases.append(("byte \(at) changed", flipped, writes))
            }
            let cut = Int.random(in: 0..<contents.count, using: &rng)
            cases.append(("cut at \(cut)", Array(contents[..<cut]), writes))
            cases.append(("one byte more", contents + [0], writes))
            cases.append(("one write more", contents, writes + 1))
            cases.append(("one write fewer", contents, writes - 1))
            for (what, bytes, count) in cases {
                let (fast, reference) = Self.answers(bytes, writes: count)
                #expect(fast == reference, "round \(round), \(what)")
                compared += 1
                if reference == nil { refused += 1 }
            }
        }
        #expect(refused > compared / 4, "\(refused) of \(compared) damaged blocks refused")
        #expect(refused < compared, "every damaged block refused: the changed bytes never landed in values")
    }

    /// Values nested deeper than the codec allows are refused, as the reference refuses them.
    @Test func nestingPastTheLimitIsRefused() {
        for depth in [LogCodec.maximumNesting, LogCodec.maximumNesting + 1] {
            var w = LogByteWriter()
            w.u8(0)
            w.varint(1)
            w.zigzag(1)
            w.varint(1)
            for _ in 0..<depth {
                w.u8(0x0D)
                w.varint(1)
            }
            w.u8(0x00)
            let (fast, reference) = Self.answers(w.bytes, writes: 1)
            #expect(fast == reference, "depth \(depth)")
            #expect((fast == nil) == (depth > LogCodec.maximumNesting), "depth \(depth)")
        }
    }
}
