import BTree
import Foundation
import IndexKey

/// Rebuilds a ``SnapshotTable`` from a log's commits at open.
///
/// Applying each commit to the table inserts every record into the primary-key directory and
/// each index one at a time, which is most of the cost of opening. Instead every record
/// version is appended to one list per entity, in file order; at the end each list is
/// ordered by key (already so for a compacted log or inserts alone, which costs one pass),
/// the last version of each key is kept, deleted keys are dropped, and the trees are
/// bulk-loaded from those sorted entries once.
package struct LogReplay {
    /// Every version of an entity's records, in file order, in parallel arrays.
    private struct EntityVersions {
        package var keys: [Int64] = []
        /// The version's snapshot; a delete's is an empty placeholder.
        package var snapshots: [DefaultSnapshot] = []
        /// Version 4: each version's location (a delete's is a placeholder).
        package var locations: [RecordLocation] = []
        /// Positions of deletes.
        package var deletes: Set<Int> = []
        /// External references by position.
        package var references: [Int: [LogExternalReference]] = [:]
        /// Whether the keys so far are strictly ascending with no deletes: then the lists
        /// are already the live records in key order.
        var isSimple = true

        package mutating func append(_ key: Int64, _ snapshot: DefaultSnapshot, _ location: RecordLocation?) {
            if isSimple, let last = keys.last, last >= key { isSimple = false }
            keys.append(key)
            snapshots.append(snapshot)
            if let location { locations.append(location) }
        }
    }

    /// The live records of an entity, in ascending key order.
    package typealias Records = SnapshotTable.SortedRecords

    private var entities: [String: EntityVersions] = [:]
    /// The live records by entity, once ``finish()`` has run.
    private var live: [String: Records] = [:]
    /// The external references of live records (format version 2), whose value slots
    /// hold `.null` until ``resolveExternalValues(_:)`` reads them.
    private(set) var references: [String: [Int64: [LogExternalReference]]] = [:]
    private(set) var nextPrimaryKey: Int64 = 1
    /// Every write and delete replayed: the record versions in the file.
    private(set) var versions: Int64 = 0
    /// Whether the commits carry locations (format versions 4 and 5): every write has one.
    let located: Bool

    package init(located: Bool = false) { self.located = located }

    /// Applies one commit: its deletes, then its writes in order, then its next key.
    package mutating func add(_ commit: LogCommit) {
        versions += Int64(commit.deletes.count + commit.writes.count)
        let hasLocations = located && commit.locations.count == commit.writes.count
        for (entity, key) in commit.deletes {
            entities[entity, default: EntityVersions()].deletes.insert(entities[entity]?.keys.count ?? 0)
            entities[entity]?.append(
                key,
                DefaultSnapshot(
                    persistentIdentifier: .permanent(entityName: entity, storeIdentifier: "", primaryKey: key),
                    values: []),
                located ? RecordLocation(blockOffset: 0, slot: 0) : nil)
            entities[entity]?.isSimple = false
        }
        // Writes come in runs of one entity: look each run's list up once.
        var currentName: String?
        var list = EntityVersions()
        for (position, (entity, key, snapshot, _)) in commit.writes.enumerated() {
            if currentName != entity {
                if let done = currentName { entities[done] = list }
                currentName = entity
                list = entities.removeValue(forKey: entity) ?? EntityVersions()
            }
            if let found = commit.externalReferences[position] { list.references[list.keys.count] = found }
            list.append(key, snapshot, hasLocations ? commit.locations[position] : nil)
        }
        if let done = currentName { entities[done] = list }
        nextPrimaryKey = max(nextPrimaryKey, commit.nextPrimaryKey)
    }

    /// Folds the versions into the live records; call once, after the last commit.
    package mutating func finish() {
        for name in Array(entities.keys) {
            guard let list = entities.removeValue(forKey: name) else { continue }
            if list.isSimple {
                for (position, found) in list.references { references[name, default: [:]][list.keys[position]] = found }
                live[name] = Records(keys: list.keys, snapshots: list.snapshots, locations: list.locations)
                continue
            }
            // A stable sort keeps file order among the versions of one key; the last wins.
            let keys = list.keys
            let order = keys.indices.sorted { a, b in keys[a] < keys[b] || (keys[a] == keys[b] && a < b) }
            var records = Records()
            records.keys.reserveCapacity(keys.count)
            records.snapshots.reserveCapacity(keys.count)
            let located = list.locations.count == keys.count
            var run = 0
            while run < order.count {
                var last = run
                while last + 1 < order.count, keys[order[last + 1]] == keys[order[run]] { last += 1 }
                let position = order[last]
                if !list.deletes.contains(position) {
                    records.keys.append(keys[position])
                    records.snapshots.append(list.snapshots[position])
                    if located { records.locations.append(list.locations[position]) }
                    if let found = list.references[position] { references[name, default: [:]][keys[position]] = found }
                }
                run = last + 1
            }
            live[name] = records
        }
    }

    /// Puts the bytes `load` gives for each live external value into its record's slot;
    /// a slot for which it gives `nil` keeps its `.null`.
    mutating func resolveExternalValues(
        _ load: (_ entity: String, _ key: Int64, _ reference: LogExternalReference) throws -> Data?
    ) throws {
        for (entity, byKey) in references {
            guard var records = live.removeValue(forKey: entity) else { continue }
            defer { live[entity] = records }
            for (key, found) in byKey {
                // Records are in key order.
                var low = 0
                var high = records.keys.count
                while low < high {
                    let mid = (low + high) / 2
                    if records.keys[mid] < key { low = mid + 1 } else { high = mid }
                }
                guard low < records.keys.count, records.keys[low] == key else { continue }
                for reference in found where reference.property < records.snapshots[low].values.count {
                    if let bytes = try load(entity, key, reference) {
                        records.snapshots[low].values[reference.property] = .data(bytes)
                    }
                }
            }
        }
    }

    /// The live records by entity, once ``finish()`` has run.
    package var liveRecords: [String: Records] { live }

    /// Converts every live record's values to the container's schema, once ``finish()``
    /// and the external values have run: the indexes are built from these values.
    mutating func convertLive(_ conversion: SchemaConversion) {
        for name in Array(live.keys) where conversion.entities[name] != nil {
            guard var records = live.removeValue(forKey: name) else { continue }
            for i in records.snapshots.indices {
                records.snapshots[i] = conversion.convert(records.snapshots[i], of: name)
            }
            live[name] = records
        }
    }

    /// The table holding every live record, with its indexes: taken from `indexEntries`
    /// (a checkpoint's, already checked against the records) where given, else computed.
    /// Records with locations (versions 4 and 5) are held by location, read back through `source`.
    package func table(
        schema: Schema, storeIdentifier: String, indexEntries: [String: [SnapshotTable.SortedEntries]] = [:],
        source: (any SnapshotSource)? = nil
    ) -> SnapshotTable {
        var table = SnapshotTable(schema: schema, storeIdentifier: storeIdentifier)
        table.source = source
        table.bulkLoad(sorted: live, indexEntries: indexEntries)
        table.nextPrimaryKey = max(table.nextPrimaryKey, nextPrimaryKey)
        return table
    }
}
