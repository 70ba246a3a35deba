import Foundation

/// The one walk over a log file's records after its preamble, in file order
/// (`Formats/log.md`, "Record framing" and "Opening and recovery"). The store's open, its
/// replay of a prefix it has checked, `LogStore.recordOffsets` and the `stowage` tool's
/// scanner all read a log through it, so that what counts as a valid record, and what each
/// kind of damage is called, is written once.
///
/// Each record is checked by ``LogFormat/readRecord(_:_:at:fileSize:salt:)`` (frame,
/// lengths, checksum, LZ4 bytes), then its type against the file's format version (a
/// checkpoint only from version 3 on, never a second header record), and a commit of a
/// version that locates records (4 and later) must be stored raw. The first record that
/// fails, or that its reader rejects (``reject(_:_:)``: its payload does not decode), ends
/// the walk: ``offset`` is then the end of the valid prefix, and the damage goes to the
/// walk's problem sink. The store's sink throws there for strict recovery and lets the
/// walk stop for point-in-time recovery; the tool's sink keeps the problem beside the ones
/// its own checks find.
package struct LogRecordWalk {
    /// A record that passed every check the walk makes.
    package struct Record {
        package enum Kind: Sendable {
            case commit
            case checkpoint
            /// A layout record (version 6): the schema the records after it are written in.
            case layout
            /// A history record (version 6): transactions a compaction kept, or removed ones.
            case history
        }

        package let kind: Kind
        /// Where the record's frame starts.
        package let offset: Int64
        /// The payload, decompressed if it was stored compressed.
        package let payload: [UInt8]
        /// Where the next record starts.
        package let next: Int64

        /// The bytes the record takes in the file, frame included.
        package var recordLength: Int64 { next - offset }
        /// The payload's bytes as stored after the frame.
        package var storedLength: Int64 { next - offset - Int64(LogFormat.frameSize) }
        /// Whether the payload was stored LZ4-compressed.
        package var isStoredCompressed: Bool { storedLength != Int64(payload.count) }
    }

    /// Where damage goes: called once, with the offset the valid prefix ends at and the
    /// reason. Throwing ends the walk with that error.
    package typealias ProblemSink = (_ offset: Int64, _ reason: String) throws -> Void

    private let fs: any StoreFileSystem
    private let fd: Int32
    private let fileSize: Int64
    private let salt: UInt64
    private let sink: ProblemSink
    /// The file's format version, which decides the record types it may hold.
    package let version: LogFormatVersion
    /// Where the next record starts; once the walk has ended, the end of the valid prefix.
    package private(set) var offset: Int64
    /// What ended the walk early, if anything did.
    package private(set) var damage: String?

    /// A walk over the records of the file open at `fd` (its size `fileSize`) after its
    /// preamble.
    package init(
        _ fs: any StoreFileSystem, _ fd: Int32, fileSize: Int64, preamble: LogPreamble,
        problems sink: @escaping ProblemSink
    ) {
        self.init(
            fs, fd, fileSize: fileSize, salt: preamble.header.salt, version: preamble.header.version,
            from: preamble.commitsStart, problems: sink)
    }

    /// A walk over the records from `start`, the start of a record, of a file whose header
    /// gives `salt` and `version`.
    package init(
        _ fs: any StoreFileSystem, _ fd: Int32, fileSize: Int64, salt: UInt64, version: LogFormatVersion,
        from start: Int64, problems sink: @escaping ProblemSink
    ) {
        self.fs = fs
        self.fd = fd
        self.fileSize = fileSize
        self.salt = salt
        self.version = version
        self.offset = start
        self.sink = sink
    }

    /// The next record, checked; `nil` at the end of the log, or once damage has ended the
    /// walk.
    /// - Throws: the file system's error when a read fails, or the sink's.
    package mutating func next() throws -> Record? {
        guard damage == nil else { return nil }
        switch try LogFormat.readRecord(fs, fd, at: offset, fileSize: fileSize, salt: salt) {
        case .end:
            return nil
        case .damaged(let reason):
            try fail(reason)
            return nil
        case .record(let type, let payload, let next):
            guard let kind = try kind(of: type, payload: payload, next: next) else { return nil }
            let record = Record(kind: kind, offset: offset, payload: payload, next: next)
            offset = next
            return record
        }
    }

    /// What a record of `type` is in a file of this version, or `nil` (after reporting
    /// why) when it may not be there.
    private mutating func kind(of type: LogFormat.RecordType, payload: [UInt8], next: Int64) throws
        -> Record.Kind?
    {
        switch type {
        case .commit:
            let stored = next - offset - Int64(LogFormat.frameSize)
            if version.locatesRecords, stored != Int64(payload.count) {
                try fail(
                    "the version \(version) commit at offset \(offset) is compressed as a whole (a version "
                        + "\(version) commit record is stored raw; its blocks are compressed instead)")
                return nil
            }
            return .commit
        case .checkpoint where version.hasCheckpoints:
            return .checkpoint
        case .checkpoint:
            try fail(
                "a checkpoint record (type 3) at offset \(offset): format version \(version) has no checkpoints")
            return nil
        case .layout where version.hasLayoutRecords:
            return .layout
        case .layout:
            try fail("a layout record (type 4) at offset \(offset): format version \(version) has no layout records")
            return nil
        case .history where version.keepsHistory:
            return .history
        case .history:
            try fail("a history record (type 5) at offset \(offset): format version \(version) has no history records")
            return nil
        case .header:
            try fail(
                "a second header record at offset \(offset), where only commits "
                    + (version.hasCheckpoints ? "and checkpoints " : "") + "may follow the header")
            return nil
        }
    }

    /// Passes over the record at ``offset``, which ends at `next`, without reading it: one
    /// the caller has read and checked by other means (the checkpoint opening prefetched).
    mutating func skip(to next: Int64) {
        precondition(damage == nil && next > offset, "a walk skips forward, over a whole record")
        offset = next
    }

    /// Ends the walk at `record`, the last one ``next()`` returned, which failed a check of
    /// the caller's (its payload does not decode): the valid prefix ends where it starts.
    /// - Throws: the sink's error.
    package mutating func reject(_ record: Record, _ reason: String) throws {
        offset = record.offset
        try fail(reason)
    }

    private mutating func fail(_ reason: String) throws {
        damage = reason
        try sink(offset, reason)
    }
}

extension LogRecordWalk.Record {
    /// The commit this record holds.
    /// - Throws: the reason it is damage, naming the record and, in a version that keeps
    ///   blocks, the first block that fails a check.
    package func decodeCommit(map: LogEntityMap) throws(LogRecordWalk.Rejection) -> LogCommit {
        do {
            return try LogCodec.decodeCommit(payload, map: map, recordOffset: offset)
        } catch {
            let block =
                map.formatVersion.locatesRecords
                ? LogBlocks.firstBadBlock(inCommit: payload, recordOffset: offset, map: map) : nil
            throw LogRecordWalk.Rejection(
                "the commit at offset \(offset) does not decode: "
                    + (block.map { "its block at offset \($0.offset): \($0.reason)" } ?? "\(error)"))
        }
    }

    /// What the commit this record holds adds up to, without decoding its writes.
    /// - Throws: the reason it is damage.
    func decodeCommitSummary(map: LogEntityMap) throws(LogRecordWalk.Rejection) -> LogCodec.CommitSummary {
        do {
            return try LogCodec.decodeCommitSummary(payload, map: map)
        } catch {
            throw LogRecordWalk.Rejection("the commit at offset \(offset) does not decode: \(error)")
        }
    }

    /// The checkpoint this record holds, against the file's stored schema.
    /// - Throws: the reason it is damage.
    package func decodeCheckpoint(schema: StoredSchema, version: LogFormatVersion, fileSize: Int64)
        throws(LogRecordWalk.Rejection) -> LogCheckpoint
    {
        do {
            return try LogCheckpoint.decode(payload, schema: schema, formatVersion: version, fileSize: fileSize)
        } catch {
            throw LogRecordWalk.Rejection("the checkpoint at offset \(offset) does not decode: \(error)")
        }
    }
}

extension LogRecordWalk {
    /// Why a record that passed the walk's checks is damage all the same: its payload does
    /// not decode. The reason is what ``reject(_:_:)`` reports.
    package struct Rejection: Error, CustomStringConvertible {
        package let reason: String
        package init(_ reason: String) { self.reason = reason }
        package var description: String { reason }
    }
}
