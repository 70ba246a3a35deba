import Foundation
import IndexKey
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
            DataStoreSaveChangesRequest<DefaultSnapshot>(
                editingState: EditingState(), inserted: snapshots, updated: [], deleted: []))
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
                    DataStoreSaveChangesRequest<DefaultSnapshot>(
                        editingState: EditingState(), inserted: all, updated: [], deleted: [])))
                != nil)
        try Self.save(all, into: &bulk)

        var stepwise = SnapshotTable(schema: Self.schema, storeIdentifier: "s")
        try Self.save(Array(all.prefix(1)), into: &stepwise)
        let rest = Array(all.dropFirst())
        #expect(
            try stepwise.bulkInserts(
                stepwise.prepare(
                    DataStoreSaveChangesRequest<DefaultSnapshot>(
                        editingState: EditingState(), inserted: rest, updated: [], deleted: []))
            ) == nil)
        try Self.save(rest, into: &stepwise)

        #expect(bulk.count == 3000)
        #expect(bulk.nextPrimaryKey == stepwise.nextPrimaryKey)
        #expect(Self.trees(bulk) == Self.trees(stepwise))
        // The unique index finds the record after a bulk save: inserting the same values
        // again is an upsert onto it, not a new record.
        let again = try bulk.prepare(
            DataStoreSaveChangesRequest<DefaultSnapshot>(
                editingState: EditingState(), inserted: Array(all.prefix(1)), updated: [], deleted: []))
        #expect(again.writes.map(\.key) == [1] && again.writes.map(\.isInsert) == [false])
    }

    /// The bulk load's sort compares 16 bytes after the bytes all keys share, and whole keys
    /// only on ties: it must order exactly as the keys' own order, ties by position.
    @Test func sortedOrderMatchesTheKeysOwnOrder() {
        var rng = SeededRandom.fromEnvironment()
        let shapes: [[[UInt8]]] = [
            // Keys that are prefixes of each other, with zero bytes where padding would go.
            [[1, 2], [1, 2, 0], [1, 2, 0, 0], [1], [], [1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 1], [1, 2, 0, 0]],
            // A long shared prefix, then differences past the first 8 bytes after it.
            (0..<300).map { i in [7, 7, 7, 7, 7] + [UInt8](repeating: 3, count: 9) + [UInt8(i % 13), UInt8(i % 5)] },
            // Keys that differ in their first byte and then only after sixteen more: the
            // 16 bytes the sort reads first leave runs tied, which the whole keys settle.
            (0..<400).map { i in [UInt8(i % 3)] + [UInt8](repeating: 9, count: 16) + [UInt8(i % 11), UInt8(i % 2)] },
            // Random keys of random lengths over a small alphabet: many ties and prefixes.
            (0..<2000).map { _ in
                (0..<Int.random(in: 0...12, using: &rng)).map { _ in UInt8.random(in: 0...2, using: &rng) }
            },
            // Random bytes after a shared tag, as a UUID index has: every byte of the
            // prefix decides, and the radix sort makes all eight passes.
            (0..<5000).map { _ in [9] + (0..<16).map { _ in UInt8.random(in: 0...255, using: &rng) } },
            // Few distinct prefixes and the rest past them, as an index on a string of
            // a hundred values has: long runs of one prefix, ordered by the rest.
            (0..<3000).map { i in [4] + Array("Destination \(i % 7)".utf8) + [0, UInt8(i % 251), UInt8(i % 3)] },
        ]
        for (number, shape) in shapes.enumerated() {
            let keys = shape.map { IndexKey(bytes: $0) }
            let expected: [Int] = keys.indices.sorted { (a: Int, b: Int) -> Bool in
                if keys[a] != keys[b] { return keys[a] < keys[b] }
                return a < b
            }
            #expect(SnapshotTable.sortedOrder(of: keys) == expected, "seed \(rng.seed), shape \(number)")
        }
    }

    /// Snapshots read in order step a cursor through the key directory while the
    /// identifiers are neighbours there; whatever the order, the answer must be what
    /// looking each identifier up gives.
    @Test func snapshotsInOrderMatchOneByOneLookUps() throws {
        var table = SnapshotTable(schema: Self.schema, storeIdentifier: "s")
        try Self.save(Self.people(0..<3000), into: &table)
        let person = try #require(table.scopes["Person"])
        func id(_ key: Int64) -> PersistentIdentifier { .permanent(in: person, primaryKey: key) }
        let keys = try #require(table.entities["Person"]).rows.map(\.key)
        let doomed = try #require(try table.snapshot(for: id(keys[100])))
        table.apply(
            try table.prepare(
                DataStoreSaveChangesRequest<DefaultSnapshot>(
                    editingState: EditingState(), inserted: [], updated: [], deleted: [doomed]))
        )
        let orders: [[PersistentIdentifier]] = [
            keys.map(id),  // in key order, with one deleted on the way
            keys.reversed().map(id),
            [id(keys[5]), id(keys[6]), id(keys[6]), id(keys[7]), id(keys[3]), id(keys[4]), id(999_999)],
            [.permanent(entityName: "Chore", storeIdentifier: "s", primaryKey: keys[0]), id(keys[0]), id(keys[1])],
            [.permanent(entityName: "Person", storeIdentifier: "elsewhere", primaryKey: keys[0]), id(keys[1])],
            // Scopes taking turns: each run is judged by its own store and entity.
            [
                id(keys[1]), .permanent(entityName: "Chore", storeIdentifier: "s", primaryKey: keys[2]), id(keys[2]),
                .permanent(entityName: "Person", storeIdentifier: "elsewhere", primaryKey: keys[3]), id(keys[3]),
            ],
        ]
        for ids in orders {
            let expected = try ids.map { try table.snapshot(for: $0) }
            #expect(try table.snapshotsInOrder(for: ids) == expected)
        }
    }
    /// A request that writes one record more than once (an insert updated in the same save,
    /// a stored record updated twice) stores the last values once, and the unique values
    /// it gave up are free again while the ones it took are taken.
    @Test func aRecordWrittenTwiceInOneSaveKeepsTheLastValuesAndUniqueClaims() throws {
        let entity = try #require(Self.schema.entitiesByName["Person"])
        let email = try #require(entity.property(named: "email")).index
        let age = try #require(entity.property(named: "age")).index
        func with(_ snapshot: DefaultSnapshot, _ changes: [Int: SnapshotValue]) -> DefaultSnapshot {
            var values = snapshot.values
            for (index, value) in changes { values[index] = value }
            return DefaultSnapshot(persistentIdentifier: snapshot.persistentIdentifier, values: values)
        }
        var table = SnapshotTable(schema: Self.schema, storeIdentifier: "s")
        let first = try table.prepare(
            DataStoreSaveChangesRequest<DefaultSnapshot>(
                editingState: EditingState(), inserted: Self.people(0..<3), updated: [], deleted: []))
        table.apply(first)
        let stored = zip(Self.people(0..<3), first.insertedIdentifiers).map {
            DefaultSnapshot(persistentIdentifier: $1, values: $0.values)
        }
        let newcomer = Self.people(10..<11)[0]
        let second = try table.prepare(
            DataStoreSaveChangesRequest<DefaultSnapshot>(
                editingState: EditingState(), inserted: [newcomer],
                updated: [
                    with(newcomer, [age: .int(50)]),
                    with(stored[1], [age: .int(100)]),
                    with(stored[1], [age: .int(200), email: .string("moved@example.com")]),
                ],
                deleted: [], uniquenessPolicy: .fail))
        #expect(second.writes.count == 2)
        table.apply(second)
        #expect(table.count == 4)
        let newcomerKey = try #require(second.insertedIdentifiers.first?.primaryKey)
        #expect(try table.stored("Person", newcomerKey)?.values[age] == .int(50))
        let movedKey = try #require(stored[1].persistentIdentifier.primaryKey)
        let moved = try #require(try table.stored("Person", movedKey))
        #expect(moved.values[age] == .int(200))
        #expect(moved.values[email] == .string("moved@example.com"))

        // The old email is free; the new one belongs to the moved record.
        let reuse = with(Self.people(20..<21)[0], [email: stored[1].values[email]])
        #expect(
            throws: Never.self,
            performing: {
                try table.prepare(
                    DataStoreSaveChangesRequest<DefaultSnapshot>(
                        editingState: EditingState(), inserted: [reuse], updated: [], deleted: [],
                        uniquenessPolicy: .fail))
            })
        let clash = with(Self.people(21..<22)[0], [email: .string("moved@example.com")])
        #expect(throws: SwiftDataError.self) {
            try table.prepare(
                DataStoreSaveChangesRequest<DefaultSnapshot>(
                    editingState: EditingState(), inserted: [clash], updated: [], deleted: [], uniquenessPolicy: .fail))
        }
    }
}
