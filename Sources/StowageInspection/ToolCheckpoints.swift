import Foundation
import IndexKey
import Stowage

/// One checkpoint record of a log file (format versions 3 and 4), for `inspect`.
package struct ToolCheckpoint: Sendable, Equatable {
    package var offset: Int64
    /// Frame and stored payload: the bytes the record takes in the file.
    package var recordLength: Int64
    package var payloadLength: Int64
    package var isCompressed: Bool
    /// The last transaction before it, as the checkpoint records it (0 for none).
    package var transactionID: UInt64
    package var nextPrimaryKey: Int64
    /// The live records it lists, over every entity.
    package var records: Int
    /// The commits after it in the valid prefix.
    package var commitsAfter: Int
}

extension ToolVerifier {
    /// What a checkpoint must describe: the store as the commits before it leave it.
    struct CheckpointExpectation {
        /// The last commit's transaction identifier (0 when no commit comes first).
        var transactionID: UInt64
        var nextPrimaryKey: Int64
        /// Every write and delete of the commits before it (a version 4 checkpoint counts them).
        var versions: Int64
        /// The live records by entity name, in primary-key order, with their locations in
        /// a version 4 file; an entity without any may be absent.
        var records: [String: [ToolRecord]]
    }

    /// Where a checkpoint (`Formats/log.md`, format versions 3 and 4) disagrees with the
    /// records the commits before it leave: its transaction identifier and next primary
    /// key; in version 4 its number of record versions (every write and delete before it);
    /// the entities it lists (those with a live record, no other) and their live keys; in
    /// version 4 its key directory (each live key's location: the block and slot of the
    /// last write of that key); and for each index, in the store's order
    /// (``ToolIndex/storeOrder(of:)``), exactly the entries computed from the live records,
    /// key bytes and primary keys in ascending key order. One problem per disagreement,
    /// each at the checkpoint's offset. (Decoding has already checked what the payload
    /// says by itself: entities in schema range and ascending, ascending keys and entries,
    /// one entry per record in every index, locations inside the file.)
    static func checkpointProblems(
        _ checkpoint: LogCheckpoint, at offset: Int64, expected: CheckpointExpectation, schema: ToolSchema,
        blobs: ToolExternalReader
    ) -> [ToolProblem] {
        var problems: [String] = []
        if checkpoint.transactionID != expected.transactionID {
            problems.append(
                "covers transaction \(checkpoint.transactionID), but "
                    + (expected.transactionID == 0
                        ? "no commit comes before it (that is transaction 0)"
                        : "the commits before it end with transaction \(expected.transactionID)"))
        }
        if checkpoint.nextPrimaryKey != expected.nextPrimaryKey {
            problems.append(
                "gives next primary key \(checkpoint.nextPrimaryKey), but the commits before it give "
                    + "\(expected.nextPrimaryKey)")
        }
        if let versions = checkpoint.versions, versions != expected.versions {
            problems.append(
                "counts \(plural(Int(clamping: versions), "record version")), but the commits before it hold "
                    + "\(expected.versions) (their writes and deletes)")
        }
        var listed: [Int: LogCheckpoint.Entity] = [:]
        for entity in checkpoint.entities { listed[entity.entityIndex] = entity }
        for (entityIndex, entity) in schema.entities.enumerated() {
            let records = expected.records[entity.name] ?? []
            guard let stored = listed[entityIndex] else {
                if !records.isEmpty {
                    problems.append(
                        "leaves out \(entity.name), which has \(plural(records.count, "live record")) there")
                }
                continue
            }
            guard !records.isEmpty else {
                problems.append(
                    "lists \(plural(stored.keys.count, "\(entity.name) record")), but none is live there")
                continue
            }
            let keys = records.map(\.key)
            guard stored.keys == keys else {
                problems.append(keyDifference(entity.name, listed: stored.keys, live: keys))
                // Its entries cannot agree either; the keys are the problem to fix.
                continue
            }
            if let locations = stored.locations, let problem = locationDifference(entity.name, locations, records) {
                problems.append(problem)
            }
            if let external = stored.external, let problem = externalDifference(entity.name, external, records) {
                problems.append(problem)
            }
            for (index, entries) in zip(ToolIndex.storeOrder(of: entity), stored.indexes) {
                if let problem = entryDifference(index, entries, records, blobs) { problems.append(problem) }
            }
        }
        return problems.map { ToolProblem(offset: offset, message: "the checkpoint at offset \(offset) " + $0) }
    }

    /// How a checkpoint's keys of one entity differ from the live ones.
    private static func keyDifference(_ name: String, listed: [Int64], live: [Int64]) -> String {
        let listedSet = Set(listed)
        let liveSet = Set(live)
        let missing = live.filter { !listedSet.contains($0) }
        let extra = listed.filter { !liveSet.contains($0) }
        func first(_ keys: [Int64]) -> String {
            "\(keys[0])" + (keys.count > 1 ? " and \(keys.count - 1) more" : "")
        }
        var parts: [String] = []
        if !missing.isEmpty { parts.append("it leaves out \(first(missing))") }
        if !extra.isEmpty { parts.append("it lists \(first(extra)), which \(extra.count > 1 ? "are" : "is") not live") }
        return "lists \(plural(listed.count, "\(name) key")) where \(live.count) \(live.count == 1 ? "is" : "are") "
            + "live: \(parts.joined(separator: " and "))"
    }

    /// How a version 4 checkpoint's key directory of one entity differs from where the
    /// commits before it leave the live records (the same keys, in the same order).
    private static func locationDifference(_ name: String, _ locations: [RecordLocation], _ records: [ToolRecord])
        -> String?
    {
        var differing: [Int] = []
        for (position, record) in records.enumerated()
        where position >= locations.count || record.location != locations[position] {
            differing.append(position)
        }
        guard let first = differing.first else { return nil }
        let record = records[first]
        let listed = first < locations.count ? "\(locations[first])" : "no location"
        let actual = record.location.map { "\($0)" } ?? "no location (its commit has no blocks)"
        return "gives \(name) \(record.key) the location \(listed), where the commits before it leave it at "
            + actual
            + (differing.count > 1
                ? " (\(plural(differing.count - 1, "more \(name) location")) \(differing.count == 2 ? "differs" : "differ"))"
                : "")
    }

    /// How a version 4 checkpoint's external value references of one entity differ from
    /// the ones the commits before it leave (the same keys, in the same order).
    private static func externalDifference(
        _ name: String, _ listed: [[LogExternalReference?]], _ records: [ToolRecord]
    ) -> String? {
        var differing: [Int] = []
        for (position, record) in records.enumerated() {
            let stored = position < listed.count ? listed[position].compactMap { $0 } : []
            let live = record.external.keys.sorted().compactMap { record.external[$0]?.reference }
            if stored != live { differing.append(position) }
        }
        guard let first = differing.first else { return nil }
        return "gives \(name) \(records[first].key) other external value references than the commits before it "
            + "leave" + (differing.count > 1 ? " (and \(plural(differing.count - 1, "more \(name) record")))" : "")
    }

    /// The first entry of a checkpoint's index that differs from the entries the live
    /// records give, or `nil` when they are the same.
    private static func entryDifference(
        _ index: ToolIndex, _ entries: LogCheckpoint.Entries, _ records: [ToolRecord], _ blobs: ToolExternalReader
    ) -> String? {
        var computed: [(key: IndexKey, primaryKey: Int64)] = []
        computed.reserveCapacity(records.count)
        for record in records {
            guard let values = blobs.values(of: record, for: index) else {
                // An external value whose file is gone (a later save replaced it and the
                // store collected it): the keys cannot be computed, the records still can.
                guard entries.primaryKeys.sorted() == records.map(\.key) else {
                    return "holds entries of the \(index.kind) \(index.label) for other records than the live ones"
                }
                return nil
            }
            computed.append((index.entryKey(values, primaryKey: record.key), record.key))
        }
        computed.sort { $0.key != $1.key ? $0.key < $1.key : $0.primaryKey < $1.primaryKey }
        let count = min(entries.keys.count, entries.primaryKeys.count)
        for position in 0..<max(count, computed.count) {
            let stored = position < count ? (entries.keys[position], entries.primaryKeys[position]) : nil
            let wanted = position < computed.count ? computed[position] : nil
            if let stored, let wanted, stored.0 == wanted.key, stored.1 == wanted.primaryKey { continue }
            func describe(_ entry: (IndexKey, Int64)?) -> String {
                guard let entry else { return "nothing" }
                return "key \(hex(entry.0)) for \(index.entityName) \(entry.1)"
            }
            return "has entry \(position + 1) of the \(index.kind) \(index.label) wrong: it holds "
                + "\(describe(stored)), where the records give \(describe(wanted.map { ($0.key, $0.primaryKey) }))"
        }
        return nil
    }

    /// A key's bytes in hexadecimal, the first 32 of them.
    private static func hex(_ key: IndexKey) -> String {
        let digits = Array("0123456789abcdef")
        var text = ""
        for byte in key.bytes.prefix(32) {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 15)])
        }
        return key.bytes.count > 32 ? text + "… (\(key.bytes.count) bytes)" : text
    }

    private static func plural(_ count: Int, _ noun: String) -> String {
        "\(count) \(noun)\(count == 1 ? "" : "s")"
    }
}
