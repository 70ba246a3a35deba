import BTree

/// Rebuilds a ``SnapshotTable`` from a log's commits at open.
///
/// Applying each commit to the table inserts every record into the primary-key tree and
/// each index one at a time, which is most of the cost of opening. Instead the commits are
/// folded into the latest version of each live record, and the trees are then bulk-loaded
/// from sorted entries, once, at the end.
struct LogReplay {
    private var live: [String: [Int64: DefaultSnapshot]] = [:]
    /// The external references of live records (format version 2), whose value slots
    /// hold `.null` until ``resolveExternalValues(_:)`` reads them.
    private(set) var references: [String: [Int64: [LogExternalReference]]] = [:]
    private(set) var nextPrimaryKey: Int64 = 1
    /// Every write and delete replayed: the record versions in the file.
    private(set) var versions: Int64 = 0

    /// Applies one commit: its deletes, then its writes in order, then its next key.
    mutating func add(_ commit: LogCommit) {
        versions += Int64(commit.deletes.count + commit.writes.count)
        for (entity, key) in commit.deletes {
            live[entity]?.removeValue(forKey: key)
            references[entity]?.removeValue(forKey: key)
        }
        for (position, (entity, key, snapshot, _)) in commit.writes.enumerated() {
            live[entity, default: [:]][key] = snapshot
            if let found = commit.externalReferences[position] {
                references[entity, default: [:]][key] = found
            } else if references[entity]?[key] != nil {
                references[entity]?.removeValue(forKey: key)
            }
        }
        nextPrimaryKey = max(nextPrimaryKey, commit.nextPrimaryKey)
    }

    /// Puts the bytes of every live external value into its record's slot.
    mutating func resolveExternalValues(
        _ load: (_ entity: String, _ key: Int64, _ reference: LogExternalReference) throws -> Data
    ) throws {
        for (entity, byKey) in references {
            for (key, found) in byKey {
                guard var snapshot = live[entity]?[key] else { continue }
                for reference in found where reference.property < snapshot.values.count {
                    snapshot.values[reference.property] = .data(try load(entity, key, reference))
                }
                live[entity]?[key] = snapshot
            }
        }
    }

    /// The table holding every live record, with its indexes.
    func table(schema: Schema, storeIdentifier: String) -> SnapshotTable {
        var table = SnapshotTable(schema: schema, storeIdentifier: storeIdentifier)
        table.bulkLoad(live)
        table.nextPrimaryKey = max(table.nextPrimaryKey, nextPrimaryKey)
        return table
    }
}

extension SnapshotTable {
    /// Fills empty entities' primary-key trees and indexes from `live` records, by bulk
    /// loading sorted entries. Records of an entity the schema lacks are skipped (the
    /// decoder maps entities by the stored schema, which matches this one).
    mutating func bulkLoad(_ live: [String: [Int64: DefaultSnapshot]]) {
        for (name, byKey) in live where !byKey.isEmpty {
            guard var records = entities.removeValue(forKey: name) else { continue }
            let sorted = byKey.sorted { $0.key < $1.key }
            records.rows = BTree(sortedElements: sorted.lazy.map { ($0.key, $0.value) })
            for i in records.indexes.indices {
                let index = records.indexes[i]
                var entries = sorted.map { (key: index.entryKey($0.value, primaryKey: $0.key), pk: $0.key) }
                // Index keys are distinct (a non-unique index appends the primary key), so a
                // plain sort orders them; should two be equal, the tree's own stable sort
                // takes over and keeps the later one, as applying saves would.
                entries.sort { $0.key < $1.key }
                records.indexes[i].tree = BTree(sortedElements: entries.lazy.map { ($0.key, $0.pk) })
            }
            entities[name] = records
        }
    }
}
