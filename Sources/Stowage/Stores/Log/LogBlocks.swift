import Foundation

/// The blocks of a version 4 commit record (`Formats/log.md`, "Commit record"): runs of
/// writes, each compressed and checksummed on its own, so that one record can be read
/// back by location without the rest of its commit.
enum LogBlocks {
    static let headerSize = 16
    /// A writer closes a block once its contents reach this many bytes.
    static let targetBytes = 16 << 10
    static let maximumWrites = RecordLocation.slotsPerBlock

    /// A block's header, checked.
    struct Header {
        var storedLength: Int
        var uncompressedLength: Int
        var writes: Int
        var compressed: Bool
        var checksum: UInt32
    }

    /// Appends a block holding `writes` writes whose uncompressed bytes are `contents`.
    static func append(_ contents: [UInt8], writes: Int, to w: inout LogByteWriter) {
        var stored = contents
        var flags: UInt8 = 0
        if contents.count >= LogFormat.compressionThreshold, let compressed = LZ4Block.compress(contents) {
            stored = compressed
            flags = 1
        }
        var header = LogByteWriter(capacity: headerSize)
        header.u32(UInt32(stored.count))
        header.u32(UInt32(contents.count))
        header.u16(UInt16(writes))
        header.u8(flags)
        header.u8(0)
        let crc = CRC32C.update(CRC32C.update(0, header.bytes), stored)
        header.u32(CRC32C.mask(crc))
        w.bytes.append(contentsOf: header.bytes)
        w.bytes.append(contentsOf: stored)
    }

    /// Checks a block header's fields (not its checksum); `available` is the number of
    /// bytes after the header that the block may take.
    static func header(_ bytes: ArraySlice<UInt8>, available: Int) throws -> Header {
        guard bytes.count >= headerSize else { throw LogDecodeError("a block header is cut short") }
        let base = bytes.startIndex
        func u32(_ at: Int) -> UInt32 {
            UInt32(bytes[base + at]) | UInt32(bytes[base + at + 1]) << 8 | UInt32(bytes[base + at + 2]) << 16
                | UInt32(bytes[base + at + 3]) << 24
        }
        let storedLength = Int(u32(0))
        let uncompressedLength = Int(u32(4))
        let writes = Int(bytes[base + 8]) | Int(bytes[base + 9]) << 8
        let flags = bytes[base + 10]
        guard flags & ~1 == 0, bytes[base + 11] == 0 else { throw LogDecodeError("a block has unknown flags") }
        guard writes >= 1, writes <= maximumWrites else { throw LogDecodeError("a block of \(writes) writes") }
        guard storedLength <= available, storedLength <= LogFormat.maximumPayload else {
            throw LogDecodeError("a block's length \(storedLength) runs past its record")
        }
        let compressed = flags & 1 != 0
        if compressed {
            guard storedLength > 0,
                uncompressedLength <= min(LogFormat.maximumPayload, storedLength * 255)
            else { throw LogDecodeError("a block's impossible uncompressed length \(uncompressedLength)") }
        } else {
            guard uncompressedLength == storedLength else { throw LogDecodeError("a raw block's lengths disagree") }
        }
        return Header(
            storedLength: storedLength, uncompressedLength: uncompressedLength, writes: writes,
            compressed: compressed, checksum: CRC32C.unmask(u32(12)))
    }

    /// A block's uncompressed contents, after checking its checksum. `headerBytes` are
    /// the block's 16 header bytes, `stored` the bytes after them.
    static func contents(_ header: Header, headerBytes: ArraySlice<UInt8>, stored: ArraySlice<UInt8>) throws
        -> [UInt8]
    {
        let crc = CRC32C.update(CRC32C.update(0, headerBytes.prefix(12)), stored)
        guard crc == header.checksum else { throw LogDecodeError("a block's checksum does not match") }
        guard header.compressed else { return Array(stored) }
        guard let bytes = LZ4Block.decompress(Array(stored), length: header.uncompressedLength) else {
            throw LogDecodeError("a block's LZ4 bytes do not decompress")
        }
        return bytes
    }
}

extension LogCodec {
    /// Appends the writes of a version 4 commit as blocks; returns, for each block, where
    /// its header starts in `w` and how many writes it holds.
    static func encodeBlocks(
        _ commit: LogCommit, into w: inout LogByteWriter, map: LogEntityMap,
        external: ((Int, Int) -> LogExternalReference?)?
    ) throws -> [(offset: Int, writes: Int, bytes: Int)] {
        var blocks: [(offset: Int, writes: Int, bytes: Int)] = []
        var contents = LogByteWriter(capacity: LogBlocks.targetBytes + 1024)
        var pending = 0
        func flush() {
            guard pending > 0 else { return }
            blocks.append((w.bytes.count, pending, contents.bytes.count))
            LogBlocks.append(contents.bytes, writes: pending, to: &w)
            contents.bytes.removeAll(keepingCapacity: true)
            pending = 0
        }
        w.varint(commit.writes.count)
        for (position, write) in commit.writes.enumerated() {
            contents.u8(write.isInsert ? 0 : 1)
            try encodeSnapshot(
                write.snapshot, key: write.key, entity: write.entity, into: &contents, map: map,
                external: external.map { lookup in { lookup(position, $0) } })
            pending += 1
            if contents.bytes.count >= LogBlocks.targetBytes || pending == LogBlocks.maximumWrites { flush() }
        }
        flush()
        return blocks
    }
}
