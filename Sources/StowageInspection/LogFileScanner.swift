import Foundation
import Stowage

/// Reads a whole log file record by record through the store's own walk
/// (``LogRecordWalk``: framing, lengths, checksum, LZ4, record types by format version) and
/// decoder (``LogCodec``), without opening the store: nothing is locked, truncated or
/// written. It folds the commits into the live records, as opening does, and keeps
/// what `inspect`, `history` and `verify` show. Damage ends the walk, as it ends the
/// store's; the checks only the tool makes (checkpoints against the records before them,
/// transaction order, values against their types) are problems it collects and goes on.
///
/// Checkpoint records (format versions 3 and later) are decoded against the stored schema
/// and compared with the records the commits before them leave
/// (``ToolVerifier/checkpointProblems(_:at:expected:schema:blobs:)``); what disagrees is
/// a problem at the checkpoint's offset.
///
/// Version 4 and later commits hold their writes in blocks: every block's header, checksum
/// and LZ4 bytes are checked as the commit is decoded, and each write's location (its
/// block's offset and its slot) is kept, for the checkpoints' key directories.
///
/// Live and dead bytes: a commit record none of whose writes is still the current version
/// of a live record is dead in full (frame included). A commit that still holds a live
/// version is live, except for the share of its bytes (frame included, rounded down) that
/// its superseded writes and its delete entries take up in its uncompressed payload (in
/// version 4 and later, the payload with its blocks decompressed). The last checkpoint is
/// live, every earlier one dead (`Formats/log.md`). The file header and the header record
/// count as live. Bytes after the valid prefix count as neither.
enum LogFileScanner {
    /// What compaction needs besides the store view.
    struct Extras {
        var description: StoredSchema
        var map: LogEntityMap
        var lastTransaction: UInt64
    }

    static func scan(_ file: ToolFile, path: String) throws(ToolFailure) -> ToolStore {
        try scanWithExtras(file, path: path).store
    }

    static func scanWithExtras(_ file: ToolFile, path: String) throws(ToolFailure) -> (
        store: ToolStore, extras: Extras?
    ) {
        let size = file.size
        let first = try file.read(count: LogFormat.fileHeaderSize, at: 0)
        let formatVersion = first.count >= 10 ? Int(first[8]) | Int(first[9]) << 8 : 0
        var store = ToolStore(
            path: path, format: .log, formatVersion: formatVersion, fileSize: size, schema: nil, storeIdentifier: nil,
            createdAt: nil, nextPrimaryKey: 1, records: [:], log: nil, damage: nil, problems: [])
        let preamble: LogPreamble
        let preambleRead: Result<LogPreamble, LogPreamble.Problem>
        do {
            preambleRead = try LogPreamble.read(file.fs, file.fd, fileSize: size)
        } catch {
            throw ToolFailure(.io, "\(path): reading the file header failed: \(error)")
        }
        switch preambleRead {
        case .success(let found): preamble = found
        case .failure(.wrongFormat(let reason)):
            throw ToolFailure(.notAStore, "\(path) is not a log store this tool reads: \(reason)")
        case .failure(.damaged(let offset, let reason, let header)):
            store.damage = ToolProblem(
                offset: offset, message: header == nil ? "the file header is damaged: \(reason)" : reason)
            store.log = details(
                formatVersion: formatVersion, salt: header?.salt ?? 0, generation: header?.generation ?? 0,
                dataStart: header == nil ? 0 : Int64(LogFormat.fileHeaderSize),
                validLength: header == nil ? 0 : Int64(LogFormat.fileHeaderSize), size: size)
            return (store, nil)
        }
        store.storeIdentifier = preamble.storeIdentifier
        store.createdAt = preamble.createdAt
        // Every layout (format version 6) is read from the frames first: each commit is
        // decoded in its own and shown in the last. Damage before a layout record takes it
        // away: the walk then runs again with the layouts before the damage.
        var limit = size
        while true {
            var layouts = LogLayouts(preamble: preamble)
            if preamble.header.version.hasLayoutRecords {
                do {
                    layouts = try LogLayouts.scan(file.fs, file.fd, preamble: preamble, fileSize: limit).layouts
                } catch {
                    throw ToolFailure(.io, "\(path): reading the record frames failed: \(error)")
                }
            }
            let (scan, end, damage) = try walk(file, path: path, preamble: preamble, layouts: layouts, store: store)
            if end < layouts.last.start, end < limit {
                limit = end
                continue
            }
            var result = scan.finish(validLength: end, damage: damage)
            // The history as `fetchHistory` reads it, from the same valid prefix.
            do {
                result.store.history = try LogHistory.entries(file.fs, file.fd, end: end, path: path)
            } catch {
                result.store.problems.append(ToolProblem(offset: nil, message: "the history does not read: \(error)"))
            }
            return result
        }
    }

    /// Walks every record, each commit decoded in its own layout of `layouts`: the scan, where
    /// the valid prefix ends, and the damage that ended it.
    private static func walk(
        _ file: ToolFile, path: String, preamble: LogPreamble, layouts: LogLayouts, store: ToolStore
    ) throws(ToolFailure) -> (LogScan, Int64, ToolProblem?) {
        let size = file.size
        var scan = LogScan(preamble: preamble, layouts: layouts, store: store, path: path, fileSize: size)
        var damage: ToolProblem?
        var records = LogRecordWalk(file.fs, file.fd, fileSize: size, preamble: preamble) { offset, reason in
            damage = ToolProblem(offset: offset, message: reason)
        }
        while let record = try next(&records, path: path) {
            do throws(LogRecordWalk.Rejection) {
                switch record.kind {
                case .checkpoint:
                    scan.add(
                        try record.decodeCheckpoint(
                            schema: layouts.last.schema, version: scan.map.formatVersion, fileSize: size),
                        record)
                case .commit:
                    scan.add(
                        layouts.converted(
                            try record.decodeCommit(map: layouts.map(at: record.offset)), at: record.offset),
                        record)
                case .layout:
                    // The frames' scan stops at a layout record that does not decode.
                    guard layouts.layouts.contains(where: { $0.start == record.next }) else {
                        throw LogRecordWalk.Rejection(
                            "the layout record at offset \(record.offset) does not decode against the layout "
                                + "before it")
                    }
                    scan.add(layout: record)
                case .history:
                    scan.add(history: record)
                }
            } catch {
                do {
                    try records.reject(record, error.reason)
                } catch {
                    // The sink above does not throw.
                }
            }
        }
        return (scan, records.offset, damage)
    }

    /// The walk's next record; a failed read is an I/O failure of the tool.
    private static func next(_ records: inout LogRecordWalk, path: String) throws(ToolFailure) -> LogRecordWalk.Record?
    {
        do {
            return try records.next()
        } catch {
            throw ToolFailure(.io, "\(path): reading the record at offset \(records.offset) failed: \(error)")
        }
    }

    /// The blocks of a decoded version 4 or 5 commit, found from its writes' locations: how
    /// many, how many hold LZ4 bytes (version 4: the block is compressed; version 5: at
    /// least one of its writes is), and their stored and uncompressed bytes.
    static func blockSizes(
        _ locations: [RecordLocation], payload: [UInt8], recordOffset: Int64, version: LogFormatVersion
    ) -> (count: Int, compressed: Int, stored: Int64, uncompressed: Int64) {
        var result = (count: 0, compressed: 0, stored: Int64(0), uncompressed: Int64(0))
        var previous: Int64 = -1
        for location in locations where location.blockOffset != previous {
            previous = location.blockOffset
            let start = Int(location.blockOffset - recordOffset) - LogFormat.frameSize
            guard start >= 0, start < payload.count,
                let header = try? LogBlocks.header(
                    payload[start...], available: payload.count - start - LogBlocks.headerSize, version: version)
            else { continue }
            result.count += 1
            if header.compressed { result.compressed += 1 }
            let storedStart = start + LogBlocks.headerSize
            if header.perWrite, storedStart + header.storedLength <= payload.count,
                let table = try? LogBlocks.table(
                    header, stored: payload[storedStart..<storedStart + header.storedLength]),
                !table.lengths.isEmpty
            {
                result.compressed += 1
            }
            result.stored += Int64(header.storedLength)
            result.uncompressed += Int64(header.uncompressedLength)
        }
        return result
    }

    static func details(
        formatVersion: Int, salt: UInt64, generation: UInt64, dataStart: Int64, validLength: Int64, size: Int64
    ) -> ToolLogDetails {
        ToolLogDetails(
            formatVersion: formatVersion, salt: salt, generation: generation, dataStart: dataStart,
            validLength: validLength, commits: [], checkpoints: 0, liveBytes: validLength, deadBytes: 0,
            deadVersions: 0, payloadBytes: 0, storedPayloadBytes: 0,
            regions: (validLength > 0 ? [ToolRegion(offset: 0, length: validLength, kind: .header)] : [])
                + (size > validLength
                    ? [ToolRegion(offset: validLength, length: size - validLength, kind: .damaged)] : []))
    }
}
