import CCRC32C

/// CRC32C (Castagnoli), with LevelDB's mask for checksums stored next to the data they
/// cover. See `Formats/log.md`. The CPU's CRC32C instruction computes it where there is one
/// (SSE 4.2, or Arm's CRC extension), much faster than the tables; slicing-by-8 over tables
/// is the fallback and the reference the tests hold the instruction to.
package enum CRC32C {
    /// Whether `update` uses the CPU's instruction. Asked of the CPU once.
    static let usesHardware = stowage_crc32c_hardware_available() != 0

    /// Eight 256-entry tables for the reflected polynomial 0x82F63B78, one after another.
    package static let tables: [UInt32] = {
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

    package static func checksum(_ bytes: [UInt8]) -> UInt32 { update(0, bytes) }

    /// The CRC of `a` followed by `b`, from the CRC of `a`, the CRC of `b` and `b`'s length,
    /// without the bytes: a commit written in pieces is checksummed with the frame fields
    /// that come before it, which are known only once every piece is written. `crcA` is
    /// shifted over `lengthB` zero bytes by multiplying it by x^(8·lengthB) modulo the
    /// polynomial, a power made from the table of x^(2^k) (zlib's `crc32_combine` works
    /// this way since 1.2.12). Building the operator matrices by squaring on every call, as
    /// older zlib did, was a noticeable part of every save (see `Benchmarks/RESULTS.md`,
    /// "Measurements behind the code").
    static func combine(_ crcA: UInt32, _ crcB: UInt32, lengthB: Int) -> UInt32 {
        guard lengthB > 0 else { return crcA }
        return multiplyModP(xToThe(UInt64(lengthB), timesTwoToThe: 3), crcA) ^ crcB
    }

    /// The reflected polynomial.
    private static let polynomial: UInt32 = 0x82F6_3B78

    /// `a` times `b` modulo the polynomial, both reflected (x^0 is the top bit).
    private static func multiplyModP(_ a: UInt32, _ b: UInt32) -> UInt32 {
        var m: UInt32 = 1 << 31
        var product: UInt32 = 0
        var b = b
        while m != 0 {
            if a & m != 0 {
                product ^= b
                if a & (m &- 1) == 0 { break }
            }
            m >>= 1
            b = b & 1 != 0 ? (b >> 1) ^ polynomial : b >> 1
        }
        return product
    }

    /// x^(2^k) modulo the polynomial for k in 0..<66: x^(2^(k+1)) is x^(2^k) squared. A
    /// byte count's 63 bits, shifted by 3 for the bits of a byte, need no more.
    private static let powersOfX: [UInt32] = {
        var table: [UInt32] = []
        var p: UInt32 = 1 << 30  // x^1
        for _ in 0..<66 {
            table.append(p)
            p = multiplyModP(p, p)
        }
        return table
    }()

    /// x^(n·2^k) modulo the polynomial: the product of the table's powers for the bits of
    /// `n`.
    private static func xToThe(_ n: UInt64, timesTwoToThe k: Int) -> UInt32 {
        var product: UInt32 = 1 << 31  // x^0
        var n = n
        var k = k
        while n != 0 {
            if n & 1 != 0 { product = multiplyModP(powersOfX[k], product) }
            n >>= 1
            k += 1
        }
        return product
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
