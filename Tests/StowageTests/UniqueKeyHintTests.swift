import BTree
import Foundation
import IndexKey
import StowageTestSupport
import Testing

@_spi(Testing) @testable import Stowage

extension UniqueKeyHint {
    /// Every primary key the table holds for `key`, in the order they were entered.
    func candidates(for key: IndexKey) -> [Int64] {
        var all: [Int64] = []
        _ = firstMatch(for: key) { (candidate: Int64) -> Bool? in
            all.append(candidate)
            return nil
        }
        return all
    }
}

/// The hash table beside a one-column unique index (`UniqueKeyHint`) only gives
/// candidates: whatever it holds, a fetch by a unique value must find what the tree finds.
@Suite("Unique key hint")
struct UniqueKeyHintTests {
    static let schema = Schema([Person.self])

    static func key(_ text: String) -> IndexKey {
        var encoder = IndexKeyEncoder()
        EntityIndex.append(.string(text), to: &encoder)
        return encoder.key
    }

    /// Both widths of slot: 4 bytes (an 8-bit fingerprint) while the primary keys are
    /// small, 8 bytes (24 bits) after.
    @Test(arguments: [Int64(15_000), Int64(1) << 30])
    func givesBackWhatWasEntered(largestKey: Int64) {
        let hint = UniqueKeyHint(entries: 5000, largestKey: largestKey)
        #expect(hint.slotBytes == (largestKey < UniqueKeyHint.narrowBuildLimit ? 4 : 8))
        let base = largestKey - 15_000
        for i in 0..<5000 { hint.insert(Self.key("k\(i)"), primaryKey: base + Int64(i) * 3 + 1) }
        for i in 0..<5000 { #expect(hint.candidates(for: Self.key("k\(i)")).contains(base + Int64(i) * 3 + 1)) }
        // Values never entered give a candidate only when a fingerprint matches: about one
        // look-up in seventy with 8 bits at this load, one in millions with 24.
        let strays = (0..<5000).filter { !hint.candidates(for: Self.key("absent \($0)")).isEmpty }
        #expect(strays.count <= (hint.slotBytes == 4 ? 150 : 1), "\(strays.count)")
        #expect(!hint.needsRebuild)
    }

    /// A value entered for a second record keeps the first entry (the slot might have been
    /// another value's); the same entry twice takes one slot.
    @Test func aValueEnteredAgainKeepsBothRecordsInOrder() {
        let hint = UniqueKeyHint(entries: 10, largestKey: 10)
        hint.insert(Self.key("a"), primaryKey: 5)
        hint.insert(Self.key("a"), primaryKey: 9)
        hint.insert(Self.key("a"), primaryKey: 5)
        #expect(hint.candidates(for: Self.key("a")) == [5, 9])
        #expect(hint.firstMatch(for: Self.key("a")) { $0 == 9 ? "nine" : nil } == "nine")
    }

    @Test func keysItCannotHoldAreLeftToTheTree() {
        let hint = UniqueKeyHint(entries: 10, largestKey: 1 << 40)
        let long = Self.key(String(repeating: "x", count: 40))
        #expect(long.inlineHash == nil)
        hint.insert(long, primaryKey: 1)
        #expect(hint.candidates(for: long).isEmpty)
        hint.insert(Self.key("negative"), primaryKey: -1)
        hint.insert(Self.key("huge"), primaryKey: UniqueKeyHint.keyLimit)
        #expect(hint.candidates(for: Self.key("negative")).isEmpty)
        #expect(hint.candidates(for: Self.key("huge")).isEmpty)
        #expect(!hint.needsRebuild)
    }

    /// A primary key too large for 4-byte slots is not entered, and the table asks to be
    /// built again; built from a tree that holds such a key, its slots are 8 bytes.
    @Test func aKeyTooLargeForNarrowSlotsAsksForWideOnes() throws {
        let narrow = UniqueKeyHint(entries: 10, largestKey: 10)
        #expect(narrow.slotBytes == 4)
        narrow.insert(Self.key("far"), primaryKey: 1 << 24)
        #expect(narrow.candidates(for: Self.key("far")).isEmpty)
        #expect(narrow.needsRebuild)

        var tree = BTree<IndexKey, Int64>()
        for i in 0..<UniqueKeyHint.minimumEntries { tree.updateValue(Int64(i + 1), forKey: Self.key("v\(i)")) }
        #expect(try #require(UniqueKeyHint.build(tree)).slotBytes == 4)
        tree.updateValue(1 << 24, forKey: Self.key("far"))
        let wide = try #require(UniqueKeyHint.build(tree))
        #expect(wide.slotBytes == 8)
        #expect(wide.candidates(for: Self.key("far")) == [1 << 24])
        #expect(wide.candidates(for: Self.key("v7")) == [8])
        tree.removeValue(forKey: Self.key("far"))
        for i in UniqueKeyHint.minimumEntries / 2..<UniqueKeyHint.minimumEntries {
            tree.removeValue(forKey: Self.key("v\(i)"))
        }
        #expect(UniqueKeyHint.build(tree) == nil)
    }

    @Test func asksForARebuildWhenThreeQuartersFull() {
        let hint = UniqueKeyHint(entries: 100, largestKey: 1000)
        #expect(hint.capacity == 1024)
        for i in 0..<768 { hint.insert(Self.key("v\(i)"), primaryKey: Int64(i)) }
        #expect(!hint.needsRebuild)
        for i in 768..<800 { hint.insert(Self.key("v\(i)"), primaryKey: Int64(i)) }
        #expect(hint.needsRebuild)
    }

    // MARK: Through a table

    static func person(_ email: String, _ i: Int) -> DefaultSnapshot {
        let entity = schema.entitiesByName["Person"]!
        var values = [SnapshotValue](repeating: .null, count: entity.properties.count)
        values[entity.property(named: "email")!.index] = .string(email)
        values[entity.property(named: "name")!.index] = .string("Name \(i % 13)")
        values[entity.property(named: "age")!.index] = .int(Int64(i))
        return DefaultSnapshot(persistentIdentifier: .temporaryForTesting(entityName: "Person"), values: values)
    }

    static func save(
        _ table: inout SnapshotTable, inserted: [DefaultSnapshot] = [], updated: [DefaultSnapshot] = [],
        deleted: [DefaultSnapshot] = []
    ) throws {
        table.apply(
            try table.prepare(
                DataStoreSaveChangesRequest<DefaultSnapshot>(
                    editingState: EditingState(), inserted: inserted, updated: updated, deleted: deleted)))
    }

    /// The fetch by `email` (through the hint) and the tree's own answer.
    static func lookUp(_ email: String, in table: SnapshotTable) throws -> (fetched: [String], tree: [String]) {
        let query = try FetchQuery(FetchDescriptor<Person>(predicate: #Predicate { $0.email == email }), schema: schema)
        let records = table.entities["Person"]!
        let fetched = try table.fetch(query).map { "\($0.values[0])" }
        let tree = try (table.uniqueLookup(query, records) ?? nil).flatMap { key in
            try table.snapshot(for: table.identifier("Person", key))
        }
        return (fetched, tree.map { ["\($0.values[0])"] } ?? [])
    }

    static func hint(_ table: SnapshotTable) -> UniqueKeyHint? {
        table.entities["Person"]!.indexes.first { $0.columnNames == ["email"] }?.hint
    }

    @Test func fetchesFindWhatTheTreeFindsAfterUpdatesDeletesAndInserts() throws {
        var table = SnapshotTable(schema: Self.schema, storeIdentifier: "s")
        try Self.save(&table, inserted: (0..<3000).map { Self.person("p\($0)@example.com", $0) })
        let built = try #require(Self.hint(table))
        #expect(built.candidates(for: Self.key("p17@example.com")).count == 1)

        let before = table
        let stored = try table.allSnapshots(of: "Person").sorted {
            "\($0.values[1])\($0.values[2])" < "\($1.values[1])\($1.values[2])"
        }
        let email = Self.schema.entitiesByName["Person"]!.property(named: "email")!.index
        // Every seventh record takes a new address, every eleventh is deleted, and a new
        // record takes an address a deleted one had.
        var updated: [DefaultSnapshot] = []
        var deleted: [DefaultSnapshot] = []
        for (i, snapshot) in stored.enumerated() {
            if i % 11 == 0 {
                deleted.append(snapshot)
            } else if i % 7 == 0 {
                var values = snapshot.values
                values[email] = .string("moved \(i)@example.com")
                updated.append(DefaultSnapshot(persistentIdentifier: snapshot.persistentIdentifier, values: values))
            }
        }
        let reused = deleted[3].values[email]
        guard case .string(let reusedEmail) = reused else { throw CancellationError() }
        try Self.save(&table, updated: updated, deleted: deleted)
        try Self.save(&table, inserted: [Self.person(reusedEmail, 100_000)])
        #expect(Self.hint(table) === built)

        let emails =
            (0..<3000).map { "p\($0)@example.com" } + (0..<3000).map { "moved \($0)@example.com" } + ["nobody"]
        var found = 0
        for address in emails {
            let now = try Self.lookUp(address, in: table)
            #expect(now.fetched == now.tree, "\(address)")
            found += now.fetched.count
            // The older version shares the hint, which now holds the newer version's entries.
            let then = try Self.lookUp(address, in: before)
            #expect(then.fetched == then.tree, "\(address) before the saves")
        }
        #expect(found == table.count)
        #expect(try Self.lookUp(reusedEmail, in: table).fetched.count == 1)
    }

    /// A hint whose first candidate is the wrong record: the fetch passes it over. This
    /// fails if a fetch trusts the hint.
    @Test func aWrongCandidateIsNotReturned() throws {
        var table = SnapshotTable(schema: Self.schema, storeIdentifier: "s")
        try Self.save(&table, inserted: (0..<2000).map { Self.person("p\($0)@example.com", $0) })
        let position = try #require(table.entities["Person"]!.indexes.firstIndex { $0.columnNames == ["email"] })
        let tree = table.entities["Person"]!.indexes[position].tree
        let victim = Self.key("p5@example.com")
        let other = try #require(tree.value(forKey: Self.key("p6@example.com")))
        let forged = UniqueKeyHint(entries: tree.count, largestKey: 2000)
        forged.insert(victim, primaryKey: other)
        for (key, primaryKey) in tree { forged.insert(key, primaryKey: primaryKey) }
        table.entities["Person"]!.indexes[position].hint = forged
        #expect(forged.candidates(for: victim) == [other, try #require(tree.value(forKey: victim))])
        let result = try Self.lookUp("p5@example.com", in: table)
        #expect(result.fetched == ["\"p5@example.com\""])
        #expect(result.fetched == result.tree)
    }

    @Test func aSmallIndexHasNoHintUntilItGrowsAndLosesItWhenItShrinks() throws {
        var table = SnapshotTable(schema: Self.schema, storeIdentifier: "s")
        try Self.save(&table, inserted: (0..<10).map { Self.person("p\($0)@example.com", $0) })
        #expect(Self.hint(table) == nil)
        for start in stride(from: 10, to: 1100, by: 100) {
            try Self.save(&table, inserted: (start..<start + 100).map { Self.person("p\($0)@example.com", $0) })
        }
        let hint = try #require(Self.hint(table))
        for i in 0..<1110 {
            let result = try Self.lookUp("p\(i)@example.com", in: table)
            #expect(result.fetched.count == 1 && result.fetched == result.tree)
        }
        #expect(hint.candidates(for: Self.key("p1109@example.com")).count == 1)

        // Deleting all but 100 drops the hint, and fetches still find the rest.
        let age = Self.schema.entitiesByName["Person"]!.property(named: "age")!.index
        let doomed = try table.allSnapshots(of: "Person").filter {
            guard case .int(let age) = $0.values[age] else { return false }
            return age >= 100
        }
        #expect(doomed.count == 1010)
        try Self.save(&table, deleted: doomed)
        #expect(Self.hint(table) == nil)
        for i in 0..<200 {
            let result = try Self.lookUp("p\(i)@example.com", in: table)
            #expect(result.fetched.count == (i < 100 ? 1 : 0) && result.fetched == result.tree)
        }
    }

    /// A log store builds the hint when it opens, from its checkpoint or from its records.
    @Test(arguments: [false, true])
    func aReopenedLogStoreHasTheHint(checkpoint: Bool) throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        do {
            let (container, store) = try LogBlockReadTests.open(directory.storeURL, checkpointOnClose: checkpoint)
            try LogBlockReadTests.insertPeople(1500, into: container)
            store.close()
        }
        let (container, store) = try LogBlockReadTests.open(directory.storeURL, checkpointOnClose: false)
        #expect(store.withTable { Self.hint($0) } != nil)
        let context = ModelContext(container)
        for i in stride(from: 0, to: 1500, by: 7) {
            let email = "p\(i)@example.com"
            let people = try context.fetch(FetchDescriptor<Person>(predicate: #Predicate { $0.email == email }))
            #expect(people.map(\.email) == [email])
        }
    }
}
