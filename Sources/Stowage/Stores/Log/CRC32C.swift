import CCRC32C

/// CRC32C (Castagnoli), with LevelDB's mask for checksums stored next to the data they
/// cover. See `Formats/log.md`. The CPU's CRC32C instruction computes it where there is one
/// (SSE 4.2, or Arm's CRC extension), about five times faster than the tables; slicing-by-8
/// over tables is the fallback and the reference the tests hold the instruction to.
enum CRC32C {
    /// Whether `update` uses the CPU's instruction. Asked of the CPU once.
    static let usesHardware = stowage_crc32c_hardware_available() != 0

    /// Eight 256-entry tables for the reflected polynomial 0x82F63B78, one after another.
    static let tables: [UInt32] = {
        var tables = [UInt32](repeating: 0, count: 8 * 256)
        for i in 0..<256 {
            var crc = UInt32(i)
            for _ in 0..<8 { crc = (crc & 1) != 0 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
            tables[i] = crc
        }
        for i in 0..<256 {
            var crc = tables[i]
            for t in 1..<8 {
                crc = tables[Int(crc & 0xFF)] ^ (crc >> 8)
                tables[t * 256 + i] = crc
            }
        }
        return tables
    }()

    /// The CRC of `bytes`, continuing from `crc` (the CRC of what came before, or 0).
    static func update(_ crc: UInt32, _ bytes: UnsafeRawBufferPointer) -> UInt32 {
        guard usesHardware else { return tableUpdate(crc, bytes) }
        guard let base = bytes.baseAddress else { return crc }
        return ~stowage_crc32c_hardware(~crc, base, bytes.count)
    }

    /// The same CRC as `update`, from the tables alone.
    static func tableUpdate(_ crc: UInt32, _ bytes: UnsafeRawBufferPointer) -> UInt32 {
        var c = ~crc
        tables.withUnsafeBufferPointer { t in
            var i = 0
            let n = bytes.count
            while n - i >= 8 {
                let lo = UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: i, as: UInt32.self)) ^ c
                let hi = UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: i + 4, as: UInt32.self))
                c =
                    t[7 * 256 + Int(lo & 0xFF)] ^ t[6 * 256 + Int((lo >> 8) & 0xFF)]
                    ^ t[5 * 256 + Int((lo >> 16) & 0xFF)] ^ t[4 * 256 + Int(lo >> 24)]
                    ^ t[3 * 256 + Int(hi & 0xFF)] ^ t[2 * 256 + Int((hi >> 8) & 0xFF)]
                    ^ t[1 * 256 + Int((hi >> 16) & 0xFF)] ^ t[Int(hi >> 24)]
                i += 8
            }
            while i < n {
                c = t[Int((c ^ UInt32(bytes[i])) & 0xFF)] ^ (c >> 8)
                i += 1
            }
        }
        return ~c
    }

    static func update(_ crc: UInt32, _ bytes: [UInt8]) -> UInt32 {
        bytes.withUnsafeBytes { update(crc, $0) }
    }

    static func update(_ crc: UInt32, _ bytes: ArraySlice<UInt8>) -> UInt32 {
        bytes.withUnsafeBytes { update(crc, $0) }
    }

    static func checksum(_ bytes: [UInt8]) -> UInt32 { update(0, bytes) }

    /// The CRC of `a` followed by `b`, from the CRC of `a`, the CRC of `b` and `b`'s length,
    /// without the bytes: a commit written in pieces is checksummed with the frame fields
    /// that come before it, which are known only once every piece is written. The shift of
    /// `crcA` over `lengthB` zero bytes is done by squaring the one-zero-bit operator over
    /// GF(2), as zlib's `crc32_combine` does for its polynomial.
    static func combine(_ crcA: UInt32, _ crcB: UInt32, lengthB: Int) -> UInt32 {
        guard lengthB > 0 else { return crcA }
        // The operator for one zero bit: a shift, and the polynomial when a one falls off.
        var odd = [UInt32](repeating: 0, count: 32)
        odd[0] = 0x82F6_3B78
        var row: UInt32 = 1
        for n in 1..<32 {
            odd[n] = row
            row <<= 1
        }
        var even = square(odd)  // two zero bits
        odd = square(even)  // four zero bits
        var crc = crcA
        var remaining = lengthB
        // Apply the operator for 8, 16, 32… zero bits where `lengthB`'s bits are set.
        repeat {
            even = square(odd)
            if remaining & 1 != 0 { crc = times(even, crc) }
            remaining >>= 1
            guard remaining != 0 else { break }
            odd = square(even)
            if remaining & 1 != 0 { crc = times(odd, crc) }
            remaining >>= 1
        } while remaining != 0
        return crc ^ crcB
    }

    private static func times(_ matrix: [UInt32], _ vector: UInt32) -> UInt32 {
        var sum: UInt32 = 0
        var vector = vector
        var i = 0
        while vector != 0 {
            if vector & 1 != 0 { sum ^= matrix[i] }
            vector >>= 1
            i += 1
        }
        return sum
    }

    private static func square(_ matrix: [UInt32]) -> [UInt32] {
        (0..<32).map { times(matrix, matrix[$0]) }
    }

    private static let maskDelta: UInt32 = 0xA282_EAD8

    /// The stored form of a CRC: rotated and offset, so that a CRC of data that itself
    /// holds CRCs does not degenerate.
    static func mask(_ crc: UInt32) -> UInt32 { ((crc >> 15) | (crc << 17)) &+ maskDelta }

    static func unmask(_ masked: UInt32) -> UInt32 {
        let rotated = masked &- maskDelta
        return (rotated >> 17) | (rotated << 15)
    }
}
