import Foundation

/// The log store's history (`Formats/log.md`, "History record"): its commits, with the
/// history records that compaction and `deleteHistory` write.
extension LogStore: HistoryProviding, HistoryKeeping {
    /// The store's transactions are Stowage's default ones.
    public typealias HistoryType = DefaultHistoryTransaction
    /// ``DefaultHistoryTransaction``.
    public static var historyType: DefaultHistoryTransaction.Type { DefaultHistoryTransaction.self }

    /// The transactions `descriptor` selects. Reads the file's valid prefix once, with the
    /// writer lock held: saves wait meanwhile.
    public func fetchHistory(_ descriptor: HistoryDescriptor<DefaultHistoryTransaction>) throws
        -> [DefaultHistoryTransaction]
    {
        try fetchDefaultHistory(descriptor)
    }

    /// Removes the transactions `descriptor` selects from the history, by appending one
    /// history record (synced with `.full` durability); the records stay.
    public func deleteHistory(_ descriptor: HistoryDescriptor<DefaultHistoryTransaction>) throws {
        try deleteDefaultHistory(descriptor)
    }

    package func historyEntries() throws -> [HistoryEntry] {
        try writer.withLockWhenNotSyncing { w in
            try settlePending(&w)
            guard !w.closed else { throw DataStoreError(.storeUnusable, "\(path) is closed") }
            return try LogHistory.entries(fs, w.fd, end: w.end, path: path)
        }
    }

    package func removeHistory(_ transactions: Set<Int64>) throws {
        guard !transactions.isEmpty else { return }
        try writer.withLockWhenNotSyncing { w in
            try checkWritable(w)
            guard w.formatVersion.keepsHistory else {
                throw DataStoreError(
                    .unsupportedFeature,
                    "\(path) is log format version \(w.formatVersion), which cannot record a deletion of history; "
                        + "compact() rewrites it as version \(LogFormat.version)")
            }
            try settlePending(&w)
            var record = LogHistoryRecord()
            record.removed = Self.ranges(transactions.sorted())
            try append(&w, type: .history, payload: try record.encode(map: map.with(formatVersion: w.formatVersion)))
            try syncAppended(&w, "a deletion of history")
        }
    }

    /// Sorted identifiers as ranges of consecutive ones.
    static func ranges(_ sorted: [Int64]) -> [ClosedRange<Int64>] {
        var ranges: [ClosedRange<Int64>] = []
        for id in sorted {
            if let last = ranges.last, last.upperBound + 1 == id {
                ranges[ranges.count - 1] = last.lowerBound...id
            } else {
                ranges.append(id...id)
            }
        }
        return ranges
    }

    /// Writes the history of the file `w` has open into the new file `fd` from `offset`, as
    /// history records of about `compactionChunkSize` bytes, the first covering the
    /// compaction's commits (transaction `through`): where the records end.
    func writeHistory(
        of w: WriterState, to fd: Int32, at offset: Int64, salt: UInt64, map: LogEntityMap, through: UInt64
    ) throws -> Int64 {
        let entries = try LogHistory.entries(fs, w.fd, end: w.end, path: path)
        let description = storedSchema
        var positions: [String: [String: Int]] = [:]
        for entity in description.entities {
            positions[entity.name] = Dictionary(
                entity.properties.enumerated().map { ($1.name, $0) }, uniquingKeysWith: { a, _ in a })
        }
        var end = offset
        var record = LogHistoryRecord(coveredThrough: through)
        var pending = 0
        func flush(force: Bool) throws {
            guard !record.entries.isEmpty || force else { return }
            let bytes = LogFormat.frame(type: .history, payload: try record.encode(map: map), salt: salt, offset: end)
            try fs.write(fd, bytes, at: end)
            end += Int64(bytes.count)
            record = LogHistoryRecord()
            pending = 0
        }
        for entry in entries {
            var changes: [LogHistoryRecord.Change] = []
            changes.reserveCapacity(entry.changes.count)
            for change in entry.changes {
                // A change of an entity the store no longer has is left out.
                guard let entity = map.indexByName[change.entity], let names = positions[change.entity] else {
                    continue
                }
                var kept = LogHistoryRecord.Change(kind: change.kind, entity: entity, key: change.key)
                kept.updated = change.updated.compactMap { names[$0] }.sorted()
                kept.tombstone = change.tombstone.compactMap { name, value in names[name].map { ($0, value) } }
                    .sorted { $0.0 < $1.0 }
                changes.append(kept)
                pending += 8 + kept.updated.count + kept.tombstone.count * 16
            }
            record.entries.append(
                LogHistoryRecord.Entry(
                    transactionID: entry.transactionID, timestamp: entry.timestamp, author: entry.author,
                    changes: changes, writer: entry.writer))
            pending += 24 + (entry.author?.utf8.count ?? 0) + entry.writer.program.utf8.count
            if pending >= Self.compactionChunkSize { try flush(force: false) }
        }
        // The first record always goes: it covers the compaction's own commits.
        try flush(force: end == offset)
        return end
    }
}
