import Foundation

/// The blocks of a version 4 or 5 commit record (`Formats/log.md`, "Commit record"): runs
/// of writes, each block checksummed on its own, so that one record can be read back by
/// location without the rest of its commit; in version 4 each block is compressed as a
/// whole, in version 5 each write on its own, so that reading one decompresses only it.
package enum LogBlocks {
    package static let headerSize = 16
    /// A writer closes a block once its contents reach this many bytes, unless the store is
    /// configured otherwise (``LogStoreConfiguration/blockBytes``).
    static let targetBytes = 4 << 10
    /// The block sizes a store may be configured with.
    static let targetRange = 1024...(1 << 20)
    static let maximumWrites = RecordLocation.slotsPerBlock
    /// A version 5 block's writes are compressed one by one, and a write that LZ4 cannot
    /// shorten (random bytes, data compressed already) costs as much to try as one it can:
    /// once this many writes of a commit in a row did not get shorter, a writer tries only
    /// every ``probeInterval``-th write after them, until one compresses again: records
    /// that do not compress (the benchmark's random notes) then spend little in LZ4. The
    /// count runs on across the commit's blocks: counted per block, every block's first
    /// writes would be tried, a large share of all writes with small blocks (see
    /// `Benchmarks/RESULTS.md`, "Measurements behind the code"). Readers do not care which
    /// writes were tried.
    static let missesBeforeSkipping = 8
    /// See ``missesBeforeSkipping``.
    static let probeInterval = 16

    /// A block's header, checked.
    package struct Header {
        package var storedLength: Int
        package var uncompressedLength: Int
        package var writes: Int
        /// Version 4: the stored bytes are one LZ4 block.
        package var compressed: Bool
        /// Version 5: the stored bytes are a table, then each write on its own (``Table``).
        package var perWrite: Bool
        package var checksum: UInt32
    }

    /// A version 5 block's table, checked: where each write's stored bytes start, counted
    /// from the end of the table, and the length of a compressed write (0 for a raw one).
    package struct Table {
        /// Where the table ends (and the first write starts) in the stored bytes.
        package var end: Int
        package var starts: [Int32]
        /// Empty when no write is compressed.
        package var lengths: [Int32]
    }

    /// Appends a block holding `writes` writes whose uncompressed bytes are `contents`,
    /// the write at position `i` starting at `starts[i]`: in version 5 each write on its own
    /// (compressed with `stream`), before that as one block.
    package static func append(
        _ contents: [UInt8], starts: [Int32], version: LogFormatVersion, stream: LZ4Block.Stream,
        to w: inout LogByteWriter
    ) {
        var stored: [UInt8]
        var flags: UInt8 = 0
        if version.compressesEachWrite {
            flags = 2
            var table = LogByteWriter(capacity: starts.count * 3)
            var body: [UInt8] = []
            body.reserveCapacity(contents.count)
            // Writes worth compressing that did not get shorter, in a row, counted in the
            // stream across the commit's blocks: after `missesBeforeSkipping` of them only
            // every `probeInterval`-th is tried, until one compresses again
            // (``missesBeforeSkipping``).
            var misses = stream.misses
            defer { stream.misses = misses }
            contents.withUnsafeBytes { raw in
                for (i, start) in starts.enumerated() {
                    let end = i + 1 < starts.count ? Int(starts[i + 1]) : contents.count
                    let write = UnsafeRawBufferPointer(rebasing: raw[Int(start)..<end])
                    let before = body.count
                    let worth = write.count >= LogFormat.compressionThreshold
                    let tried =
                        worth && (misses < missesBeforeSkipping || (misses - missesBeforeSkipping) % probeInterval == 0)
                    if tried, stream.compress(write, appendingTo: &body) {
                        misses = 0
                        table.varint(UInt64(body.count - before) << 1 | 1)
                        table.varint(write.count)
                    } else {
                        if worth { misses += 1 }
                        table.varint(UInt64(write.count) << 1)
                        body.append(contentsOf: write)
                    }
                }
            }
            stored = table.bytes
            stored.append(contentsOf: body)
        } else {
            stored = contents
            if contents.count >= LogFormat.compressionThreshold, let compressed = LZ4Block.compress(contents) {
                stored = compressed
                flags = 1
            }
        }
        var header = LogByteWriter(capacity: headerSize)
        header.u32(UInt32(stored.count))
        header.u32(UInt32(contents.count))
        header.u16(UInt16(starts.count))
        header.u8(flags)
        header.u8(0)
        let crc = CRC32C.update(CRC32C.update(0, header.bytes), stored)
        header.u32(CRC32C.mask(crc))
        w.bytes.append(contentsOf: header.bytes)
        w.bytes.append(contentsOf: stored)
    }

    /// Checks a block header's fields (not its checksum) for a file of format `version`;
    /// `available` is the number of bytes after the header that the block may take.
    package static func header(_ bytes: ArraySlice<UInt8>, available: Int, version: LogFormatVersion) throws -> Header {
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
        let flagsAllowed = version.compressesEachWrite ? flags == 2 : flags & ~1 == 0
        guard flagsAllowed, bytes[base + 11] == 0 else {
            throw LogDecodeError("a block has unknown flags \(flags) for format version \(version)")
        }
        guard writes >= 1, writes <= maximumWrites else { throw LogDecodeError("a block of \(writes) writes") }
        guard storedLength <= available, storedLength <= LogFormat.maximumPayload else {
            throw LogDecodeError("a block's length \(storedLength) runs past its record")
        }
        let compressed = flags & 1 != 0
        let perWrite = flags & 2 != 0
        if compressed || perWrite {
            guard storedLength >= (perWrite ? writes : 1),
                uncompressedLength <= min(LogFormat.maximumPayload, storedLength * 255)
            else { throw LogDecodeError("a block's impossible uncompressed length \(uncompressedLength)") }
        } else {
            guard uncompressedLength == storedLength else { throw LogDecodeError("a raw block's lengths disagree") }
        }
        return Header(
            storedLength: storedLength, uncompressedLength: uncompressedLength, writes: writes,
            compressed: compressed, perWrite: perWrite, checksum: CRC32C.unmask(u32(12)))
    }

    /// Checks a block's checksum. `headerBytes` are the block's 16 header bytes, `stored`
    /// the bytes after them.
    static func checkChecksum(_ header: Header, headerBytes: ArraySlice<UInt8>, stored: ArraySlice<UInt8>)
        throws
    {
        try stored.withUnsafeBytes { try checkChecksum(header, headerBytes: headerBytes, stored: $0) }
    }

    /// ``checkChecksum(_:headerBytes:stored:)`` of bytes anywhere in memory (a mapping of the file).
    static func checkChecksum(_ header: Header, headerBytes: ArraySlice<UInt8>, stored: UnsafeRawBufferPointer)
        throws
    {
        let crc = CRC32C.update(CRC32C.update(0, headerBytes.prefix(12)), stored)
        guard crc == header.checksum else { throw LogDecodeError("a block's checksum does not match") }
    }

    /// Reads and checks a version 5 block's table from its `stored` bytes: the entries
    /// and the writes end the stored bytes exactly, and the writes' lengths add up to the
    /// header's uncompressed length.
    package static func table(_ header: Header, stored: ArraySlice<UInt8>) throws -> Table {
        try stored.withUnsafeBytes { try table(header, stored: $0) }
    }

    /// ``table(_:stored:)`` from bytes anywhere in memory (a mapping of the file).
    static func table(_ header: Header, stored: UnsafeRawBufferPointer) throws -> Table {
        guard header.perWrite, stored.count == header.storedLength else {
            throw LogDecodeError("a block without a table of writes")
        }
        var storedLengths: [Int] = []
        storedLengths.reserveCapacity(header.writes)
        var lengths: [Int32] = []
        var total = 0
        var body = 0
        let end = try { (raw: UnsafeRawBufferPointer) in
            var s = LogSkipper(raw)
            for i in 0..<header.writes {
                let entry = try s.varint()
                guard entry >> 1 >= 1, entry >> 1 <= UInt64(raw.count) else {
                    throw LogDecodeError("write \(i)'s stored length \(entry >> 1) does not fit its block")
                }
                let writeStored = Int(entry >> 1)
                var length = writeStored
                if entry & 1 == 1 {
                    let v = try s.varint()
                    // No more than the block's own uncompressed length (which its header
                    // check bounds), so that it fits the table's 32-bit lengths.
                    guard v >= 1, v <= UInt64(writeStored) * 255, v <= UInt64(header.uncompressedLength) else {
                        throw LogDecodeError("write \(i)'s impossible uncompressed length \(v)")
                    }
                    length = Int(v)
                    if lengths.isEmpty { lengths = Array(repeating: 0, count: header.writes) }
                    lengths[i] = Int32(length)
                }
                storedLengths.append(writeStored)
                body += writeStored
                total += length
            }
            return s.position
        }(stored)
        guard end + body == stored.count else {
            throw LogDecodeError("a block's table and writes take \(end + body) bytes, it stores \(stored.count)")
        }
        guard total == header.uncompressedLength else {
            throw LogDecodeError(
                "a block's writes come to \(total) bytes, its header says \(header.uncompressedLength)")
        }
        var starts: [Int32] = []
        starts.reserveCapacity(header.writes)
        var at = 0
        for length in storedLengths {
            starts.append(Int32(at))
            at += length
        }
        return Table(end: end, starts: starts, lengths: lengths)
    }

    /// A block's uncompressed contents, after checking its checksum (and in version 5 its
    /// table), and in version 5 where each write ends in them, which a write must decode to
    /// exactly (`nil` before version 5, whose writes are only known by decoding them).
    /// `headerBytes` are the block's 16 header bytes, `stored` the bytes after them.
    package static func contents(_ header: Header, headerBytes: ArraySlice<UInt8>, stored: ArraySlice<UInt8>) throws
        -> (bytes: [UInt8], writeEnds: [Int]?)
    {
        try checkChecksum(header, headerBytes: headerBytes, stored: stored)
        if header.perWrite {
            let table = try table(header, stored: stored)
            let body = stored.dropFirst(table.end)
            var contents: [UInt8] = []
            contents.reserveCapacity(header.uncompressedLength)
            var ends: [Int] = []
            ends.reserveCapacity(header.writes)
            for i in 0..<header.writes {
                let start = body.startIndex + Int(table.starts[i])
                let end = i + 1 < header.writes ? body.startIndex + Int(table.starts[i + 1]) : body.endIndex
                let length = table.lengths.isEmpty ? 0 : Int(table.lengths[i])
                if length == 0 {
                    contents.append(contentsOf: body[start..<end])
                } else {
                    guard
                        let bytes = body[start..<end].withUnsafeBytes({ LZ4Block.decompress($0, length: length) })
                    else { throw LogDecodeError("write \(i)'s LZ4 bytes do not decompress") }
                    contents.append(contentsOf: bytes)
                }
                ends.append(contents.count)
            }
            return (contents, ends)
        }
        guard header.compressed else { return (Array(stored), nil) }
        guard let bytes = stored.withUnsafeBytes({ LZ4Block.decompress($0, length: header.uncompressedLength) }) else {
            throw LogDecodeError("a block's LZ4 bytes do not decompress")
        }
        return (bytes, nil)
    }
}
