import BTree
import Foundation
import IndexKey

extension SnapshotTable {
    /// Applies a prepared save: records and every index change together. It cannot fail.
    public mutating func apply(_ prepared: PreparedSave) {
        var unrecorded: [StoredRow?]?
        apply(prepared, replacedRows: &unrecorded)
    }

    /// Applies a prepared save, as ``apply(_:)``, and appends to `replacedRows` (unless it
    /// is `nil`) the row that each of its deletes, then each of its writes that is not an
    /// insert, replaced, in that order: `nil` where the table held none. They are what an
    /// undo of the save writes back (`LogPendingSave.completeUndo`), found here by the
    /// changes themselves instead of by looking every record up before applying.
    mutating func apply(_ prepared: PreparedSave, replacedRows: inout [StoredRow?]?) {
        if let bulk = bulkInserts(prepared) {
            // A large save of new records into empty entities (an import): each tree is
            // built from sorted entries at once instead of by one insert per entry.
            bulkLoad(sorted: bulk)
            nextPrimaryKey = Swift.max(nextPrimaryKey, prepared.nextPrimaryKey)
            return
        }
        // Each entity's records are taken out of the dictionary once per run of changes to
        // that entity, so the trees inside are uniquely referenced and change in place.
        var currentName: String?
        var current = EntityRecords()
        func putBack() {
            guard let currentName else { return }
            for i in current.indexes.indices { current.indexes[i].refreshHint() }
            entities[currentName] = current
        }
        func switchTo(_ name: String) -> Bool {
            if currentName == name { return true }
            putBack()
            guard let records = entities.removeValue(forKey: name) else {
                currentName = nil
                return false
            }
            currentName = name
            current = records
            return true
        }
        for (name, key) in prepared.deletes {
            guard switchTo(name) else {
                replacedRows?.append(nil)
                continue
            }
            let removed = current.rows.removeValue(forKey: key)
            replacedRows?.append(removed)
            if let row = removed, let old = replacedSnapshot(row, name, key, prepared) {
                for i in current.indexes.indices {
                    _ = current.indexes[i].tree.removeValue(forKey: current.indexes[i].entryKey(old, primaryKey: key))
                }
            }
        }
        for (position, (name, key, snapshot, isInsert)) in prepared.writes.enumerated() {
            guard switchTo(name) else {
                if !isInsert { replacedRows?.append(nil) }
                continue
            }
            let row = prepared.storedRows?.row(at: position) ?? .snapshot(snapshot)
            let replaced = current.rows.updateValue(row, forKey: key)
            if !isInsert { replacedRows?.append(replaced) }
            let old = replaced.flatMap { replacedSnapshot($0, name, key, prepared) }
            for i in current.indexes.indices {
                // An update that leaves the indexed values alone leaves the entry alone.
                if let old,
                    current.indexes[i].columns.allSatisfy({ column in
                        column < old.values.count && column < snapshot.values.count
                            && Self.sameIndexKey(old.values[column], snapshot.values[column])
                    })
                {
                    continue
                }
                let newKey = current.indexes[i].entryKey(snapshot, primaryKey: key)
                if let old {
                    let oldKey = current.indexes[i].entryKey(old, primaryKey: key)
                    if oldKey == newKey { continue }
                    if current.indexes[i].tree.value(forKey: oldKey) == key {
                        _ = current.indexes[i].tree.removeValue(forKey: oldKey)
                    }
                }
                _ = current.indexes[i].tree.updateValue(key, forKey: newKey)
                // Entries the save replaced or deleted stay in the hint: its readers check
                // each candidate.
                current.indexes[i].hint?.insert(newKey, primaryKey: key)
            }
        }
        putBack()
        nextPrimaryKey = Swift.max(nextPrimaryKey, prepared.nextPrimaryKey)
    }

    /// The records of a save of at least 1024 inserts and no deletes into entities that
    /// hold no record, by entity in ascending key order; `nil` for any other save. A save
    /// to one entity hands on its arrays of keys, snapshots and locations as they are.
    func bulkInserts(_ prepared: PreparedSave) -> [String: SortedRecords]? {
        let writes = prepared.writes
        guard prepared.deletes.isEmpty, writes.count >= 1024 else { return nil }
        let locations: [RowLocation]?
        switch prepared.storedRows {
        case nil: locations = nil
        case .locations(let stored):
            guard stored.count == writes.count else { return nil }
            locations = stored
        case .rows: return nil
        }
        let keys = writes.keys
        let allWrites = 0..<writes.count
        var result: [String: SortedRecords] = [:]
        for (name, positions) in writes.entityRuns {
            guard let records = entities[name], records.rows.isEmpty else { return nil }
            var run = result.removeValue(forKey: name) ?? SortedRecords()
            var previous = run.keys.last
            for position in positions {
                guard writes.isInsert(at: position), previous.map({ $0 < keys[position] }) ?? true else { return nil }
                previous = keys[position]
            }
            if positions == allWrites {
                run = SortedRecords(keys: keys, snapshots: writes.snapshots, locations: locations ?? [])
            } else {
                run.keys += keys[positions]
                run.snapshots += writes.snapshots[positions]
                if let locations { run.locations += locations[positions] }
            }
            result[name] = run
        }
        return result
    }

    /// Whether `old` and `new` hold the same values, as index keys see them, in every
    /// column of `indexes`.
    static func sameUniqueValues(_ indexes: [EntityIndex], _ old: [SnapshotValue], _ new: [SnapshotValue]) -> Bool {
        for index in indexes.indices {
            for column in indexes[index].columns {
                guard column < old.count, column < new.count, sameIndexKey(old[column], new[column]) else {
                    return false
                }
            }
        }
        return true
    }

    /// Whether two values certainly encode to the same index key component. Stricter than
    /// `==`: strings compare by their UTF-8 bytes (index keys do not normalize, `==` does),
    /// and decimals and anything nested are never taken as the same.
    static func sameIndexKey(_ a: SnapshotValue, _ b: SnapshotValue) -> Bool {
        switch (a, b) {
        case (.string(var x), .string(var y)):
            // Byte equality, as the index keys compare; contiguous UTF-8 for memcmp.
            guard x.utf8.count == y.utf8.count else { return false }
            return x.withUTF8 { a in
                y.withUTF8 { b in
                    guard let pa = a.baseAddress, let pb = b.baseAddress else { return a.count == b.count }
                    return memcmp(pa, pb, a.count) == 0
                }
            }
        case (.decimal, _), (.array, _), (.object, _), (.url, _): return false
        default: return a == b
        }
    }

    /// Removes every record.
    public mutating func removeAll() {
        let source = self.source
        self = SnapshotTable(schema: schema, storeIdentifier: storeIdentifier)
        self.source = source
    }
}
