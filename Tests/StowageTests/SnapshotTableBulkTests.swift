import Foundation
import StowageTestSupport
import Testing

@_spi(Testing) @testable import Stowage

/// A large save of inserts into an empty entity builds its trees at once
/// (`SnapshotTable.apply`); the result must be the table that inserting one by one gives.
@Suite("SnapshotTable bulk inserts")
struct SnapshotTableBulkTests {
    static let schema = Schema([Person.self, Chore.self])

    static func people(_ range: Range<Int>) -> [DefaultSnapshot] {
        let entity = schema.entitiesByName["Person"]!
        return range.map { i in
            var values = [SnapshotValue](repeating: .null, count: entity.properties.count)
            values[entity.property(named: "email")!.index] = .string("p\((i * 7919) % 100_003)@example.com")
            values[entity.property(named: "name")!.index] = .string("Name \(i % 13)")
            values[entity.property(named: "age")!.index] = .int(Int64(i))
            return DefaultSnapshot(
                persistentIdentifier: .temporaryForTesting(entityName: "Person"), values: values)
        }
    }

    static func save(_ snapshots: [DefaultSnapshot], into table: inout SnapshotTable) throws {
        let prepared = try table.prepare(
            DataStoreSaveChangesRequest(editingState: EditingState(), inserted: snapshots, updated: [], deleted: []))
        table.apply(prepared)
    }

    static func trees(_ table: SnapshotTable) -> [String] {
        table.entities.sorted { $0.key < $1.key }.flatMap { name, records in
            [name + " " + records.rows.map { "\($0.key)=\(String(describing: $0.value))" }.joined(separator: ";")]
                + records.indexes.map { index in index.tree.map { "\($0.key.bytes)=\($0.value)" }.joined(separator: ";")
                }
        }
    }

    @Test func aBulkSaveBuildsTheTreesThatSavesOneByOneBuild() throws {
        var bulk = SnapshotTable(schema: Self.schema, storeIdentifier: "s")
        let all = Self.people(0..<3000)
        #expect(
            try bulk.bulkInserts(
                bulk.prepare(
                    DataStoreSaveChangesRequest(editingState: EditingState(), inserted: all, updated: [], deleted: [])))
                != nil)
        try Self.save(all, into: &bulk)

        var stepwise = SnapshotTable(schema: Self.schema, storeIdentifier: "s")
        try Self.save(Array(all.prefix(1)), into: &stepwise)
        let rest = Array(all.dropFirst())
        #expect(
            try stepwise.bulkInserts(
                stepwise.prepare(
                    DataStoreSaveChangesRequest(editingState: EditingState(), inserted: rest, updated: [], deleted: []))
            ) == nil)
        try Self.save(rest, into: &stepwise)

        #expect(bulk.count == 3000)
        #expect(bulk.nextPrimaryKey == stepwise.nextPrimaryKey)
        #expect(Self.trees(bulk) == Self.trees(stepwise))
        // The unique index finds the record after a bulk save: inserting the same values
        // again is an upsert onto it, not a new record.
        let again = try bulk.prepare(
            DataStoreSaveChangesRequest(
                editingState: EditingState(), inserted: Array(all.prefix(1)), updated: [], deleted: []))
        #expect(again.writes.map(\.key) == [1] && again.writes.map(\.isInsert) == [false])
    }
}
