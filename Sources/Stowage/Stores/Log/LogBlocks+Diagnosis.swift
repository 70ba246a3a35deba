import Foundation

extension LogBlocks {
    /// The first block of a version 4 commit payload that fails a check (header, lengths,
    /// checksum, LZ4, contents), with its file offset; `nil` when the blocks are whole or
    /// the commit does not decode before its blocks.
    static func firstBadBlock(inCommit payload: [UInt8], recordOffset: Int64, map: LogEntityMap) -> (
        offset: Int64, reason: String
    )? {
        var r = LogByteReader(payload)
        do {
            _ = try r.varint()
            _ = try r.zigzag()
            if try r.u8() == 1 { _ = try r.string() }
            _ = try r.zigzag()
            for _ in 0..<(try r.count(minimumSize: 2)) {
                _ = try r.varint()
                _ = try r.zigzag()
            }
            _ = try r.count(minimumSize: 4)
        } catch {
            return nil
        }
        while !r.isAtEnd {
            let start = r.position
            let offset = recordOffset + Int64(LogFormat.frameSize + start)
            do {
                let header = try LogBlocks.header(
                    r.bytes[start...], available: r.remaining - LogBlocks.headerSize, version: map.formatVersion)
                let headerBytes = try r.bytes(LogBlocks.headerSize)
                let stored = try r.bytes(header.storedLength)
                let (contents, ends) = try LogBlocks.contents(header, headerBytes: headerBytes, stored: stored)
                // The writes: a kind byte and a snapshot each, to the end of the contents
                // (in version 5 each to the end its block's table gives it).
                var block = LogByteReader(contents)
                var references: [LogExternalReference] = []
                for i in 0..<header.writes {
                    let kind = try block.u8()
                    guard kind <= 1 else { return (offset, "bad write kind \(kind)") }
                    _ = try LogCodec.decodeSnapshot(&block, map: map, externalReferences: &references)
                    if let ends, block.position != ends[i] {
                        return (offset, "write \(i) ends at byte \(block.position), its table says \(ends[i])")
                    }
                }
                guard block.isAtEnd else { return (offset, "\(block.remaining) bytes after its last write") }
            } catch {
                return (offset, "\(error)")
            }
        }
        return nil
    }
}
