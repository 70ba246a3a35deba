import Foundation

/// A commit record's payload, and for version 4 and later its blocks.
///
/// A version 4 or 5 payload is encoded after room for the record frame, which ``record(salt:offset:)``
/// fills in place: a large save's bytes are not copied into a second buffer.
package struct LogEncodedCommit {
    /// The payload, after `headroom` bytes kept for the frame; once part of the record was
    /// spilled to the file, the bytes after that part.
    package var bytes: [UInt8]
    var headroom: Int
    /// Version 4: each block as encoded (offsets counted from the record's start, frame
    /// room included).
    package var blocks: [LogEncodedBlock]
    package var formatVersion: LogFormatVersion
    /// What went to the file while encoding (``LogCommitSpill``); nothing unless asked.
    var spilled = LogSpilled()

    /// For a commit part of which was spilled: the rest of its bytes, to write after the
    /// spilled ones, and its frame, to write last, at the record's start, with the
    /// checksum over the whole payload. The record is `spilled.count + tail.count` bytes.
    func finishSpilled(salt: UInt64, offset: Int64) -> (tail: [UInt8], frame: [UInt8]) {
        (bytes, spilled.frame(type: .commit, tail: bytes, headroom: headroom, salt: salt, offset: offset))
    }

    /// The payload alone.
    package var payload: [UInt8] { headroom == 0 ? bytes : Array(bytes[headroom...]) }

    /// The framed record, to be written at `offset`. A version 4 or 5 commit is raw: its
    /// blocks (version 5: their writes) are compressed instead, and their locations follow from `offset`.
    package func record(salt: UInt64, offset: Int64) -> [UInt8] {
        var copy = self
        return copy.takeRecord(salt: salt, offset: offset)
    }

    /// The framed record, as ``record(salt:offset:)``, framed in the payload's own buffer,
    /// which this value gives up (its blocks stay, for their locations).
    mutating func takeRecord(salt: UInt64, offset: Int64) -> [UInt8] {
        guard formatVersion.locatesRecords, headroom == LogFormat.frameSize else {
            return LogFormat.frame(
                type: .commit, payload: payload, salt: salt, offset: offset, compress: !formatVersion.locatesRecords)
        }
        var record: [UInt8] = []
        swap(&record, &bytes)
        LogFormat.fillFrame(
            &record, type: .commit, flags: 0, payloadLength: record.count - headroom, salt: salt, offset: offset)
        return record
    }

    /// Where block offsets in `bytes` land in the file once the record is at `offset`.
    private func fileOffset(_ block: LogEncodedBlock, recordOffset offset: Int64) -> Int64 {
        offset + Int64(LogFormat.frameSize - headroom + block.offset)
    }

    /// Where each write is once the record is at `offset`, in write order (versions 4 and 5).
    package func locations(recordOffset offset: Int64) -> [RecordLocation] {
        var result: [RecordLocation] = []
        result.reserveCapacity(blocks.reduce(0) { $0 + $1.writes })
        for block in blocks {
            let start = fileOffset(block, recordOffset: offset)
            for slot in 0..<block.writes { result.append(RecordLocation(blockOffset: start, slot: slot)) }
        }
        return result
    }

    /// The blocks whose contents were kept, at their file offsets once the record is at
    /// `offset`, with the snapshots of their writes (`writes`, in write order): for the
    /// record cache.
    func cachedBlocks(
        recordOffset offset: Int64, writes: SaveWrites
    ) -> [(
        offset: Int64, block: CachedBlock
    )] {
        var result: [(offset: Int64, block: CachedBlock)] = []
        var first = 0
        for block in blocks {
            defer { first += block.writes }
            guard let length = block.keptLength, first + block.writes <= writes.count else { continue }
            result.append(
                (
                    fileOffset(block, recordOffset: offset),
                    CachedBlock(
                        length: length, slots: block.slots,
                        decoded: writes.snapshots[first..<first + block.writes].map { $0 })
                ))
        }
        return result
    }
}

/// One block of a commit as encoded: where its header is in the payload, its writes, each
/// write's start in its uncompressed bytes, and (for the last blocks, up to a budget, which
/// the cache takes with the writes decoded) the number of those bytes.
package struct LogEncodedBlock {
    package var offset: Int
    package var writes: Int
    var keptLength: Int?
    package var slots: [Int32]
}
