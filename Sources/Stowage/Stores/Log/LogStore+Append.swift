import Foundation

// Appending records to the file: whole, or in pieces with the frame last, and the
// reserved zero tail ahead of the last record (`Formats/log.md`, "Writing").
extension LogStore {
    /// Writes one record at the end of the valid prefix. Syncing is the caller's business.
    /// On failure the file is cut back to the prefix, and the in-memory state is unchanged.
    func append(_ w: inout WriterState, type: LogFormat.RecordType, payload: [UInt8]) throws {
        guard payload.count <= LogFormat.maximumPayload else {
            throw DataStoreError(
                .unsupportedFeature, "a record of \(payload.count) bytes is larger than a log record can be")
        }
        try append(&w, type: type, record: LogFormat.frame(type: type, payload: payload, salt: w.salt, offset: w.end))
    }

    /// Writes one framed record (framed for `w.end`), as ``append(_:type:payload:)`` does.
    func append(_ w: inout WriterState, type: LogFormat.RecordType, record: [UInt8]) throws {
        guard record.count - LogFormat.frameSize <= LogFormat.maximumPayload else {
            throw DataStoreError(
                .unsupportedFeature,
                "a record of \(record.count - LogFormat.frameSize) bytes is larger than a log record can be")
        }
        let recordEnd = w.end + Int64(record.count)
        // A record that runs past the reserved zeros extends the file: reserve again after
        // it, so that the next saves' syncs find the file's size unchanged. The zeros go
        // first: if either write fails and so does the truncate, the file holds zeros or a
        // torn record after the valid prefix, never a whole record of a failed save.
        let reserve =
            recordEnd > max(w.fileSize, w.end)
            ? Self.reservation(after: recordEnd, most: configuration.reservedTail) : 0
        do {
            try writeZeros(w.fd, count: reserve, at: recordEnd)
            try fs.write(w.fd, record, at: w.end)
        } catch {
            cutBack(&w, to: w.end)
            throw DataStoreError(
                .ioFailure, "writing a \(type) record at offset \(w.end) of \(path) failed; nothing was saved",
                underlying: error)
        }
        w.end = recordEnd
        w.fileSize = max(w.fileSize, recordEnd + reserve)
    }

    /// Writes the pieces of a large record of `type` that starts at `start` (`Formats/log.md`,
    /// "Large commits"), each at its place after the frame's room; `started` says whether
    /// any piece was written, so that a failure cuts the file back.
    func pieces(of type: LogFormat.RecordType, fd: Int32, at start: Int64) -> (
        spill: LogCommitSpill, started: () -> Bool
    ) {
        var started = false
        let (fs, path) = (fs, path)
        let spill = LogCommitSpill(threshold: configuration.commitChunkBytes) { bytes, at in
            guard at + bytes.count - LogFormat.frameSize <= LogFormat.maximumPayload else {
                throw DataStoreError(.unsupportedFeature, "a \(type) of this size is larger than a log record can be")
            }
            started = true
            do {
                try fs.write(fd, bytes, at: start + Int64(at))
            } catch {
                throw DataStoreError(
                    .ioFailure, "writing a \(type) record at offset \(start) of \(path) failed; nothing was saved",
                    underlying: error)
            }
        }
        return (spill, { started })
    }

    /// Finishes a commit whose first `spilled` bytes are in the file already: its reserved
    /// zeros if it grows the file, the rest of its bytes, then its frame at `w.end`, so that
    /// the record is valid only once every byte of it is written.
    func appendSpilled(
        _ w: inout WriterState, type: LogFormat.RecordType = .commit, spilled: Int, tail: [UInt8], frame: [UInt8]
    ) throws {
        let start = w.end
        let recordEnd = start + Int64(spilled + tail.count)
        guard recordEnd - start - Int64(LogFormat.frameSize) <= Int64(LogFormat.maximumPayload) else {
            cutBack(&w, to: start)
            throw DataStoreError(.unsupportedFeature, "a \(type) of this size is larger than a log record can be")
        }
        let reserve =
            recordEnd > max(w.fileSize, w.end)
            ? Self.reservation(after: recordEnd, most: configuration.reservedTail) : 0
        do {
            try writeZeros(w.fd, count: reserve, at: recordEnd)
            if !tail.isEmpty { try fs.write(w.fd, tail, at: start + Int64(spilled)) }
            try fs.write(w.fd, frame, at: start)
        } catch {
            cutBack(&w, to: start)
            throw DataStoreError(
                .ioFailure, "writing a \(type) record at offset \(start) of \(path) failed; nothing was saved",
                underlying: error)
        }
        w.end = recordEnd
        w.fileSize = max(w.fileSize, recordEnd + reserve)
    }

    /// Zero bytes to write from, shared by every store: making a new array of up to 1 MiB
    /// of zeros each time a save grew the file cost a fresh allocation, its page faults and
    /// its `memset` (see `Benchmarks/RESULTS.md`, "Measurements behind the code").
    private static let zeros = [UInt8](repeating: 0, count: 64 << 10)

    /// Writes `count` zero bytes at `offset`, in writes of at most 64 KiB.
    func writeZeros(_ fd: Int32, count: Int64, at offset: Int64) throws {
        var done: Int64 = 0
        while done < count {
            let n = Int(min(count - done, Int64(Self.zeros.count)))
            try fs.write(fd, n == Self.zeros.count ? Self.zeros : Array(Self.zeros[..<n]), at: offset + done)
            done += Int64(n)
        }
    }

    /// Cuts the file back to `offset` after a failed write; if that fails too, the store
    /// refuses further saves (the next open's recovery cuts the torn bytes).
    func cutBack(_ w: inout WriterState, to offset: Int64) {
        do {
            try fs.truncate(w.fd, to: offset)
            w.fileSize = offset
        } catch {
            w.unusable = "a failed write could not be cut back off the end of the file (\(error))"
        }
    }

    /// How many zero bytes to reserve after a record that ends the file at `end`: an eighth
    /// of the file, at least 4 KiB and at most `most`, so that a small store stays small
    /// when its program exits without closing it.
    static func reservation(after end: Int64, most: Int) -> Int64 {
        guard most > 0 else { return 0 }
        return min(Int64(most), max(4096, end / 8))
    }
}
