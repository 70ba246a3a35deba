import Foundation

extension LogCodec {
    /// Appends the writes of a version 4 commit as blocks; returns each block. The
    /// contents of the last blocks, up to `keepContents` bytes, are kept for the cache.
    /// With `spill`, the bytes of `w` (after `headroom` bytes kept for the frame) go to it
    /// whenever they pass its threshold, and `spilled` counts them.
    static func encodeBlocks(
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
    static func writeStarts(_ contents: [UInt8], writes: Int) throws -> [Int32] {
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
