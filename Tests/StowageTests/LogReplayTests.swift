import Foundation
import StowageTestSupport
import Testing

@_spi(Testing) @testable import Stowage

@Suite("LogStore replay at open")
struct LogReplayTests {
    static let schema = Schema([Chore.self, Person.self])

    /// Every tree of the table: primary keys with their snapshots, and each index's entries.
    static func trees(_ store: LogStore) throws -> [String: [String]] {
        try store.table.withLock { table in
            var result: [String: [String]] = [:]
            for (name, records) in table.entities {
                var rows: [String] = []
                for (key, row) in records.rows {
                    rows.append("\(key)=\(try table.resolve(row, entity: name, key: key).values)")
                }
                result[name + ".rows"] = rows
                for index in records.indexes {
                    result[name + "." + index.description] = index.tree.map { "\($0.key)=\($0.value)" }
                }
            }
            return result
        }
    }

    static func logStore(_ container: ModelContainer) throws -> LogStore {
        try #require(container.storesForTesting.first as? LogStore)
    }

    /// Opening bulk-loads the trees from the log; they must equal the ones the saves built
    /// one change at a time, after inserts, updates that move index keys, and deletes.
    @Test func openBuildsTheSameTreesAsTheSaves() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let configuration = LogStoreConfiguration(schema: Self.schema, url: directory.storeURL)
        var random = SeededRandom(seed: 0x5EED_0F_10C)
        var before: [String: [String]] = [:]
        var nextKey: Int64 = 0
        do {
            let container = try ModelContainer(for: Self.schema, configurations: [configuration])
            let context = ModelContext(container)
            var chores: [Chore] = []
            var people: [Person] = []
            for round in 0..<12 {
                for i in 0..<40 {
                    let chore = Chore(
                        seq: round * 100 + i, title: "t\(Int.random(in: 0..<30, using: &random))",
                        priority: Int.random(in: 0..<6, using: &random), isCompleted: Bool.random(using: &random),
                        dueDate: Bool.random(using: &random)
                            ? Date(timeIntervalSince1970: Double(Int.random(in: 0..<1000, using: &random))) : nil)
                    context.insert(chore)
                    chores.append(chore)
                }
                let person = Person(email: "p\(round)@x", name: "n\(round % 4)", age: round)
                context.insert(person)
                people.append(person)
                for chore in chores where Int.random(in: 0..<5, using: &random) == 0 {
                    chore.priority = Int.random(in: 0..<6, using: &random)
                    chore.isCompleted.toggle()
                    if Bool.random(using: &random) { chore.title += "!" }
                }
                if round % 3 == 2, let person = people.first {
                    person.age += 100
                }
                for _ in 0..<8 where !chores.isEmpty {
                    context.delete(chores.remove(at: Int.random(in: 0..<chores.count, using: &random)))
                }
                try context.save()
            }
            let store = try Self.logStore(container)
            before = try Self.trees(store)
            nextKey = store.table.withLock { $0.nextPrimaryKey }
        }
        let container = try ModelContainer(for: Self.schema, configurations: [configuration])
        let store = try Self.logStore(container)
        #expect(try Self.trees(store) == before)
        #expect(store.table.withLock { $0.nextPrimaryKey } == nextKey)
        #expect(before["Chore.rows"]?.count == 12 * 32)
        // Queries that the planner answers from the reloaded indexes.
        let context = ModelContext(container)
        let open = try context.fetch(
            FetchDescriptor<Chore>(
                predicate: #Predicate { !$0.isCompleted && $0.priority > 3 }, sortBy: [SortDescriptor(\.seq)]))
        #expect(open.allSatisfy { !$0.isCompleted && $0.priority > 3 })
        #expect(!open.isEmpty)
        #expect(try context.fetchCount(FetchDescriptor<Person>(predicate: #Predicate { $0.email == "p0@x" })) == 1)
    }

    /// The fold at open equals applying every commit to a dictionary, whatever the order
    /// of keys: ascending inserts, writes below the end, deletes, deletes of keys never
    /// written, writes after deletes, and external references that follow their version.
    @Test func theFoldEqualsApplyingEveryCommitInTurn() throws {
        var random = SeededRandom.fromEnvironment()
        let seed = random.seed
        for _ in 0..<200 {
            var replay = LogReplay()
            var expected: [Int64: (Double, Bool)] = [:]
            var nextKey: Int64 = 1
            for transaction in 1...Int.random(in: 1...12, using: &random) {
                var commit = LogCommit(
                    transactionID: UInt64(transaction), timestamp: 0, author: nil, nextPrimaryKey: 1, deletes: [],
                    writes: [])
                for _ in 0..<Int.random(in: 0...4, using: &random) {
                    let key = Int64.random(in: 1...(nextKey + 3), using: &random)
                    commit.deletes.append(("Trip", key))
                }
                for _ in 0..<Int.random(in: 0...8, using: &random) {
                    let key: Int64
                    if Bool.random(using: &random) {
                        key = nextKey
                        nextKey += Int64.random(in: 1...3, using: &random)
                    } else {
                        key = Int64.random(in: 1...(nextKey + 3), using: &random)
                    }
                    let budget = Double(Int.random(in: 0..<1000, using: &random))
                    let external = Bool.random(using: &random)
                    if external {
                        commit.externalReferences[commit.writes.count] = [
                            LogExternalReference(
                                property: 0, transactionID: UInt64(transaction), byteCount: 1, checksum: 0)
                        ]
                    }
                    let snapshot = DefaultSnapshot(
                        persistentIdentifier: .permanent(entityName: "Trip", storeIdentifier: "s", primaryKey: key),
                        values: [.double(budget)])
                    commit.writes.append(("Trip", key, snapshot, true))
                }
                for (_, key) in commit.deletes { expected[key] = nil }
                for (position, write) in commit.writes.enumerated() {
                    guard case .double(let budget) = write.snapshot.values[0] else { continue }
                    expected[write.key] = (budget, commit.externalReferences[position] != nil)
                }
                replay.add(commit)
            }
            replay.finish()
            let folded = replay.liveRecords["Trip"] ?? LogReplay.Records()
            let wantKeys = expected.keys.sorted()
            #expect(folded.keys == wantKeys, "seed \(seed)")
            #expect(
                folded.snapshots.map { $0.values } == wantKeys.map { [.double(expected[$0]!.0)] }, "seed \(seed)")
            let withReferences = Set((replay.references["Trip"] ?? [:]).keys)
            #expect(withReferences == Set(wantKeys.filter { expected[$0]!.1 }), "seed \(seed)")
            if folded.keys != wantKeys { return }
        }
    }
}
