import CLZ4

/// The LZ4 block format, through liblz4 (`CLZ4`).
package enum LZ4Block {
    /// The largest input LZ4 accepts (`LZ4_MAX_INPUT_SIZE`).
    static let maximumInputSize = 0x7E00_0000

    /// LZ4's acceleration for the log's writes of 4 KiB or more (`LZ4_compress_fast`; 1 is
    /// `LZ4_compress_default`): it looks for matches less hard and gives up sooner on bytes
    /// that do not compress. Readers do not care: the block format is the same. At 4 the
    /// log grows only a little and compressing costs much less; at 8 the log grows more (see
    /// `Benchmarks/RESULTS.md`, "Measurements behind the code").
    static let acceleration: Int32 = 4

    /// The acceleration for an input of `length` bytes: a smaller one is compressed at 1,
    /// where the time is small anyway, so the writer still makes the sample files'
    /// bytes (`Formats/samples/`, whose records are all smaller).
    static func acceleration(forLength length: Int) -> Int32 {
        length >= 4096 ? acceleration : 1
    }

    /// `input` compressed, after `headroom` zero bytes, or `nil` when it does not get
    /// shorter (or is too large). The output is not zeroed first: LZ4 writes every byte
    /// counted.
    static func compress(_ input: [UInt8], headroom: Int = 0, acceleration: Int32? = nil) -> [UInt8]? {
        guard !input.isEmpty, input.count <= maximumInputSize, headroom >= 0 else { return nil }
        let bound = Int(LZ4_compressBound(Int32(input.count)))
        guard bound > 0 else { return nil }
        var written: Int32 = 0
        let output = input.withUnsafeBytes { source in
            [UInt8](unsafeUninitializedCapacity: headroom + bound) { destination, initialized in
                guard let base = destination.baseAddress else { return }
                base.initialize(repeating: 0, count: headroom)
                written = LZ4_compress_fast(
                    source.baseAddress?.assumingMemoryBound(to: CChar.self),
                    UnsafeMutableRawPointer(base + headroom).assumingMemoryBound(to: CChar.self),
                    Int32(input.count), Int32(bound), acceleration ?? Self.acceleration(forLength: input.count))
                initialized = headroom + Int(max(0, written))
            }
        }
        guard written > 0, Int(written) < input.count else { return nil }
        return output
    }

    /// Compresses many small inputs one after another, each on its own (a version 5 block's
    /// writes, `Formats/log.md`), with one LZ4 stream reset before each input
    /// (`LZ4_resetStream_fast`): `LZ4_compress_fast` would clear its 16 KiB of state for
    /// every write instead. Not for use by two threads at once.
    package final class Stream {
        private let stream: OpaquePointer?
        /// Writes in a row that did not get shorter, for its user's skipping
        /// (``LogBlocks/missesBeforeSkipping``).
        var misses = 0

        package init() { stream = OpaquePointer(LZ4_createStream()) }

        deinit { if let stream { LZ4_freeStream(UnsafeMutablePointer(stream)) } }

        /// Appends `input` compressed (acceleration 1) to `output` and returns `true`, or
        /// appends nothing and returns `false` when it would not be shorter.
        func compress(_ input: UnsafeRawBufferPointer, appendingTo output: inout [UInt8]) -> Bool {
            guard let stream, let source = input.baseAddress, input.count < maximumInputSize else { return false }
            let lz4 = UnsafeMutablePointer<LZ4_stream_t>(stream)
            LZ4_resetStream_fast(lz4)
            // Only a shorter result is kept: LZ4 stops (returns 0) once the output would not be.
            let capacity = input.count - 1
            guard capacity > 0 else { return false }
            let start = output.count
            output.reserveCapacity(start + capacity)
            var written: Int32 = 0
            output.append(contentsOf: repeatElement(0, count: capacity))
            output.withUnsafeMutableBytes { destination in
                guard let base = destination.baseAddress else { return }
                written = LZ4_compress_fast_continue(
                    lz4, source.assumingMemoryBound(to: CChar.self),
                    (base + start).assumingMemoryBound(to: CChar.self), Int32(input.count), Int32(capacity), 1)
            }
            output.removeLast(capacity - Int(max(0, written)))
            return written > 0
        }
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
