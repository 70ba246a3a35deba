import Foundation
import Stowage

// The `stowage` command-line tool's view of a store file: everything read from the file
// itself (no model types), for `inspect`, `verify`, `dump`, `history`, `recover` and
// `compact`. The tool (Sources/stowage) formats and prints it; the reading, checking and
// rewriting live here, beside the store code they reuse.

/// Which kind of store a file holds, told by its first bytes.
package enum ToolStoreFormat: String, Sendable {
    /// A `LogStore` file (`Formats/log.md`): it starts with the magic `STOWLOG\0`.
    case log
    /// A `JSONStore` document (`Formats/json.md`).
    case json
}

/// Why the tool could not do what it was asked: the message is for the user, as is.
package struct ToolFailure: Error, CustomStringConvertible, Sendable {
    package enum Kind: Sendable {
        /// The file is not a Stowage store (or is empty, or missing).
        case notAStore
        /// The store is open in another process (its lock is held).
        case locked
        /// The store is damaged in a way the command cannot work around.
        case damaged
        /// A file operation failed.
        case io
    }

    package let kind: Kind
    package let message: String

    package init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    package var description: String { message }
}

/// The schema as the file stores it.
package struct ToolSchema: Sendable, Equatable {
    package struct Property: Sendable, Equatable {
        package var name: String
        /// The Swift type's name, without `Optional`, as the file stores it.
        package var typeName: String
        package var isOptional: Bool
        /// The destination entity, for a relationship.
        package var destination: String?
        /// For a relationship: to-many (`true`) or to-one.
        package var isToMany: Bool
        /// Declared `.externalStorage` (format version 2 records it).
        package var isExternal: Bool = false

        package var isRelationship: Bool { destination != nil }
    }

    package struct Entity: Sendable, Equatable {
        package var name: String
        package var properties: [Property]
        /// Uniqueness constraints (`@Attribute(.unique)`, `#Unique`), as property names.
        package var unique: [[String]]
        /// `#Index` groups, as property names.
        package var indexes: [[String]]
        /// The entity it inherits from (model inheritance; log format version 7, JSON
        /// format version 3 record it).
        package var superentity: String? = nil
    }

    /// `major.minor.patch`.
    package var version: String
    /// In the file's order (for a log file, records refer to entities by this position).
    package var entities: [Entity]

    package func entity(named name: String) -> Entity? { entities.first { $0.name == name } }

    init(_ description: StoredSchema) {
        version = description.version.map(String.init).joined(separator: ".")
        entities = description.entities.map { entity in
            Entity(
                name: entity.name,
                properties: entity.properties.map { p in
                    Property(
                        name: p.name, typeName: p.typeName, isOptional: p.flags & 1 != 0,
                        destination: p.flags & 2 != 0 ? (p.destination ?? "") : nil, isToMany: p.flags & 6 == 2,
                        isExternal: p.isExternal)
                },
                unique: entity.uniqueness, indexes: entity.indices, superentity: entity.superentity)
        }
    }
}

/// One live record: its primary key and its values in the entity's property order.
package struct ToolRecord: Sendable, Equatable {
    package var key: Int64
    package var values: [SnapshotValue]
    /// For a log file: the offset of the commit record that wrote this version.
    package var offset: Int64?
    /// For a version 4 log file: where this version is (its block and slot).
    package var location: RecordLocation? = nil
    /// Values kept outside the log (format version 2, `.externalStorage`), by property
    /// position; their slot in `values` is `.null`.
    package var external: [Int: ToolExternalValue] = [:]
}

/// A value kept in a file of its own beside a log (`<file>.blobs/<name>`).
package struct ToolExternalValue: Sendable, Equatable {
    /// The file's name inside `<file>.blobs/`.
    package var fileName: String
    package var byteCount: UInt64
    /// CRC32C of the bytes, unmasked.
    package var checksum: UInt32
    var reference: LogExternalReference
}

/// One problem that `verify` found.
package struct ToolProblem: Sendable, Equatable {
    /// Where in the file: a byte offset (a log record's start, or the byte a JSON syntax
    /// error is at), when there is one.
    package var offset: Int64?
    package var message: String
}

/// One commit of a log file, for `history` and `inspect`.
package struct ToolCommit: Sendable, Equatable {
    package var offset: Int64
    /// Frame and stored payload: the bytes the record takes in the file.
    package var recordLength: Int64
    package var payloadLength: Int64
    package var isCompressed: Bool
    package var transactionID: UInt64
    /// Milliseconds since 1970-01-01 UTC.
    package var timestamp: Int64
    package var author: String?
    package var inserts: Int
    package var updates: Int
    package var deletes: Int
    package var nextPrimaryKey: Int64
    /// Version 4: the blocks its writes are in, and how many of them are LZ4-compressed.
    package var blocks: Int = 0
    package var compressedBlocks: Int = 0
}

/// A stretch of a log file, for `inspect --map`.
package struct ToolRegion: Sendable, Equatable {
    package enum Kind: String, Sendable {
        /// The file header and the header record.
        case header
        /// Bytes that hold live record versions (or a commit's share of them).
        case live
        /// Bytes that hold only superseded or deleted versions.
        case dead
        /// A checkpoint record (format versions 3 and 4): the last one is live, every earlier one
        /// dead (its `deadLength` is its length).
        case checkpoint
        /// Bytes after the valid prefix: a torn or damaged tail.
        case damaged
        /// Zero bytes after the last record that a writer reserved (`Formats/log.md`,
        /// "Writing"): the end of the log, not damage.
        case reserved
    }

    package var offset: Int64
    package var length: Int64
    package var kind: Kind
    /// For a commit that holds live versions: how many of its bytes are dead; for a
    /// superseded checkpoint, all of them.
    package var deadLength: Int64 = 0
}

/// What a log file's header and commits say, beyond the records.
package struct ToolLogDetails: Sendable {
    package var formatVersion: Int
    package var salt: UInt64
    package var generation: UInt64
    /// Where the commits start: the end of the header record.
    package var dataStart: Int64
    /// The length of the valid prefix.
    package var validLength: Int64
    package var commits: [ToolCommit]
    /// Checkpoint records (format versions 3 and 4).
    package var checkpoints: Int
    /// Layout records (format version 6), and their offsets.
    package var layouts: [Int64] = []
    /// History records (format version 6).
    package var historyRecords = 0
    /// The last of them: the one whose bytes are live.
    package var lastCheckpoint: ToolCheckpoint? = nil
    package var liveBytes: Int64
    package var deadBytes: Int64
    /// Record versions (writes) no longer current, and delete entries.
    package var deadVersions: Int
    /// Sum of every record's payload before and after compression.
    package var payloadBytes: Int64
    package var storedPayloadBytes: Int64
    package var regions: [ToolRegion]
}

/// A store file as the tool reads it.
package struct ToolStore: Sendable {
    package var path: String
    package var format: ToolStoreFormat
    package var formatVersion: Int
    package var fileSize: Int64
    /// `nil` when the file is damaged before its schema (a log's header, a JSON syntax error).
    package var schema: ToolSchema?
    package var storeIdentifier: String?
    /// Milliseconds since 1970 (log store only).
    package var createdAt: Int64?
    package var nextPrimaryKey: Int64
    /// Live records by entity name, in primary-key order.
    package var records: [String: [ToolRecord]]
    package var log: ToolLogDetails?
    /// The first thing wrong with the file's framing or syntax, which stopped reading:
    /// everything above describes the valid part before it.
    package var damage: ToolProblem?
    /// Problems found in records that were read: values that do not fit the schema, and
    /// the like. `verify` adds the checks across records (references, uniqueness).
    package var problems: [ToolProblem]
    /// For a JSON document: where the damage is, as line and column.
    package var damageLine: (line: Int, column: Int)?
    /// The store's history as `fetchHistory` reads it, oldest first: a log's commits and
    /// history records, a JSON document's `history` member; `nil` when the store keeps none
    /// (a JSON document of version 1) or it does not read (one of ``problems`` says why).
    package var history: [HistoryEntry]?

    package var recordCount: Int { records.values.reduce(0) { $0 + $1.count } }

    /// For a log file, its format version, which says what the file can hold
    /// (``LogFormatVersion``); `nil` for a JSON store.
    package var logVersion: LogFormatVersion? {
        format == .log ? LogFormatVersion(rawValue: UInt16(clamping: formatVersion)) : nil
    }
}

// MARK: - Opening

extension ToolStore {
    /// Reads the file at `path` without changing it.
    /// - Throws: ``ToolFailure`` `.notAStore` for a missing, empty or foreign file, `.io`.
    package static func read(path: String) throws(ToolFailure) -> ToolStore {
        let file = try ToolFile.openForReading(path)
        defer { file.close() }
        switch try detect(file, path: path) {
        case .log: return try LogFileScanner.scan(file, path: path)
        case .json: return try JSONFileReader.read(file, path: path)
        }
    }

    /// The store's kind, from its first bytes.
    static func detect(_ file: ToolFile, path: String) throws(ToolFailure) -> ToolStoreFormat {
        let size = file.size
        if size == 0 {
            throw ToolFailure(
                .notAStore, "\(path) is empty (0 bytes): it is neither a Stowage log store nor a JSON store")
        }
        let first = try file.read(count: Int(min(size, 4096)), at: 0)
        let magic = LogFormat.magic
        let prefix = min(first.count, magic.count)
        if Array(first[0..<prefix]) == Array(magic[0..<prefix]) {
            if case .failure(.wrongFormat(let reason)) = LogFormat.decodeFileHeader(first, fileSize: size) {
                throw ToolFailure(.notAStore, "\(path) is not a log store this tool reads: \(reason)")
            }
            return .log
        }
        var position = 0
        if first.starts(with: [0xEF, 0xBB, 0xBF]) { position = 3 }
        while position < first.count, [0x20, 0x09, 0x0A, 0x0D].contains(first[position]) { position += 1 }
        if position < first.count, first[position] == UInt8(ascii: "{") {
            // Any JSON object that names the format is taken for a JSON store, so that one
            // that no longer parses is reported as a damaged store, with where it breaks.
            let whole = try file.read(count: Int(min(size, Int64(JSONFileReader.maximumSize))), at: 0)
            if whole.firstRange(of: Array("\"stowage-json\"".utf8)) != nil { return .json }
            throw ToolFailure(
                .notAStore,
                "\(path) is not a Stowage store: it is a JSON document without \"format\": \"stowage-json\"")
        }
        throw ToolFailure(
            .notAStore,
            "\(path) is not a Stowage store: it starts with \(LogFormat.describeStart(first)), neither the log "
                + "magic (\"STOWLOG\" and a zero byte) nor a stowage-json document")
    }

    /// The file's format alone, for commands that go on differently by format.
    package static func format(ofFileAt path: String) throws(ToolFailure) -> ToolStoreFormat {
        let file = try ToolFile.openForReading(path)
        defer { file.close() }
        return try detect(file, path: path)
    }
}

// MARK: - Formatting helpers for the tool

/// Renders values as `Formats/json.md` maps them.
package enum ToolJSON {
    /// A value as one line of JSON, in the JSON store's value mapping (tagged forms for
    /// dates, UUIDs, data and so on; relationships as primary keys when `relationship`
    /// names the destination).
    package static func text(_ value: SnapshotValue, destination: String? = nil) -> String {
        var w = JSONWriter()
        if let destination {
            writeRelationship(value, destination: destination, &w)
        } else {
            JSONValueCodec.write(value, to: &w)
        }
        return compact(w.bytes)
    }

    /// A string as a JSON string literal.
    package static func quote(_ string: String) -> String {
        var w = JSONWriter()
        w.string(string)
        return String(decoding: w.bytes, as: UTF8.self)
    }

    /// A finite double as the JSON store writes it; non-finite ones as a string.
    package static func number(_ value: Double) -> String {
        value.isFinite ? value.description : quote(value.isNaN ? "nan" : (value < 0 ? "-inf" : "inf"))
    }

    private static func writeRelationship(_ value: SnapshotValue, destination: String, _ w: inout JSONWriter) {
        switch value {
        case .identifier(let id) where id.entityName == destination && id.primaryKey != nil:
            w.int(id.primaryKey ?? 0)
        case .array(let items):
            w.beginArray()
            for item in items { writeRelationship(item, destination: destination, &w) }
            w.endArray()
        default:
            JSONValueCodec.write(value, to: &w)
        }
    }

    /// The pretty-printed writer's output on one line: the newline and indentation
    /// between tokens removed, a space kept after each comma. (The writer escapes every
    /// newline inside a string, so a raw newline is always between tokens.)
    private static func compact(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var i = 0
        while i < bytes.count {
            if bytes[i] == 0x0A {
                i += 1
                while i < bytes.count, bytes[i] == 0x20 { i += 1 }
                if out.last == UInt8(ascii: ",") { out.append(0x20) }
                continue
            }
            out.append(bytes[i])
            i += 1
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Milliseconds since 1970 as ISO 8601 in UTC, with milliseconds: `2026-01-01T00:00:00.000Z`.
    package static func time(milliseconds: Int64) -> String {
        let (days, rest) = milliseconds.quotientAndRemainder(dividingBy: 86_400_000)
        let dayCount = rest < 0 ? days - 1 : days
        let ms = rest < 0 ? rest + 86_400_000 : rest
        let (y, m, d) = JSONDates.civil(fromDays: dayCount)
        func pad(_ v: Int64, _ width: Int) -> String {
            let s = String(v)
            return String(repeating: "0", count: max(0, width - s.count)) + s
        }
        return "\(pad(y, 4))-\(pad(m, 2))-\(pad(d, 2))T\(pad(ms / 3_600_000, 2)):\(pad(ms / 60_000 % 60, 2)):"
            + "\(pad(ms / 1000 % 60, 2)).\(pad(ms % 1000, 3))Z"
    }
}
