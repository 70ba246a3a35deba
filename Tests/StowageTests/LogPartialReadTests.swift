import Foundation
import StowageTestSupport
import Testing

@_spi(Testing) @testable import Stowage

/// A model whose relationship may point at the record itself.
@Model
final class Sprout {
    var name: String
    var rank: Int
    var note: String
    var parent: Sprout?

    init(name: String, rank: Int, note: String) {
        self.name = name
        self.rank = rank
        self.note = note
    }
}

/// A count that scans records past a small cache decodes only the values its predicate
/// reads (`SnapshotSource.snapshot(entity:key:at:columns:)`).
@Suite("LogStore reads part of a record for a predicate")
struct LogPartialReadTests {
    static let schema = Schema([Sprout.self, IndexedBlob.self])
    static let count = 3000

    static func open(_ url: URL, cacheCapacity: Int) throws -> (container: ModelContainer, store: LogStore) {
        var configuration = LogStoreConfiguration(schema: schema, url: url)
        configuration.cacheCapacity = cacheCapacity
        configuration.automaticCompaction = nil
        let container = try ModelContainer(for: schema, configurations: [configuration])
        return (container, try #require(container.storesForTesting.first as? LogStore))
    }

    /// Sprout `i` has rank `i % 50` and the note "target" when `i % 7 == 0`; every tenth is
    /// its own parent, and the others after the first ten have sprout `i - 3` as theirs.
    static func write(at url: URL) throws {
        let (container, store) = try open(url, cacheCapacity: 32 << 20)
        let context = ModelContext(container)
        var sprouts: [Sprout] = []
        for i in 0..<count {
            let sprout = Sprout(
                name: "s\(i)", rank: i % 50, note: i % 7 == 0 ? "target" : String(repeating: "n", count: 60))
            context.insert(sprout)
            sprouts.append(sprout)
        }
        for (i, sprout) in sprouts.enumerated() {
            if i % 10 == 0 {
                sprout.parent = sprout
            } else if i >= 10 {
                sprout.parent = sprouts[i - 3]
            }
        }
        for i in 0..<40 {
            context.insert(IndexedBlob(label: "b\(i % 4)", bytes: Data(repeating: UInt8(i), count: 2000)))
        }
        try context.save()
        store.close()
    }

    /// Runs `body` on a context of the written store, reopened with `cacheCapacity`.
    static func withStore(
        cacheCapacity: Int, _ body: (ModelContext, LogStore, LogTestDirectory) throws -> Void
    ) throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        try write(at: directory.storeURL)
        let (container, store) = try open(directory.storeURL, cacheCapacity: cacheCapacity)
        try body(ModelContext(container), store, directory)
    }

    static func expected(_ test: (Int) -> Bool) -> Int { (0..<count).count(where: test) }

    static func hasTargetNote(_ i: Int) -> Bool { i % 7 == 0 }

    /// The index of sprout `i`'s parent, if it has one.
    static func parent(_ i: Int) -> Int? { i % 10 == 0 ? i : (i >= 10 ? i - 3 : nil) }

    @Test func countsPastASmallCacheDecodeOnlyWhatThePredicateReads() throws {
        try Self.withStore(cacheCapacity: 64 << 10) { context, store, _ in
            let ranked = try context.fetchCount(FetchDescriptor<Sprout>(predicate: #Predicate { $0.rank >= 40 }))
            #expect(ranked == Self.expected { $0 % 50 >= 40 })
            let partial = store.readStatistics.partialReads
            // The first blocks read filled the cache; every read after its first eviction
            // decoded the rank alone.
            #expect(partial > Self.count / 2)
            #expect(store.readStatistics.cachedBytes <= 64 << 10)

            let notes = try context.fetchCount(
                FetchDescriptor<Sprout>(predicate: #Predicate { $0.note == "target" && $0.rank < 25 }))
            #expect(notes == Self.expected { Self.hasTargetNote($0) && $0 % 50 < 25 })
            #expect(store.readStatistics.partialReads == partial + Self.count)

            // A predicate that reads the parent's note may reach the record under test (every
            // tenth sprout is its own parent): it reads whole records.
            let parentNotes = try context.fetchCount(
                FetchDescriptor<Sprout>(predicate: #Predicate { $0.parent?.note == "target" }))
            #expect(parentNotes == Self.expected { Self.parent($0).map(Self.hasTargetNote) ?? false })
            #expect(store.readStatistics.partialReads == partial + Self.count)

            // Nothing partial was kept: fetched models have every value.
            let fetched = try context.fetch(FetchDescriptor<Sprout>(predicate: #Predicate { $0.name == "s14" }))
            let sprout = try #require(fetched.first)
            #expect(sprout.note == "target" && sprout.rank == 14 && sprout.parent?.name == "s11")
            let blobs = try context.fetch(FetchDescriptor<IndexedBlob>(predicate: #Predicate { $0.label == "b1" }))
            #expect(blobs.count == 10 && blobs.allSatisfy { $0.bytes.count == 2000 })
        }
    }

    /// A fetch whose filter no index answers tests each record with the filter's values
    /// only, and returns the matches whole, sorted by a property the filter does not read.
    @Test func aFilteredFetchTestsPartsAndReturnsWholeRecords() throws {
        try Self.withStore(cacheCapacity: 64 << 10) { context, store, _ in
            _ = try context.fetchCount(FetchDescriptor<Sprout>(predicate: #Predicate { $0.rank == 3 }))
            let before = store.readStatistics.partialReads
            let found = try context.fetch(
                FetchDescriptor<Sprout>(
                    predicate: #Predicate { $0.rank == 14 }, sortBy: [SortDescriptor(\.note), SortDescriptor(\.name)]))
            let indices = (0..<Self.count).filter { $0 % 50 == 14 }
            let expected = indices.map { i in
                (note: Self.hasTargetNote(i) ? "target" : String(repeating: "n", count: 60), name: "s\(i)")
            }
            .sorted { ($0.note, $0.name) < ($1.note, $1.name) }
            #expect(found.map(\.note) == expected.map(\.note))
            #expect(found.map(\.name) == expected.map(\.name))
            #expect(found.allSatisfy { $0.rank == 14 })
            #expect(store.readStatistics.partialReads == before + Self.count)
        }
    }

    /// The same counts, with a cache that never evicts, decode whole records and keep them.
    @Test func aCacheThatHoldsEveryRecordDecodesThemWhole() throws {
        try Self.withStore(cacheCapacity: 64 << 20) { context, store, _ in
            let ranked = try context.fetchCount(FetchDescriptor<Sprout>(predicate: #Predicate { $0.rank >= 40 }))
            #expect(ranked == Self.expected { $0 % 50 >= 40 })
            let reads = store.readStatistics.blockReads
            let notes = try context.fetchCount(FetchDescriptor<Sprout>(predicate: #Predicate { $0.note == "target" }))
            #expect(notes == Self.expected(Self.hasTargetNote))
            #expect(store.readStatistics.partialReads == 0)
            #expect(store.readStatistics.blockReads == reads)
        }
    }

    /// The counts of an external-storage entity's label read no external file for the
    /// records they skip, and are right.
    @Test func aPartialReadLeavesExternalValuesUnread() throws {
        try Self.withStore(cacheCapacity: 8 << 10) { context, store, directory in
            // Evict, so that blocks are kept as bytes.
            _ = try context.fetchCount(FetchDescriptor<Sprout>(predicate: #Predicate { $0.rank == 3 }))
            let before = store.readStatistics.partialReads
            // The files go; a read that needed them would throw.
            let blobs = directory.storeURL.path + ".blobs"
            #expect(try FileManager.default.contentsOfDirectory(atPath: blobs).count == 40)
            try FileManager.default.moveItem(atPath: blobs, toPath: directory.url.appendingPathComponent("moved").path)
            let labelled = try context.fetchCount(
                FetchDescriptor<IndexedBlob>(predicate: #Predicate { $0.label.starts(with: "b") }))
            #expect(labelled == 40)
            #expect(store.readStatistics.partialReads == before + 40)
            // A whole record needs its file.
            #expect(throws: (any Error).self) {
                try context.fetch(FetchDescriptor<IndexedBlob>(predicate: #Predicate { $0.label == "b2" }))
            }
        }
    }

    @Test func thePredicateColumnsAreTheRecordsOwnProperties() throws {
        func columns(_ predicate: Predicate<Sprout>) throws -> SnapshotColumns {
            let query = try FetchQuery(FetchDescriptor<Sprout>(predicate: predicate), schema: Self.schema)
            return CompiledPredicate.columns(try #require(query.predicate), root: query.rootVariable)
        }
        let entity = try #require(Self.schema.entitiesByName["Sprout"])
        func position(_ name: String) throws -> Int { try #require(entity.property(named: name)).index }
        let rank = try position("rank")
        let name = try position("name")
        let note = try position("note")

        let one = try columns(#Predicate { $0.rank > 3 })
        #expect(!one.isAll && one.contains(rank) && !one.contains(name) && !one.contains(note))
        let two = try columns(#Predicate { $0.name.count > 2 || !($0.rank == 1) })
        #expect(two.contains(rank) && two.contains(name) && !two.contains(note))
        let none = try columns(#Predicate { _ in true })
        #expect(!none.isAll && !none.contains(rank))
        #expect(try columns(#Predicate { $0.parent?.rank == 1 }).isAll)
        #expect(try columns(#Predicate { $0.parent?.name == "s1" && $0.name == "s2" }).isAll)
        #expect(!(try columns(#Predicate { $0.parent == nil }).isAll))
    }

    /// The codec decodes the asked values as a full decode does and skips the others,
    /// over random values of every tag, and ends where a full decode ends.
    @Test func decodingSomeColumnsMatchesAFullDecode() throws {
        var random = SeededRandom.fromEnvironment()
        let seed = random.seed
        let map = LogEntityMap(storeIdentifier: "log-test", description: StoredSchema(LogTest.schema))
        let index = try #require(map.external.firstIndex { $0.isEmpty })
        let count = map.propertyCounts[index]
        for _ in 0..<300 {
            let values = (0..<count).map { _ in LogEncodingTests.randomValue(&random, map: map) }
            let snapshot = DefaultSnapshot(
                persistentIdentifier: .permanent(
                    entityName: map.names[index], storeIdentifier: map.storeIdentifier, primaryKey: 9),
                values: values)
            var writer = LogByteWriter()
            try LogCodec.encodeSnapshot(snapshot, key: 9, entity: map.names[index], into: &writer, map: map)
            writer.u8(0x7F)
            let wanted = (0..<count).filter { _ in Bool.random(using: &random) }
            let columns = SnapshotColumns(wanted)
            var reader = LogByteReader(writer.bytes)
            var references: [LogExternalReference] = []
            let back = try LogCodec.decodeSnapshot(&reader, map: map, externalReferences: &references, columns: columns)
            #expect(try reader.u8() == 0x7F, "seed \(seed)")
            #expect(back.persistentIdentifier.primaryKey == 9)
            for position in 0..<count {
                let expected = wanted.contains(position) ? values[position] : .null
                #expect(
                    LogEncodingTests.identical(back.values[position], expected), "seed \(seed), position \(position)")
            }
        }
    }
}
