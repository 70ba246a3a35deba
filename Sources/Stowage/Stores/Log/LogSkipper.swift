import Foundation

/// Moves through the values of `Formats/snapshot.md` without decoding them, never past the
/// end of its bytes (``LogCodec/writeStarts(_:writes:)``).
package struct LogSkipper {
    package let bytes: UnsafeRawBufferPointer
    package private(set) var position = 0

    package init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    private var end: LogDecodeError { LogDecodeError("unexpected end of payload at byte \(position)") }

    @inline(__always)
    package mutating func u8() throws -> UInt8 {
        guard position < bytes.count else { throw end }
        let byte = bytes[position]
        position &+= 1
        return byte
    }

    /// A varint, as ``LogByteReader/varint()`` reads it (at most 64 bits).
    @inline(__always)
    package mutating func varint() throws -> UInt64 {
        let first = try u8()
        if first < 0x80 { return UInt64(first) }
        var result = UInt64(first & 0x7F)
        var shift: UInt64 = 7
        while true {
            let byte = try u8()
            if shift == 63 && byte > 1 {
                throw LogDecodeError("varint overflows 64 bits at byte \(position - 1)")
            }
            result |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return result }
            shift += 7
        }
    }

    /// A count no larger than the bytes left.
    @inline(__always)
    package mutating func count() throws -> Int {
        let v = try varint()
        guard v <= UInt64(bytes.count - position) else {
            throw LogDecodeError("count \(v) at byte \(position) exceeds the \(bytes.count - position) bytes left")
        }
        return Int(v)
    }

    @inline(__always)
    mutating func skip(_ count: Int) throws {
        guard count >= 0, count <= bytes.count - position else {
            throw LogDecodeError("length \(count) exceeds the payload")
        }
        position &+= count
    }

    /// Moves past one value.
    mutating func skipValue(depth: Int) throws {
        let tag = try u8()
        switch tag {
        case 0x00, 0x01, 0x02: return
        case 0x06, 0x08, 0x0A, 0x0C: try skip(try count())
        case 0x05, 0x07: try skip(8)
        case 0x09: try skip(16)
        case 0x03, 0x04: _ = try varint()
        case 0x0B:
            try skip(try count())
            try skip(try count())
        case 0x0D, 0x0E:
            guard depth < LogCodec.maximumNesting else {
                throw LogDecodeError("values nest deeper than \(LogCodec.maximumNesting)")
            }
            for _ in 0..<(try count()) {
                if tag == 0x0E { try skip(try count()) }
                try skipValue(depth: depth + 1)
            }
        case 0x0F:
            _ = try varint()
            _ = try varint()
        case 0x10:
            try skip(try count())
            if try u8() == 1 { try skip(try count()) }
            _ = try u8()
            _ = try varint()
        case 0x11:
            guard depth == 0 else { throw LogDecodeError("an external reference inside a value") }
            _ = try varint()
            _ = try varint()
            try skip(4)
        default:
            throw LogDecodeError("unknown value tag \(tag) at byte \(position - 1)")
        }
    }
}
