import Foundation

/// A stretch of the log read ahead of a scan that reads blocks in file order past the
/// cache: one `pread` of up to ``stretch`` bytes instead of two for each block. Reading a
/// block at a time was a large part of such a scan, most of it in the system calls (see
/// `Benchmarks/RESULTS.md`, "Measurements behind the code").
///
/// A block read is taken to continue a scan when it starts at most ``gap`` bytes after the
/// end of the block read before it (a commit's frame lies between its last block and the
/// next commit's first). Random reads (point fetches) seldom do, and read one block as
/// before. The stretch is held outside the cache's capacity, and dropped at every save.
struct ReadAhead {
    /// The most bytes read ahead at once.
    static let stretch = 256 << 10
    /// How far past the previous block a read may start and still continue a scan.
    static let gap: Int64 = 4 << 10

    /// Where ``bytes`` start in the file.
    private(set) var start: Int64 = 0
    /// Internal, not private, so that tests can alter what was read.
    var bytes: [UInt8] = []
    /// Where the block read last ends, or -1.
    private var lastEnd: Int64 = -1
    /// Reads made of the file for blocks.
    var fileReads = 0

    /// Whether a read of the block at `offset` continues a scan.
    func follows(_ offset: Int64) -> Bool { lastEnd >= 0 && offset >= lastEnd && offset - lastEnd <= Self.gap }

    mutating func fill(at offset: Int64, _ read: [UInt8]) {
        fileReads += 1
        start = offset
        bytes = read
    }

    /// Notes that the block read last ends at `end`.
    mutating func noteRead(endingAt end: Int64) { lastEnd = end }

    /// Forgets the bytes and the scan.
    mutating func drop() {
        bytes = []
        lastEnd = -1
    }

    /// The block at `offset` parsed from the bytes read ahead, noted as the block read
    /// last; `nil` when they do not hold all of it, or it does not check out from them.
    mutating func take(
        at offset: Int64, parse: (ArraySlice<UInt8>) throws -> (block: CachedBlock, length: Int)?
    ) -> CachedBlock? {
        guard offset >= start, offset - start + Int64(LogBlocks.headerSize) <= Int64(bytes.count) else { return nil }
        let from = Int(offset - start)
        guard let parsed = try? parse(bytes[from...]) else { return nil }
        noteRead(endingAt: offset + Int64(parsed.length))
        return parsed.block
    }
}
