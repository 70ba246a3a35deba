import Foundation

/// The blocks of a version 4 or 5 commit record (`Formats/log.md`, "Commit record"): runs
/// of writes, each block checksummed on its own, so that one record can be read back by
/// location without the rest of its commit; in version 4 each block is compressed as a
/// whole, in version 5 each write on its own, so that reading one decompresses only it.
package enum LogBlocks {
    package static let headerSize = 16
    /// A writer closes a block once its contents reach this many bytes, unless the store is
    /// configured otherwise (``LogStoreConfiguration/blockBytes``).
    package static let targetBytes = 4 << 10
    /// The block sizes a store may be configured with.
    package static let targetRange = 1024...(1 << 20)
    package static let maximumWrites = RecordLocation.slotsPerBlock
    /// A version 5 block's writes are compressed one by one, and a write that LZ4 cannot
    /// shorten (random bytes, data compressed already) costs as much to try as one it can:
    /// once this many writes of a commit in a row did not get shorter, a writer tries only
    /// every ``probeInterval``-th write after them, until one compresses again. The
    /// benchmark's records (random notes) spent 2.3k instructions an update in LZ4 when
    /// every write was tried. The count runs on across the commit's blocks (it ran per
    /// block until the fourteenth session: with 4 KiB blocks of about 25 writes, 8 of each
    /// block's first writes were tried, and 38% of all). Readers do not care which writes
    /// were tried.
    package static let missesBeforeSkipping = 8
    /// See ``missesBeforeSkipping``.
    package static let probeInterval = 16

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
    package static func checkChecksum(_ header: Header, headerBytes: ArraySlice<UInt8>, stored: ArraySlice<UInt8>)
        throws
    {
        let crc = CRC32C.update(CRC32C.update(0, headerBytes.prefix(12)), stored)
        guard crc == header.checksum else { throw LogDecodeError("a block's checksum does not match") }
    }

    /// Reads and checks a version 5 block's table from its `stored` bytes: the entries
    /// and the writes end the stored bytes exactly, and the writes' lengths add up to the
    /// header's uncompressed length.
    package static func table(_ header: Header, stored: ArraySlice<UInt8>) throws -> Table {
        guard header.perWrite, stored.count == header.storedLength else {
            throw LogDecodeError("a block without a table of writes")
        }
        var storedLengths: [Int] = []
        storedLengths.reserveCapacity(header.writes)
        var lengths: [Int32] = []
        var total = 0
        var body = 0
        let end = try stored.withUnsafeBytes { raw in
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
        }
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

/// One block of a commit as encoded: where its header is in the payload, its writes, each
/// write's start in its uncompressed bytes, and (for the last blocks, up to a budget, which
/// the cache takes with the writes decoded) the number of those bytes.
package struct LogEncodedBlock {
    package var offset: Int
    package var writes: Int
    package var keptLength: Int?
    package var slots: [Int32]
}

/// Where a large commit's bytes go while it is encoded: once `threshold` bytes are held,
/// `write` puts them in the file at their position in the record (counted from the
/// record's start, frame included), ahead of the frame, which is written last. A commit of
/// a million rows so never sits whole in memory.
package struct LogCommitSpill {
    package var threshold: Int
    package var write: ([UInt8], Int) throws -> Void
}

/// What a commit's encoding wrote through its ``LogCommitSpill``: the bytes, counted from
/// the record's start, and the CRC32C of the payload bytes among them.
package struct LogSpilled {
    package var count = 0
    package var payloadCRC: UInt32 = 0

    /// Counts a piece written after the others, whose first `headroom` bytes, counted from
    /// the record's start, are the frame's room and not payload.
    package mutating func add(_ piece: [UInt8], headroom: Int) {
        let payloadStart = min(piece.count, max(0, headroom - count))
        payloadCRC = piece.withUnsafeBytes {
            CRC32C.update(payloadCRC, UnsafeRawBufferPointer(rebasing: $0[payloadStart...]))
        }
        count += piece.count
    }

    /// The frame of a record of `type` whose pieces these were, and whose last bytes,
    /// `tail`, follow them, at `offset` (raw: flag bit 0 clear).
    package func frame(type: LogFormat.RecordType, tail: [UInt8], headroom: Int, salt: UInt64, offset: Int64) -> [UInt8]
    {
        let payloadLength = count - headroom + tail.count
        let crc = CRC32C.combine(payloadCRC, CRC32C.checksum(tail), lengthB: tail.count)
        return LogFormat.frameBytes(
            type: type, flags: 0, storedCount: payloadLength, payloadLength: payloadLength, salt: salt,
            offset: offset, storedCRC: crc, storedLength: payloadLength)
    }
}

extension LogCodec {
    /// Appends the writes of a version 4 commit as blocks; returns each block. The
    /// contents of the last blocks, up to `keepContents` bytes, are kept for the cache.
    /// With `spill`, the bytes of `w` (after `headroom` bytes kept for the frame) go to it
    /// whenever they pass its threshold, and `spilled` counts them.
    package static func encodeBlocks(
        _ commit: LogCommit, into w: inout LogByteWriter, map: LogEntityMap,
        external: ((Int, Int) -> LogExternalReference?)?, keepContents: Int, headroom: Int = 0,
        spill: LogCommitSpill? = nil, spilled: inout LogSpilled, blockBytes: Int = LogBlocks.targetBytes
    ) throws -> [LogEncodedBlock] {
        var blocks: [LogEncodedBlock] = []
        let target = min(max(blockBytes, LogBlocks.targetRange.lowerBound), LogBlocks.targetRange.upperBound)
        var contents = LogByteWriter(capacity: target + 1024)
        var slots: [Int32] = []
        var pending = 0
        var kept = 0
        var firstKept = 0
        let stream = LZ4Block.Stream()
        func flush() throws {
            guard pending > 0 else { return }
            let keep = contents.bytes.count <= keepContents
            blocks.append(
                LogEncodedBlock(
                    offset: spilled.count + w.bytes.count, writes: pending,
                    keptLength: keep ? contents.bytes.count : nil, slots: slots))
            if keep {
                kept += contents.bytes.count
                while kept > keepContents, firstKept < blocks.count {
                    kept -= blocks[firstKept].keptLength ?? 0
                    blocks[firstKept].keptLength = nil
                    firstKept += 1
                }
            }
            LogBlocks.append(contents.bytes, starts: slots, version: map.formatVersion, stream: stream, to: &w)
            contents.bytes.removeAll(keepingCapacity: true)
            slots.removeAll(keepingCapacity: true)
            pending = 0
            if let spill, w.bytes.count >= spill.threshold {
                try spill.write(w.bytes, spilled.count)
                // The frame's room, at the start of the first piece, is not payload.
                spilled.add(w.bytes, headroom: headroom)
                w.bytes.removeAll(keepingCapacity: true)
            }
        }
        w.varint(commit.writes.count)
        // Writes come in runs of one entity: its index is looked up once a run, not by
        // hashing its name for every write.
        var run: (entity: String, index: Int)?
        for (position, write) in commit.writes.enumerated() {
            slots.append(Int32(contents.bytes.count))
            contents.u8(write.isInsert ? 0 : 1)
            let index: Int
            if let run, run.entity == write.entity {
                index = run.index
            } else {
                index = try entityIndex(write.entity, map)
                run = (write.entity, index)
            }
            try encodeSnapshot(
                write.snapshot, key: write.key, entity: write.entity, into: &contents, map: map,
                external: external.map { lookup in { lookup(position, $0) } }, entityIndex: index)
            pending += 1
            if contents.bytes.count >= target || pending == LogBlocks.maximumWrites { try flush() }
        }
        try flush()
        return blocks
    }
}

extension LogCodec {
    /// Where each of a block's `writes` writes (`u8 kind, snapshot`) starts in its
    /// uncompressed `contents`, found by moving past each without decoding it; the writes
    /// must end the contents exactly. Only lengths are checked (decoding a write checks the
    /// rest), so that no length leads a read past the end.
    ///
    /// It reads the bytes through a pointer with every step inlined: reading a block back
    /// for one record spent most of its time here when each byte went through
    /// ``LogByteReader`` (a call, an array bounds check and an error path per byte).
    package static func writeStarts(_ contents: [UInt8], writes: Int) throws -> [Int32] {
        var starts: [Int32] = []
        starts.reserveCapacity(writes)
        try contents.withUnsafeBytes { raw in
            var s = LogSkipper(raw)
            for _ in 0..<writes {
                starts.append(Int32(truncatingIfNeeded: s.position))
                guard try s.u8() <= 1 else { throw LogDecodeError("bad write kind") }
                _ = try s.varint()
                _ = try s.varint()
                let count = try s.count()
                for _ in 0..<count { try s.skipValue(depth: 0) }
            }
            guard s.position == raw.count else {
                throw LogDecodeError("\(raw.count - s.position) bytes after its last write")
            }
        }
        return starts
    }
}

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
    package mutating func skip(_ count: Int) throws {
        guard count >= 0, count <= bytes.count - position else {
            throw LogDecodeError("length \(count) exceeds the payload")
        }
        position &+= count
    }

    /// Moves past one value.
    package mutating func skipValue(depth: Int) throws {
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
