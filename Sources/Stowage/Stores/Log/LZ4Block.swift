import CLZ4

/// The LZ4 block format, through liblz4 (`CLZ4`).
enum LZ4Block {
    /// The largest input LZ4 accepts (`LZ4_MAX_INPUT_SIZE`).
    static let maximumInputSize = 0x7E00_0000

    /// `input` compressed, after `headroom` zero bytes, or `nil` when it does not get
    /// shorter (or is too large).
    static func compress(_ input: [UInt8], headroom: Int = 0) -> [UInt8]? {
        guard !input.isEmpty, input.count <= maximumInputSize, headroom >= 0 else { return nil }
        let bound = Int(LZ4_compressBound(Int32(input.count)))
        guard bound > 0 else { return nil }
        var output = [UInt8](repeating: 0, count: headroom + bound)
        let written = input.withUnsafeBytes { source in
            output.withUnsafeMutableBytes { destination in
                LZ4_compress_default(
                    source.baseAddress?.assumingMemoryBound(to: CChar.self),
                    destination.baseAddress.map { ($0 + headroom).assumingMemoryBound(to: CChar.self) },
                    Int32(input.count), Int32(bound))
            }
        }
        guard written > 0, Int(written) < input.count else { return nil }
        output.removeSubrange((headroom + Int(written))...)
        return output
    }

    /// `input` decompressed, or `nil` unless it decompresses to exactly `length` bytes.
    /// The caller bounds `length` (log.md: at most 255 × the input, at most 0x7E000000).
    static func decompress(_ input: [UInt8], length: Int) -> [UInt8]? {
        guard !input.isEmpty, input.count <= maximumInputSize, length >= 0, length <= maximumInputSize else {
            return nil
        }
        var output = [UInt8](repeating: 0, count: length)
        let produced = input.withUnsafeBytes { source in
            output.withUnsafeMutableBytes { destination in
                LZ4_decompress_safe(
                    source.baseAddress?.assumingMemoryBound(to: CChar.self),
                    destination.baseAddress?.assumingMemoryBound(to: CChar.self),
                    Int32(input.count), Int32(length))
            }
        }
        return Int(produced) == length ? output : nil
    }
}
