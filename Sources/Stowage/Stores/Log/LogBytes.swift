/// A malformed payload: its checksum may be fine, but its contents do not decode.
package struct LogDecodeError: Error, CustomStringConvertible {
    package let description: String
    package init(_ description: String) { self.description = description }
}

/// Appends the primitives of `Formats/snapshot.md` to a byte buffer.
package struct LogByteWriter {
    package var bytes: [UInt8] = []

    package init(capacity: Int = 256) { bytes.reserveCapacity(capacity) }

    package mutating func u8(_ v: UInt8) { bytes.append(v) }

    mutating func u16(_ v: UInt16) {
        bytes.append(UInt8(truncatingIfNeeded: v))
        bytes.append(UInt8(truncatingIfNeeded: v >> 8))
    }

    package mutating func u32(_ v: UInt32) {
        for shift in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8(truncatingIfNeeded: v >> UInt32(shift))) }
    }

    mutating func u64(_ v: UInt64) {
        for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: v >> UInt64(shift))) }
    }

    package mutating func varint(_ v: UInt64) {
        var v = v
        while v >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        bytes.append(UInt8(v))
    }

    package mutating func varint(_ v: Int) { varint(UInt64(clamping: v)) }

    package mutating func zigzag(_ v: Int64) { varint(UInt64(bitPattern: (v << 1) ^ (v >> 63))) }

    package mutating func string(_ s: String) {
        var s = s
        s.withUTF8 { utf8 in
            varint(utf8.count)
            bytes.append(contentsOf: utf8)
        }
    }

    package mutating func data(_ d: some Collection<UInt8>) {
        varint(d.count)
        bytes.append(contentsOf: d)
    }
}

/// Reads the primitives of `Formats/snapshot.md`, never past the end of its bytes.
package struct LogByteReader {
    package let bytes: [UInt8]
    package private(set) var position: Int

    package init(_ bytes: [UInt8], position: Int = 0) {
        self.bytes = bytes
        self.position = position
    }

    var remaining: Int { bytes.count - position }
    var isAtEnd: Bool { position >= bytes.count }

    package mutating func u8() throws -> UInt8 {
        guard position < bytes.count else { throw LogDecodeError("unexpected end of payload at byte \(position)") }
        defer { position += 1 }
        return bytes[position]
    }

    /// Moves past one value of `Formats/snapshot.md` without decoding it.
    mutating func skipValue() throws {
        let start = position
        position += try bytes.withUnsafeBytes { raw in
            var skipper = LogSkipper(UnsafeRawBufferPointer(rebasing: raw[start...]))
            do {
                try skipper.skipValue(depth: 0)
            } catch let error as LogDecodeError {
                throw LogDecodeError("\(error) (of the value at byte \(start))")
            }
            return skipper.position
        }
    }

    /// The next byte without consuming it, or `nil` at the end.
    func peek() -> UInt8? { position < bytes.count ? bytes[position] : nil }

    package mutating func u32() throws -> UInt32 {
        guard remaining >= 4 else { throw LogDecodeError("unexpected end of payload at byte \(position)") }
        var v: UInt32 = 0
        for i in 0..<4 { v |= UInt32(bytes[position + i]) << UInt32(8 * i) }
        position += 4
        return v
    }

    mutating func u64() throws -> UInt64 {
        guard remaining >= 8 else { throw LogDecodeError("unexpected end of payload at byte \(position)") }
        var v: UInt64 = 0
        for i in 0..<8 { v |= UInt64(bytes[position + i]) << UInt64(8 * i) }
        position += 8
        return v
    }

    package mutating func varint() throws -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let byte = try u8()
            if shift == 63 && byte > 1 { throw LogDecodeError("varint overflows 64 bits at byte \(position - 1)") }
            result |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return result }
            shift += 7
        }
    }

    package mutating func zigzag() throws -> Int64 {
        let v = try varint()
        return Int64(bitPattern: v >> 1) ^ -Int64(bitPattern: v & 1)
    }

    /// A count of things that each take at least `minimumSize` bytes, bounded by the bytes left.
    package mutating func count(minimumSize: Int = 1) throws -> Int {
        let v = try varint()
        guard v <= UInt64(remaining / max(1, minimumSize)) else {
            throw LogDecodeError("count \(v) at byte \(position) exceeds the \(remaining) bytes left")
        }
        return Int(v)
    }

    package mutating func bytes(_ count: Int) throws -> ArraySlice<UInt8> {
        guard count >= 0, count <= remaining else { throw LogDecodeError("length \(count) exceeds the payload") }
        defer { position += count }
        return bytes[position..<position + count]
    }

    /// The next 16 bytes, as a UUID's.
    package mutating func uuid() throws -> uuid_t {
        guard remaining >= 16 else { throw LogDecodeError("unexpected end of payload at byte \(position)") }
        defer { position += 16 }
        return bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: position, as: uuid_t.self) }
    }

    /// Moves past `count` bytes.
    mutating func skip(_ count: Int) throws {
        guard count >= 0, count <= remaining else { throw LogDecodeError("length \(count) exceeds the payload") }
        position += count
    }

    package mutating func string() throws -> String {
        let length = try count()
        let start = position
        try skip(length)
        guard let s = Self.validString(bytes, start..<position) else {
            throw LogDecodeError("invalid UTF-8 at byte \(start)")
        }
        return s
    }

    /// The string of `bytes[range]` when they are valid UTF-8, else `nil`.
    ///
    /// `String(validating:as:)` is not specialized for these types: it looked up generic
    /// metadata twice a call, a large part of reading a record back (see
    /// `Benchmarks/RESULTS.md`, "Measurements behind the code"). Decoding (which would repair
    /// bad bytes) and then comparing the result's bytes with the input validates as well,
    /// and ASCII, which cannot be bad, skips the comparison.
    static func validString(_ bytes: [UInt8], _ range: Range<Int>) -> String? {
        bytes.withUnsafeBufferPointer { all in
            let slice = UnsafeBufferPointer(rebasing: all[range])
            let decoded = String(decoding: slice, as: UTF8.self)
            if isASCII(UnsafeRawBufferPointer(slice)) { return decoded }
            var utf8 = decoded
            return utf8.withUTF8 { $0.elementsEqual(slice) } ? decoded : nil
        }
    }

    /// Whether every byte is below 0x80, eight at a time.
    static func isASCII(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var i = 0
        var high: UInt64 = 0
        while i + 8 <= bytes.count {
            high |= bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self)
            i += 8
        }
        while i < bytes.count {
            high |= UInt64(bytes[i])
            i += 1
        }
        return high & 0x8080_8080_8080_8080 == 0
    }
}
