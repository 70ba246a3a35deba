import Foundation

/// Where a large commit's bytes go while it is encoded: once `threshold` bytes are held,
/// `write` puts them in the file at their position in the record (counted from the
/// record's start, frame included), ahead of the frame, which is written last. A commit of
/// a million rows so never sits whole in memory.
package struct LogCommitSpill {
    var threshold: Int
    package var write: ([UInt8], Int) throws -> Void
}

/// What a commit's encoding wrote through its ``LogCommitSpill``: the bytes, counted from
/// the record's start, and the CRC32C of the payload bytes among them.
package struct LogSpilled {
    package var count = 0
    var payloadCRC: UInt32 = 0

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
