import Foundation

/// A layout record's contents (`Formats/log.md`, "Layout record", format version 6): the
/// schema the records after it are written in, and where each of its values comes from in
/// a record of the layout before it.
package struct LogLayoutRecord: Sendable {
    package var schema: StoredSchema
    /// How a record of the previous layout becomes one of this layout, by entity name; an
    /// entity new here has none.
    var step: SchemaConversion

    /// The layout record for a change from `previous` to `live` (the container's schema,
    /// described) that `conversion` makes, when a layout record can make it: `nil` when
    /// the change needs a rewrite (indexes, uniqueness, external storage, a dropped entity).
    /// The new layout keeps the previous one's entities at their indexes and adds the
    /// container's new ones after them.
    static func make(from previous: StoredSchema, to live: StoredSchema, conversion: SchemaConversion) -> Self? {
        guard conversion.droppedEntities.isEmpty else { return nil }
        let byName = Dictionary(live.entities.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        var entities: [StoredSchema.Entity] = []
        for old in previous.entities {
            guard let new = byName[old.name], new.uniqueness == old.uniqueness, new.indices == old.indices else {
                return nil
            }
            let sources = conversion.entities[old.name] ?? new.properties.indices.map { .stored($0) }
            guard sources.count == new.properties.count else { return nil }
            // External values keep their positions, and none is added: their files are
            // named by position.
            let oldExternal = old.properties.indices.filter { old.properties[$0].isExternal }
            let newExternal = new.properties.indices.filter { new.properties[$0].isExternal }
            guard oldExternal == newExternal else { return nil }
            for position in newExternal {
                guard case .stored(let from) = sources[position], from == position else { return nil }
            }
            entities.append(new)
        }
        let kept = Set(previous.entities.map(\.name))
        entities += live.entities.filter { !kept.contains($0.name) }
        var step = conversion
        step.droppedEntities = []
        return LogLayoutRecord(schema: StoredSchema(version: live.version, entities: entities), step: step)
    }

    /// The record's payload.
    func encode(map: LogEntityMap) throws -> [UInt8] {
        var w = LogByteWriter()
        schema.encode(into: &w, formatVersion: map.formatVersion)
        let previousCount = map.names.count
        for (i, entity) in schema.entities.enumerated() {
            guard i < previousCount else {
                w.varint(0)
                continue
            }
            w.varint(i + 1)
            let sources = step.entities[entity.name] ?? entity.properties.indices.map { .stored($0) }
            for source in sources {
                switch source {
                case .stored(let position): w.varint(position + 1)
                case .value(let value):
                    w.varint(0)
                    try LogCodec.encodeValue(value, into: &w, map: map)
                }
            }
        }
        return w.bytes
    }

    /// Reads a layout record's payload, written after the layout `previous` (whose entity
    /// map is `map`), checking every rule of the format.
    static func decode(_ payload: [UInt8], previous: StoredSchema, map: LogEntityMap) throws -> Self {
        var r = LogByteReader(payload)
        let schema = try StoredSchema.decode(from: &r, formatVersion: map.formatVersion)
        guard schema.entities.count >= previous.entities.count else {
            throw LogDecodeError(
                "it lists \(schema.entities.count) entities, fewer than the \(previous.entities.count) before it")
        }
        var step = SchemaConversion()
        for (i, entity) in schema.entities.enumerated() {
            let origin = try r.varint()
            guard i < previous.entities.count else {
                guard origin == 0 else { throw LogDecodeError("entity \(entity.name) is new but names an origin") }
                continue
            }
            let old = previous.entities[i]
            guard origin == UInt64(i + 1), old.name == entity.name else {
                throw LogDecodeError(
                    "entity \(i) (\(entity.name)) is not entity \(i) (\(old.name)) of the layout before")
            }
            guard old.uniqueness == entity.uniqueness, old.indices == entity.indices else {
                throw LogDecodeError("\(entity.name)'s uniqueness constraints or indexes changed")
            }
            var sources: [SchemaConversion.Source] = []
            var used = Set<Int>()
            for property in entity.properties {
                let code = try r.varint()
                if code == 0 {
                    sources.append(.value(try LogCodec.decodeValue(&r, map: map, depth: 0)))
                    continue
                }
                guard code <= UInt64(old.properties.count), used.insert(Int(code - 1)).inserted else {
                    throw LogDecodeError("\(entity.name).\(property.name) comes from a position it cannot")
                }
                sources.append(.stored(Int(code - 1)))
            }
            let oldExternal = old.properties.indices.filter { old.properties[$0].isExternal }
            let newExternal = entity.properties.indices.filter { entity.properties[$0].isExternal }
            guard oldExternal == newExternal,
                newExternal.allSatisfy({ if case .stored($0) = sources[$0] { true } else { false } })
            else { throw LogDecodeError("\(entity.name)'s external-storage properties moved") }
            step.entities[entity.name] = sources
        }
        guard r.isAtEnd else { throw LogDecodeError("\(r.remaining) bytes follow its last entity") }
        return LogLayoutRecord(schema: schema, step: step)
    }
}

/// The layouts of a log file's records (format version 6): the header record's, then each
/// layout record's, with where each starts, the map to decode a record of it, and the
/// conversion that carries such a record to the last layout.
package struct LogLayouts: Sendable {
    package struct Layout: Sendable {
        /// Where the records of this layout start: the end of its layout record (the start
        /// of the commits for the header's).
        package var start: Int64
        package var schema: StoredSchema
        package var map: LogEntityMap
        /// From a record of this layout to one of the last; `nil` for the last.
        var toLast: SchemaConversion?
    }

    package private(set) var layouts: [Layout]

    /// The header record's layout alone.
    package init(preamble: LogPreamble) {
        layouts = [
            Layout(
                start: preamble.commitsStart, schema: preamble.schema,
                map: LogEntityMap(
                    storeIdentifier: preamble.storeIdentifier, description: preamble.schema,
                    formatVersion: preamble.header.version))
        ]
    }

    package var last: Layout { layouts[layouts.count - 1] }
    /// Whether every record is in the last layout.
    package var isSingle: Bool { layouts.count == 1 }

    /// Adds a layout that starts at `start` and comes from the last by `step`.
    mutating func append(_ record: LogLayoutRecord, start: Int64) {
        let map = LogEntityMap(
            storeIdentifier: last.map.storeIdentifier, description: record.schema,
            formatVersion: last.map.formatVersion)
        for i in layouts.indices {
            layouts[i].toLast = layouts[i].toLast.map { $0.then(record.step) } ?? record.step
        }
        layouts.append(Layout(start: start, schema: record.schema, map: map))
    }

    /// The layout of a record at `offset`.
    package func layout(at offset: Int64) -> Layout {
        guard layouts.count > 1, offset < last.start else { return last }
        var low = 0
        var high = layouts.count - 1
        // The last layout whose start is at or before `offset`.
        while low < high {
            let mid = (low + high + 1) / 2
            if layouts[mid].start <= offset { low = mid } else { high = mid - 1 }
        }
        return layouts[low]
    }

    /// The map to decode the records of a commit at `offset` with.
    package func map(at offset: Int64) -> LogEntityMap { layout(at: offset).map }

    /// A commit decoded from `offset`, its writes carried to the last layout.
    package func converted(_ commit: LogCommit, at offset: Int64) -> LogCommit {
        guard let conversion = layout(at: offset).toLast else { return commit }
        var commit = commit
        for position in commit.writes.indices {
            let write = commit.writes[position]
            commit.writes.setSnapshot(conversion.convert(write.snapshot, of: write.entity), at: position)
        }
        return commit
    }

    /// The layouts of the file at `fd` (format version 6): the layout records found by
    /// reading the record frames from the start of the commits (16 bytes each, and the
    /// payload of a layout record). The frames stop at the first that cannot be a record,
    /// and at a layout record that fails its checks; opening's walk, which checks every
    /// record, finds such damage on its own (and opening reads the layouts again when it
    /// ends before the last of them). Also gives the last checkpoint the frames show, for
    /// ``LogCheckpointPrefetch``.
    package static func scan(
        _ fs: any StoreFileSystem, _ fd: Int32, preamble: LogPreamble, fileSize: Int64
    ) throws -> (layouts: LogLayouts, frames: LogFrames) {
        var layouts = LogLayouts(preamble: preamble)
        let frames = try LogFrames.scan(fs, fd, from: preamble.commitsStart, fileSize: fileSize) { offset in
            guard preamble.header.version.hasLayoutRecords,
                case .record(.layout, let payload, let next) = try LogFormat.readRecord(
                    fs, fd, at: offset, fileSize: fileSize, salt: preamble.header.salt),
                let record = try? LogLayoutRecord.decode(payload, previous: layouts.last.schema, map: layouts.last.map)
            else { return false }
            layouts.append(record, start: next)
            return true
        }
        return (layouts, frames)
    }
}

/// What the record frames of a log show, read without their payloads: the last record and
/// the last checkpoint.
package struct LogFrames: Sendable {
    package var last: (offset: Int64, type: UInt8)?
    package var lastCheckpoint: Int64?
    /// Where the frames stopped.
    package var end: Int64

    /// Reads the frames from `start`; `layout` reads a layout record's frame at an offset
    /// and says whether to go on.
    static func scan(
        _ fs: any StoreFileSystem, _ fd: Int32, from start: Int64, fileSize: Int64,
        layout: (Int64) throws -> Bool = { _ in false }
    ) throws -> LogFrames {
        var frames = LogFrames(end: start)
        var offset = start
        while fileSize - offset >= Int64(LogFormat.frameSize) {
            guard let frame = try? fs.read(fd, count: LogFormat.frameSize, at: offset),
                frame.count == LogFormat.frameSize
            else { break }
            // Type 0 is no record: the reserved zero tail, or damage that the walk reports.
            guard frame[4] != 0 else { break }
            let stored = Int64(frame[0]) | Int64(frame[1]) << 8 | Int64(frame[2]) << 16 | Int64(frame[3]) << 24
            let next = offset + Int64(LogFormat.frameSize) + stored
            guard next <= fileSize else { break }
            if frame[4] == LogFormat.RecordType.layout.rawValue, try !layout(offset) { break }
            frames.last = (offset, frame[4])
            if frame[4] == LogFormat.RecordType.checkpoint.rawValue { frames.lastCheckpoint = offset }
            offset = next
        }
        frames.end = offset
        return frames
    }
}

extension SchemaConversion {
    /// This conversion, then `next`: what each value of a record comes from after both.
    func then(_ next: SchemaConversion) -> SchemaConversion {
        var result = SchemaConversion()
        let names = Set(entities.keys).union(next.entities.keys)
        for name in names {
            guard let later = next.entities[name] else {
                result.entities[name] = entities[name]
                continue
            }
            guard let earlier = entities[name] else {
                result.entities[name] = later
                continue
            }
            result.entities[name] = later.map { source in
                switch source {
                case .stored(let position): position < earlier.count ? earlier[position] : .value(.null)
                case .value: source
                }
            }
        }
        result.droppedEntities = droppedEntities.union(next.droppedEntities)
        return result
    }
}
