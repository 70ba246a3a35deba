import BTree
import Foundation
import IndexKey

/// A checkpoint record (`Formats/log.md`, format versions 3 and 4): the live primary keys
/// of each entity and the sorted entries of each of its indexes, as the commits before it
/// leave the store; in version 4 also where each live record is (the key directory) and
/// the number of record versions before it.
package struct LogCheckpoint: Equatable {
    /// One index's entries, in ascending key order, as parallel arrays.
    package typealias Entries = SnapshotTable.SortedEntries

    /// One entity with at least one live record.
    package struct Entity: Equatable {
        /// The entity's index in the stored schema.
        package var entityIndex: Int
        /// The live primary keys, ascending.
        package var keys: [Int64]
        /// Version 4: each live record's location, parallel to `keys`.
        package var locations: [RecordLocation]? = nil
        /// Version 4, for an entity with external-storage properties: per record (parallel
        /// to `keys`), per such property in order, its external value reference if any.
        package var external: [[LogExternalReference?]]? = nil
        /// The entity's indexes, in the table's order: uniqueness constraints, then
        /// `#Index` groups that are not also one.
        package var indexes: [Entries]
    }

    package var transactionID: UInt64
    package var nextPrimaryKey: Int64
    /// Version 4: every write and delete of the commits before it; `nil` in version 3.
    package var versions: Int64?
    package var entities: [Entity]

    /// The number of indexes each entity of a stored schema has, in the table's order.
    package static func indexCount(of entity: StoredSchema.Entity) -> Int {
        entity.uniqueness.count + entity.indices.filter { !entity.uniqueness.contains($0) }.count
    }

    /// The checkpoint of `table`'s records, with entities numbered by `map`; for a
    /// version 4 map, with every record's location and `versions`. It copies every entry
    /// out of the table; ``payload(of:transactionID:map:versions:external:)`` writes the
    /// same bytes without the copies.
    /// - Throws: for version 4, when a record is not held by location.
    package init(
        _ table: SnapshotTable, transactionID: UInt64, map: LogEntityMap, versions: Int64 = 0,
        external: [LogExternalSlot: LogExternalReference] = [:]
    ) throws {
        self.transactionID = transactionID
        nextPrimaryKey = table.nextPrimaryKey
        let directory = map.formatVersion.checkpointsLocateRecords
        self.versions = directory ? versions : nil
        entities = try Self.liveEntities(table, map: map, external: external).map { found in
            let rows = found.records.rows
            return Entity(
                entityIndex: found.entityIndex, keys: rows.map(\.key),
                locations: directory ? rows.compactMap(\.value.recordLocation) : nil, external: found.references,
                indexes: found.records.indexes.map { index in
                    var entries = Entries()
                    entries.keys.reserveCapacity(index.tree.count)
                    entries.primaryKeys.reserveCapacity(index.tree.count)
                    for (key, primaryKey) in index.tree {
                        entries.keys.append(key)
                        entries.primaryKeys.append(primaryKey)
                    }
                    return entries
                })
        }
    }

    /// The payload of the checkpoint of `table`: the bytes of
    /// `LogCheckpoint(table, …).encode()`, written from the table's directory and trees as
    /// they are. Copying the entries out first (each index entry a 40-byte key and its
    /// primary key) held a second copy of every index on top of the store when it closed.
    /// - Throws: for version 4, when a record is not held by location.
    package static func payload(
        of table: SnapshotTable, transactionID: UInt64, map: LogEntityMap, versions: Int64 = 0,
        external: [LogExternalSlot: LogExternalReference] = [:]
    ) throws -> [UInt8] {
        try writer(of: table, transactionID: transactionID, map: map, versions: versions, external: external).w.bytes
    }

    /// The payload of the checkpoint of `table`, as ``payload(of:transactionID:map:versions:external:)``
    /// gives it, written through `spill` in pieces once it passes the spill's threshold, as
    /// a large commit is: the first piece starts with `LogFormat.frameSize` bytes of room for
    /// the frame. Returns the bytes not written yet (the whole payload, without that room,
    /// if nothing was), and what was. Built whole, the payload and then its compressed copy
    /// were held on top of the store as it closed.
    /// - Throws: the first error of `spill`, once the table has been walked; for version 4,
    ///   when a record is not held by location.
    static func spilledPayload(
        of table: SnapshotTable, transactionID: UInt64, map: LogEntityMap, versions: Int64 = 0,
        external: [LogExternalSlot: LogExternalReference] = [:], spill: LogCommitSpill
    ) throws -> (bytes: [UInt8], spilled: LogSpilled) {
        let writer = try writer(
            of: table, transactionID: transactionID, map: map, versions: versions, external: external, spill: spill)
        if let error = writer.spillError { throw error }
        guard writer.spilled.count > 0 else { return (Array(writer.w.bytes[LogFormat.frameSize...]), writer.spilled) }
        return (writer.w.bytes, writer.spilled)
    }

    private static func writer(
        of table: SnapshotTable, transactionID: UInt64, map: LogEntityMap, versions: Int64,
        external: [LogExternalSlot: LogExternalReference], spill: LogCommitSpill? = nil
    ) throws -> PayloadWriter {
        let directory = map.formatVersion.checkpointsLocateRecords
        let found = try liveEntities(table, map: map, external: external)
        var writer = PayloadWriter(
            transactionID: transactionID, nextPrimaryKey: table.nextPrimaryKey, versions: directory ? versions : nil,
            entityCount: found.count,
            entryCount: found.reduce(0) { $0 + $1.records.rows.count * (1 + $1.records.indexes.count) }, spill: spill)
        for entity in found {
            let rows = entity.records.rows
            writer.entity(
                entity.entityIndex, keyCount: rows.count, keys: rows.lazy.map(\.key),
                locations: rows.lazy.compactMap(\.value.recordLocation), external: entity.references,
                indexCount: entity.records.indexes.count)
            for index in entity.records.indexes { writer.index(index.tree) }
        }
        return writer
    }

    private typealias LiveEntity = (
        entityIndex: Int, records: SnapshotTable.EntityRecords, references: [[LogExternalReference?]]?
    )

    /// The entities of `table` with a live record, in `map`'s order, with their external
    /// value references (version 4, for an entity with external-storage properties: per
    /// record in key order, per such property).
    /// - Throws: for version 4, when a record is not held by location.
    private static func liveEntities(
        _ table: SnapshotTable, map: LogEntityMap, external: [LogExternalSlot: LogExternalReference]
    ) throws -> [LiveEntity] {
        let directory = map.formatVersion.checkpointsLocateRecords
        var found: [LiveEntity] = []
        for (entityIndex, name) in map.names.enumerated() {
            guard let records = table.entities[name], records.rows.count > 0 else { continue }
            guard directory else {
                found.append((entityIndex, records, nil))
                continue
            }
            for (key, row) in records.rows where row.recordLocation == nil {
                throw DataStoreError(
                    .unsupportedFeature, "\(name) record \(key) is not in the log yet; no checkpoint can name it")
            }
            var references: [[LogExternalReference?]]?
            if !map.external[entityIndex].isEmpty {
                references = records.rows.map { key, _ in
                    map.external[entityIndex].map {
                        external[LogExternalSlot(entity: entityIndex, key: key, property: $0)]
                    }
                }
            }
            found.append((entityIndex, records, references))
        }
        return found
    }

    package init(transactionID: UInt64, nextPrimaryKey: Int64, versions: Int64? = nil, entities: [Entity]) {
        self.transactionID = transactionID
        self.nextPrimaryKey = nextPrimaryKey
        self.versions = versions
        self.entities = entities
    }

    /// The record's payload.
    package func encode() -> [UInt8] {
        var writer = PayloadWriter(
            transactionID: transactionID, nextPrimaryKey: nextPrimaryKey, versions: versions,
            entityCount: entities.count,
            entryCount: entities.reduce(0) { $0 + $1.keys.count * (1 + $1.indexes.count) })
        for entity in entities {
            writer.entity(
                entity.entityIndex, keyCount: entity.keys.count, keys: entity.keys, locations: entity.locations ?? [],
                external: entity.external, indexCount: entity.indexes.count)
            for index in entity.indexes {
                writer.index(zip(index.keys, index.primaryKeys).lazy.map { (key: $0, value: $1) })
            }
        }
        return writer.w.bytes
    }

    /// Writes a checkpoint payload in the order `Formats/log.md` gives, from a checkpoint's
    /// arrays or straight from a table.
    package struct PayloadWriter {
        package var w: LogByteWriter
        /// Version 4: the key directory's locations and external references are written.
        let withDirectory: Bool
        /// Locations are delta-coded across the entities.
        private var previousLocation: Int64 = 0
        /// Where the bytes go, in pieces, once they pass its threshold; the first piece
        /// starts with room for the record's frame.
        private let spill: LogCommitSpill?
        /// What went through `spill`.
        private(set) var spilled = LogSpilled()
        /// The first error `spill` threw: no more pieces are written after it, and the
        /// bytes are dropped; the caller throws it.
        private(set) var spillError: (any Error)?

        package init(
            transactionID: UInt64, nextPrimaryKey: Int64, versions: Int64?, entityCount: Int, entryCount: Int,
            spill: LogCommitSpill? = nil
        ) {
            let capacity = 32 + entryCount * 8
            self.spill = spill
            if let spill {
                w = LogByteWriter(capacity: LogFormat.frameSize + min(capacity, spill.threshold + 4096))
                w.bytes.append(contentsOf: repeatElement(0, count: LogFormat.frameSize))
            } else {
                w = LogByteWriter(capacity: capacity)
            }
            withDirectory = versions != nil
            w.varint(transactionID)
            w.zigzag(nextPrimaryKey)
            if let versions { w.varint(UInt64(max(0, versions))) }
            w.varint(entityCount)
        }

        /// An entity's keys (ascending, `keyCount` of them) and, in version 4, its
        /// records' locations and external references; its `indexCount` indexes follow.
        package mutating func entity(
            _ entityIndex: Int, keyCount: Int, keys: some Sequence<Int64>, locations: some Sequence<RecordLocation>,
            external: [[LogExternalReference?]]?, indexCount: Int
        ) {
            w.varint(entityIndex)
            w.varint(keyCount)
            var previous: Int64 = 0
            for (position, key) in keys.enumerated() {
                if position == 0 { w.zigzag(key) } else { w.varint(UInt64(bitPattern: key &- previous)) }
                previous = key
                spillIfFull()
            }
            if withDirectory {
                for location in locations {
                    w.zigzag(location.blockOffset &- previousLocation)
                    w.varint(location.slot)
                    previousLocation = location.blockOffset
                    spillIfFull()
                }
                for references in external ?? [] {
                    for reference in references {
                        guard let reference else {
                            w.u8(0)
                            continue
                        }
                        w.u8(1)
                        w.varint(reference.transactionID)
                        w.varint(reference.byteCount)
                        w.u32(reference.checksum)
                    }
                }
            }
            w.varint(indexCount)
        }

        /// One index's entries, in ascending key order, each key after the bytes it shares
        /// with the one before.
        package mutating func index(_ entries: some Sequence<(key: IndexKey, value: Int64)>) {
            var last = IndexKey()
            for (key, primaryKey) in entries {
                let shared = last.sharedPrefixCount(with: key)
                w.varint(shared)
                w.varint(key.count - shared)
                key.withUnsafeBytes { w.bytes.append(contentsOf: $0[shared...]) }
                w.zigzag(primaryKey)
                last = key
                spillIfFull()
            }
        }

        /// Writes the bytes so far through `spill` once they pass its threshold.
        private mutating func spillIfFull() {
            guard let spill, w.bytes.count >= spill.threshold else { return }
            if spillError == nil {
                do {
                    try spill.write(w.bytes, spilled.count)
                    spilled.add(w.bytes, headroom: LogFormat.frameSize)
                } catch {
                    spillError = error
                }
            }
            w.bytes.removeAll(keepingCapacity: true)
        }
    }

    /// Decodes and checks a payload of a file of `formatVersion` against the stored schema:
    /// entity indexes in range and ascending, keys and entries ascending, one entry per
    /// record in every index, and (version 4) locations inside the file's commits, below
    /// `fileSize`.
    package static func decode(
        _ payload: [UInt8], schema: StoredSchema, formatVersion: LogFormatVersion = LogFormat.version,
        fileSize: Int64 = Int64(LogFormat.maximumPayload) << 8
    ) throws -> LogCheckpoint {
        var r = LogByteReader(payload)
        let transactionID = try r.varint()
        let nextPrimaryKey = try r.zigzag()
        let versions: Int64? = formatVersion.checkpointsLocateRecords ? Int64(clamping: try r.varint()) : nil
        let entityCount = try r.count(minimumSize: 3)
        var previousLocation: Int64 = 0
        var entities: [Entity] = []
        var previousEntity = -1
        for _ in 0..<entityCount {
            let entityIndex = Int(clamping: try r.varint())
            guard entityIndex > previousEntity, entityIndex < schema.entities.count else {
                throw LogDecodeError("checkpoint entity \(entityIndex) is out of order or not in the schema")
            }
            previousEntity = entityIndex
            let count = try r.count(minimumSize: 1)
            guard count > 0 else { throw LogDecodeError("checkpoint entity \(entityIndex) has no records") }
            var keys: [Int64] = []
            keys.reserveCapacity(count)
            keys.append(try r.zigzag())
            for _ in 1..<count {
                let delta = try r.varint()
                guard delta >= 1, let last = keys.last,
                    case let (next, overflow) = last.addingReportingOverflow(
                        Int64(bitPattern: delta)), !overflow, next > last
                else {
                    throw LogDecodeError("checkpoint keys of entity \(entityIndex) are not ascending")
                }
                keys.append(next)
            }
            var locations: [RecordLocation]?
            if versions != nil {
                var found: [RecordLocation] = []
                found.reserveCapacity(count)
                for _ in 0..<count {
                    let (offset, overflow) = previousLocation.addingReportingOverflow(try r.zigzag())
                    let slot = try r.varint()
                    guard !overflow, offset >= Int64(LogFormat.fileHeaderSize), offset < fileSize,
                        slot < UInt64(RecordLocation.slotsPerBlock)
                    else { throw LogDecodeError("a checkpoint location of entity \(entityIndex) is outside the file") }
                    found.append(RecordLocation(blockOffset: offset, slot: Int(slot)))
                    previousLocation = offset
                }
                locations = found
            }
            var external: [[LogExternalReference?]]?
            let properties = schema.entities[entityIndex].properties.indices.filter {
                schema.entities[entityIndex].properties[$0].isExternal
            }
            if versions != nil, !properties.isEmpty {
                var all: [[LogExternalReference?]] = []
                all.reserveCapacity(count)
                for _ in 0..<count {
                    var references: [LogExternalReference?] = []
                    for property in properties {
                        switch try r.u8() {
                        case 0:
                            references.append(nil)
                        case 1:
                            references.append(
                                LogExternalReference(
                                    property: property, transactionID: try r.varint(), byteCount: try r.varint(),
                                    checksum: try r.u32()))
                        case let flag:
                            throw LogDecodeError("a checkpoint external flag \(flag) of entity \(entityIndex)")
                        }
                    }
                    all.append(references)
                }
                external = all
            }
            let stored = try r.count(minimumSize: 1)
            let expected = indexCount(of: schema.entities[entityIndex])
            guard stored == expected else {
                throw LogDecodeError(
                    "checkpoint entity \(entityIndex) has \(stored) indexes; the schema gives it \(expected)")
            }
            var indexes: [Entries] = []
            for _ in 0..<stored {
                var entries = Entries()
                entries.keys.reserveCapacity(count)
                entries.primaryKeys.reserveCapacity(count)
                var last = IndexKey()
                for _ in 0..<count {
                    let shared = try r.varint()
                    guard shared <= UInt64(last.count) else {
                        throw LogDecodeError("a checkpoint index entry shares more bytes than its predecessor has")
                    }
                    let suffixLength = try r.count(minimumSize: 1)
                    var key = last.prefix(Int(shared))
                    try r.bytes(suffixLength).withUnsafeBytes { key.append(contentsOf: $0) }
                    if !entries.keys.isEmpty, !(last < key) {
                        throw LogDecodeError("checkpoint index entries of entity \(entityIndex) are not ascending")
                    }
                    entries.primaryKeys.append(try r.zigzag())
                    entries.keys.append(key)
                    last = key
                }
                indexes.append(entries)
            }
            entities.append(
                Entity(entityIndex: entityIndex, keys: keys, locations: locations, external: external, indexes: indexes)
            )
        }
        guard r.isAtEnd else { throw LogDecodeError("\(r.remaining) bytes after the checkpoint's last entity") }
        return LogCheckpoint(
            transactionID: transactionID, nextPrimaryKey: nextPrimaryKey, versions: versions, entities: entities)
    }

    /// The index entries to load, by entity name, when the checkpoint agrees with the live
    /// records replay found (`Formats/log.md`, "Reading"); `nil` when it does not.
    func indexEntries(
        agreeingWith live: [String: SnapshotTable.SortedRecords], map: LogEntityMap, transactionID: UInt64,
        nextPrimaryKey: Int64
    ) -> [String: [Entries]]? {
        guard self.transactionID == transactionID, self.nextPrimaryKey == nextPrimaryKey else { return nil }
        let nonEmpty = live.filter { !$0.value.keys.isEmpty }
        guard nonEmpty.count == entities.count else { return nil }
        var result: [String: [Entries]] = [:]
        for entity in entities {
            guard entity.entityIndex < map.names.count else { return nil }
            let name = map.names[entity.entityIndex]
            guard let records = nonEmpty[name], records.keys == entity.keys else { return nil }
            let sum = entity.keys.reduce(0, &+)
            for index in entity.indexes {
                guard index.primaryKeys.count == entity.keys.count, index.primaryKeys.reduce(0, &+) == sum else {
                    return nil
                }
            }
            result[name] = entity.indexes
        }
        return result
    }
}
