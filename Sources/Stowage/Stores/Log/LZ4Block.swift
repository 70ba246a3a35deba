import CLZ4

/// The LZ4 block format, through liblz4 (`CLZ4`).
enum LZ4Block {
    /// The largest input LZ4 accepts (`LZ4_MAX_INPUT_SIZE`).
    static let maximumInputSize = 0x7E00_0000

    /// `input` compressed, after `headroom` zero bytes, or `nil` when it does not get
    /// shorter (or is too large). The output is not zeroed first: LZ4 writes every byte
    /// counted.
    static func compress(_ input: [UInt8], headroom: Int = 0) -> [UInt8]? {
        guard !input.isEmpty, input.count <= maximumInputSize, headroom >= 0 else { return nil }
        let bound = Int(LZ4_compressBound(Int32(input.count)))
        guard bound > 0 else { return nil }
        var written: Int32 = 0
        let output = input.withUnsafeBytes { source in
            [UInt8](unsafeUninitializedCapacity: headroom + bound) { destination, initialized in
                guard let base = destination.baseAddress else { return }
                base.initialize(repeating: 0, count: headroom)
                written = LZ4_compress_default(
                    source.baseAddress?.assumingMemoryBound(to: CChar.self),
                    UnsafeMutableRawPointer(base + headroom).assumingMemoryBound(to: CChar.self),
                    Int32(input.count), Int32(bound))
                initialized = headroom + Int(max(0, written))
            }
        }
        guard written > 0, Int(written) < input.count else { return nil }
        return output
    }

    /// `input` decompressed, or `nil` unless it decompresses to exactly `length` bytes.
    /// The caller bounds `length` (log.md: at most 255 × the input, at most 0x7E000000).
    static func decompress(_ input: [UInt8], length: Int) -> [UInt8]? {
        input.withUnsafeBytes { decompress($0, length: length) }
    }

    /// `input` decompressed, as above, from bytes in place (a block inside a read buffer).
    static func decompress(_ input: UnsafeRawBufferPointer, length: Int) -> [UInt8]? {
        guard let source = input.baseAddress, !input.isEmpty, input.count <= maximumInputSize, length >= 0,
            length <= maximumInputSize
        else {
            return nil
        }
        var produced: Int32 = -1
        let output = [UInt8](unsafeUninitializedCapacity: length) { destination, initialized in
            guard let base = destination.baseAddress else {
                // Nothing to write into: only an empty input decompresses to nothing.
                produced = length == 0 ? 0 : -1
                return
            }
            produced = LZ4_decompress_safe(
                source.assumingMemoryBound(to: CChar.self),
                UnsafeMutableRawPointer(base).assumingMemoryBound(to: CChar.self), Int32(input.count), Int32(length))
            initialized = Int(max(0, produced))
        }
        return Int(produced) == length ? output : nil
    }
}
