import Foundation

/// A history record's contents (`Formats/log.md`, "History record", format version 6).
struct LogHistoryRecord {
    /// Commits after the record with a transaction identifier up to this are a compaction's
    /// rewrite, not transactions.
    var coveredThrough: UInt64 = 0
    /// Transactions removed from the history.
    var removed: [ClosedRange<Int64>] = []
    var entries: [Entry] = []

    /// A transaction, its entities and values by index and position in the record's layout.
    struct Entry {
        var transactionID: Int64
        var timestamp: Int64
        var author: String?
        var changes: [Change]
        var writer = HistoryWriter.unknown
    }

    struct Change {
        var kind: HistoryEntry.Change.Kind
        var entity: Int
        var key: Int64
        var updated: [Int] = []
        var tombstone: [(Int, SnapshotValue)] = []
    }

    func encode(map: LogEntityMap) throws -> [UInt8] {
        var w = LogByteWriter()
        w.varint(coveredThrough)
        w.varint(removed.count)
        for range in removed {
            w.varint(UInt64(range.lowerBound))
            w.varint(UInt64(range.upperBound))
        }
        w.varint(entries.count)
        for entry in entries {
            w.varint(UInt64(entry.transactionID))
            w.zigzag(entry.timestamp)
            if let author = entry.author {
                w.u8(1)
                w.string(author)
            } else {
                w.u8(0)
            }
            w.string(entry.writer.program)
            w.varint(UInt64(clamping: entry.writer.process))
            w.varint(entry.changes.count)
            for change in entry.changes {
                w.u8(change.kind.rawValue)
                w.varint(change.entity)
                w.zigzag(change.key)
                switch change.kind {
                case .insert: break
                case .update:
                    w.varint(change.updated.count)
                    for position in change.updated { w.varint(position) }
                case .delete:
                    w.varint(change.tombstone.count)
                    for (position, value) in change.tombstone {
                        w.varint(position)
                        try LogCodec.encodeValue(value, into: &w, map: map)
                    }
                }
            }
        }
        return w.bytes
    }

    static func decode(_ payload: [UInt8], map: LogEntityMap) throws -> LogHistoryRecord {
        var r = LogByteReader(payload)
        var record = LogHistoryRecord()
        record.coveredThrough = try r.varint()
        for _ in 0..<(try r.count(minimumSize: 2)) {
            let first = try r.varint()
            let last = try r.varint()
            guard first <= last, last < UInt64(Int64.max) else {
                throw LogDecodeError("a removed range \(first)...\(last) is not a range of transactions")
            }
            record.removed.append(Int64(first)...Int64(last))
        }
        for _ in 0..<(try r.count(minimumSize: 4)) {
            let id = try r.varint()
            guard id < UInt64(Int64.max) else { throw LogDecodeError("transaction \(id) is out of range") }
            let timestamp = try r.zigzag()
            let author: String?
            switch try r.u8() {
            case 0: author = nil
            case 1: author = try r.string()
            case let flag: throw LogDecodeError("bad author flag \(flag)")
            }
            let writer = try LogCodec.decodeWriter(&r)
            var changes: [Change] = []
            for _ in 0..<(try r.count(minimumSize: 3)) {
                guard let kind = HistoryEntry.Change.Kind(rawValue: try r.u8()) else {
                    throw LogDecodeError("a change of an unknown kind")
                }
                let entity = try r.varint()
                guard entity < UInt64(map.names.count) else {
                    throw LogDecodeError("a change names entity \(entity), which the layout does not have")
                }
                var change = Change(kind: kind, entity: Int(entity), key: try r.zigzag())
                let properties = UInt64(map.propertyCounts[Int(entity)])
                switch kind {
                case .insert: break
                case .update:
                    for _ in 0..<(try r.count()) {
                        let position = try r.varint()
                        guard position < properties else {
                            throw LogDecodeError("an update names position \(position)")
                        }
                        change.updated.append(Int(position))
                    }
                case .delete:
                    for _ in 0..<(try r.count(minimumSize: 2)) {
                        let position = try r.varint()
                        guard position < properties else {
                            throw LogDecodeError("a tombstone names position \(position)")
                        }
                        change.tombstone.append((Int(position), try LogCodec.decodeValue(&r, map: map, depth: 0)))
                    }
                }
                changes.append(change)
            }
            record.entries.append(
                Entry(transactionID: Int64(id), timestamp: timestamp, author: author, changes: changes, writer: writer))
        }
        guard r.isAtEnd else { throw LogDecodeError("\(r.remaining) bytes follow its last entry") }
        return record
    }
}

extension LogLayouts {
    /// The current name of the property at `position` of entity `entity` in `layout`: its
    /// name in the last layout, or `nil` when a later layout removed it.
    func currentName(entity: Int, position: Int, in layout: Layout) -> String? {
        guard entity < layout.schema.entities.count, entity < last.schema.entities.count else { return nil }
        let old = layout.schema.entities[entity]
        let current = last.schema.entities[entity]
        guard let conversion = layout.toLast, let sources = conversion.entities[old.name] else {
            return position < current.properties.count ? current.properties[position].name : nil
        }
        for (index, source) in sources.enumerated() {
            if case .stored(position) = source {
                return index < current.properties.count ? current.properties[index].name : nil
            }
        }
        return nil
    }

    /// The position in the last layout of the property `name` of entity `entity`.
    func currentPosition(entity: Int, name: String) -> Int? {
        guard entity < last.schema.entities.count else { return nil }
        return last.schema.entities[entity].properties.firstIndex { $0.name == name }
    }
}

/// Reads a log's history (`Formats/log.md`, "History record"): its commits and history
/// records, in file order, up to `end`.
package enum LogHistory {
    package static func entries(
        _ fs: any StoreFileSystem, _ fd: Int32, end: Int64, path: String
    ) throws -> [HistoryEntry] {
        guard case .success(let preamble) = try LogPreamble.read(fs, fd, fileSize: end) else {
            throw DataStoreError(.corruptStore, "\(path): its header could not be read again for its history")
        }
        let layouts = try LogLayouts.scan(fs, fd, preamble: preamble, fileSize: end).layouts
        var entries: [HistoryEntry] = []
        var removed: [ClosedRange<Int64>] = []
        var covered: UInt64 = 0
        var records = LogRecordWalk(fs, fd, fileSize: end, preamble: preamble) { offset, reason in
            throw DataStoreError(
                .corruptStore, "\(path): reading its history, the record at offset \(offset): \(reason)")
        }
        func names(_ change: LogHistoryRecord.Change, _ layout: LogLayouts.Layout) -> HistoryEntry.Change {
            var named = HistoryEntry.Change(
                kind: change.kind, entity: layout.map.names[change.entity], key: change.key)
            named.updated = change.updated.compactMap {
                layouts.currentName(entity: change.entity, position: $0, in: layout)
            }
            for (position, value) in change.tombstone {
                if let name = layouts.currentName(entity: change.entity, position: position, in: layout) {
                    named.tombstone[name] = value
                }
            }
            return named
        }
        while let record = try records.next() {
            let layout = layouts.layout(at: record.offset)
            switch record.kind {
            case .commit:
                let commit: LogCommit
                do {
                    commit = try LogCodec.decodeCommit(record.payload, map: layout.map, recordOffset: record.offset)
                } catch {
                    throw DataStoreError(
                        .corruptStore, "\(path): the commit at offset \(record.offset) does not decode: \(error)")
                }
                guard commit.transactionID > covered else { continue }
                var changes: [HistoryEntry.Change] = []
                for (position, write) in commit.writes.enumerated() {
                    let entity = layout.map.indexByName[write.entity] ?? 0
                    var change = LogHistoryRecord.Change(
                        kind: write.isInsert ? .insert : .update, entity: entity, key: write.key)
                    if !write.isInsert {
                        change.updated =
                            commit.history.updated[position].map(Array.init)
                            ?? (preamble.header.version.keepsHistory ? [] : Array(write.snapshot.values.indices))
                    }
                    changes.append(names(change, layout))
                }
                for (position, (entity, key)) in commit.deletes.enumerated() {
                    var change = LogHistoryRecord.Change(
                        kind: .delete, entity: layout.map.indexByName[entity] ?? 0, key: key)
                    change.tombstone = commit.history.tombstones[position] ?? []
                    changes.append(names(change, layout))
                }
                entries.append(
                    HistoryEntry(
                        transactionID: Int64(commit.transactionID), timestamp: commit.timestamp, author: commit.author,
                        changes: changes, writer: commit.history.writer))
            case .history:
                let found: LogHistoryRecord
                do {
                    found = try LogHistoryRecord.decode(record.payload, map: layout.map)
                } catch {
                    throw DataStoreError(
                        .corruptStore,
                        "\(path): the history record at offset \(record.offset) does not decode: \(error)")
                }
                covered = max(covered, found.coveredThrough)
                for entry in found.entries {
                    entries.append(
                        HistoryEntry(
                            transactionID: entry.transactionID, timestamp: entry.timestamp, author: entry.author,
                            changes: entry.changes.map { names($0, layout) }, writer: entry.writer))
                }
                removed += found.removed
            case .checkpoint, .layout:
                continue
            }
        }
        guard !removed.isEmpty else { return entries }
        return entries.filter { entry in !removed.contains { $0.contains(entry.transactionID) } }
    }
}
