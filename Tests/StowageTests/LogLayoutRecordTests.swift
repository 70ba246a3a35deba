import Foundation
import StowageTestSupport
import Testing

@_spi(Testing) @testable import Stowage

/// A card, in three layouts: V1; V2 adds a defaulted `stars` and renames `title` to
/// `heading`; V3 removes `note`, adds an optional `tag`, and a new entity, `Deck`. Each keeps
/// the index on `rank` and the uniqueness of `code`.
enum CardsV1 {
    @Model final class Card {
        @Attribute(.unique) var code: String
        var title: String
        var rank: Int
        var note: String?
        #Index<Card>([\.rank])
        init(code: String, title: String, rank: Int, note: String? = nil) {
            self.code = code
            self.title = title
            self.rank = rank
            self.note = note
        }
    }
}

enum CardsV2 {
    @Model final class Card {
        @Attribute(.unique) var code: String
        @Attribute(originalName: "title") var heading: String
        var rank: Int
        var note: String?
        var stars: Int = 2
        #Index<Card>([\.rank])
        init(code: String, heading: String, rank: Int) {
            self.code = code
            self.heading = heading
            self.rank = rank
        }
    }
}

extension CardsV1: VersionedSchema {
    static let versionIdentifier = Schema.Version(1, 0, 0)
    static var models: [any PersistentModel.Type] { [Card.self] }
}

extension CardsV2: VersionedSchema {
    static let versionIdentifier = Schema.Version(2, 0, 0)
    static var models: [any PersistentModel.Type] { [Card.self] }
}

extension CardsV3: VersionedSchema {
    static let versionIdentifier = Schema.Version(3, 0, 0)
    static var models: [any PersistentModel.Type] { [Card.self, Deck.self] }
}

/// Three versions, no stages: each step is lightweight.
enum CardsPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [CardsV1.self, CardsV2.self, CardsV3.self] }
    static var stages: [MigrationStage] { [] }
}

/// V1 without its title, which came before the indexed rank: the rank moves.
enum CardsUntitled {
    @Model final class Card {
        @Attribute(.unique) var code: String
        var rank: Int
        var note: String?
        #Index<Card>([\.rank])
        init(code: String, rank: Int) {
            self.code = code
            self.rank = rank
        }
    }
}

/// V2 with another default for `stars`.
enum CardsV2Later {
    @Model final class Card {
        @Attribute(.unique) var code: String
        @Attribute(originalName: "title") var heading: String
        var rank: Int
        var note: String?
        var stars: Int = 9
        #Index<Card>([\.rank])
        init(code: String, heading: String, rank: Int) {
            self.code = code
            self.heading = heading
            self.rank = rank
        }
    }
}

enum CardsV3 {
    @Model final class Card {
        @Attribute(.unique) var code: String
        var tag: String?
        var heading: String
        var rank: Int
        var stars: Int = 2
        #Index<Card>([\.rank])
        init(code: String, heading: String, rank: Int) {
            self.code = code
            self.heading = heading
            self.rank = rank
        }
    }

    @Model final class Deck {
        var name: String
        init(name: String) { self.name = name }
    }
}

/// Format version 6's layout records (`Formats/log.md`, "Layout record"): a lightweight
/// change appends one record and rewrites nothing; records of earlier layouts read through
/// the last one, by every path, until they are saved again or compacted.
@Suite("LogStore layout records (format version 6)")
struct LogLayoutRecordTests {
    static let count = 2000

    static func open(
        _ url: URL, _ types: [any PersistentModel.Type], cacheCapacity: Int? = nil,
        recovery: LogStoreConfiguration.Recovery = .pointInTime
    ) throws -> (ModelContainer, LogStore) {
        var configuration = LogStoreConfiguration(schema: Schema(types), url: url, recovery: recovery)
        configuration.automaticCompaction = nil
        if let cacheCapacity { configuration.cacheCapacity = cacheCapacity }
        let container = try ModelContainer(for: Schema(types), configurations: [configuration])
        return (container, try #require(container.storesForTesting.first as? LogStore))
    }

    /// `count` V1 cards, saved in two commits with a checkpoint between them.
    static func writeV1(_ url: URL) throws {
        let (container, store) = try open(url, [CardsV1.Card.self])
        let context = ModelContext(container)
        for i in 0..<count / 2 {
            context.insert(CardsV1.Card(code: "C\(i)", title: "title \(i)", rank: i % 97, note: "n\(i)"))
        }
        try context.save()
        try store.checkpoint()
        for i in count / 2..<count {
            context.insert(CardsV1.Card(code: "C\(i)", title: "title \(i)", rank: i % 97))
        }
        try context.save()
        store.close()
    }

    static func layoutRecords(_ url: URL) throws -> [Int64] {
        let bytes = try Data(contentsOf: url)
        return try LogStore.recordOffsets(ofFileAt: url).dropLast().filter {
            bytes[Int($0) + 4] == LogFormat.RecordType.layout.rawValue
        }
    }

    static func cards(_ context: ModelContext) throws -> [CardsV3.Card] {
        try context.fetch(FetchDescriptor<CardsV3.Card>(sortBy: [SortDescriptor(\.code)]))
    }

    @Test func twoLightweightChangesAppendTwoRecordsAndRewriteNothing() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let url = directory.storeURL
        try Self.writeV1(url)
        let v1Bytes = try Data(contentsOf: url)

        // V2: one layout record after the V1 bytes, which stay as they were.
        do {
            let (container, store) = try Self.open(url, [CardsV2.Card.self])
            #expect(store.openedFromCheckpoint)
            let context = ModelContext(container)
            let first = try context.fetch(
                FetchDescriptor<CardsV2.Card>(predicate: #Predicate { $0.code == "C7" }))
            #expect(first.map(\.heading) == ["title 7"])
            #expect(first.map(\.stars) == [2])
            #expect(first.map(\.note) == ["n7"])
            // Saved in V2: this card's record is now in the V2 layout.
            first[0].stars = 5
            context.insert(CardsV2.Card(code: "C-new", heading: "fresh", rank: 1))
            try context.save()
            store.close()
        }
        #expect(try Data(contentsOf: url).prefix(v1Bytes.count) == v1Bytes)
        #expect(try Self.layoutRecords(url) == [Int64(v1Bytes.count)])

        // V3: a second layout record; the V1 records read through both.
        let (container, store) = try Self.open(url, [CardsV3.Card.self, CardsV3.Deck.self])
        #expect(store.openedFromCheckpoint)
        #expect(try Self.layoutRecords(url).count == 2)
        let context = ModelContext(container)
        let cards = try Self.cards(context)
        #expect(cards.count == Self.count + 1)
        let byCode = Dictionary(uniqueKeysWithValues: cards.map { ($0.code, $0) })
        #expect(byCode["C7"]?.stars == 5)
        #expect(byCode["C8"]?.stars == 2)
        #expect(byCode["C8"]?.heading == "title 8")
        #expect(byCode["C-new"]?.heading == "fresh")
        #expect(cards.allSatisfy { $0.tag == nil })
        // The index on rank and the uniqueness of code hold over records of every layout.
        let rank5 = try context.fetch(
            FetchDescriptor<CardsV3.Card>(predicate: #Predicate { $0.rank == 5 }, sortBy: [SortDescriptor(\.code)]))
        #expect(rank5.map(\.code) == cards.filter { $0.rank == 5 }.map(\.code))
        #expect(
            try context.explain(FetchDescriptor<CardsV3.Card>(predicate: #Predicate { $0.rank == 5 }))
                .hasPrefix("INDEX Card(rank)"))
        // A duplicate of a unique code updates the record it matches (SwiftData's upsert):
        // the unique index found it among the records of the first layout.
        context.insert(CardsV3.Card(code: "C9", heading: "duplicate", rank: 0))
        try context.save()
        let c9 = try context.fetch(FetchDescriptor<CardsV3.Card>(predicate: #Predicate { $0.code == "C9" }))
        #expect(c9.map(\.heading) == ["duplicate"])
        #expect(try context.fetchCount(FetchDescriptor<CardsV3.Card>()) == Self.count + 1)
        // A predicate on a property the old records lack reads its default from the layout.
        let twoStars = try context.fetchCount(FetchDescriptor<CardsV3.Card>(predicate: #Predicate { $0.stars == 2 }))
        #expect(twoStars == Self.count, "all but C7, which has 5, and with C-new")
        context.insert(CardsV3.Deck(name: "main"))
        try context.save()
        try store.compact()
        store.close()
        #expect(try Self.layoutRecords(url).isEmpty, "compaction writes the last layout in the header")

        let (again, againStore) = try Self.open(url, [CardsV3.Card.self, CardsV3.Deck.self])
        let reread = try Self.cards(ModelContext(again))
        #expect(reread.map(\.code) == cards.map(\.code))
        #expect(reread.map(\.heading) == cards.map(\.heading))
        #expect(reread.map(\.stars) == cards.map(\.stars))
        #expect(reread.first { $0.code == "C9" }?.heading == "duplicate")
        #expect(try ModelContext(again).fetchCount(FetchDescriptor<CardsV3.Deck>()) == 1)
        againStore.close()
    }

    /// A cache too small to keep records decoded makes reads decode only the values a
    /// predicate needs; a record of an earlier layout is decoded whole and carried over.
    @Test func recordsOfAnEarlierLayoutReadRightPastASmallCache() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let url = directory.storeURL
        try Self.writeV1(url)
        _ = try Self.open(url, [CardsV2.Card.self]).1.close()
        let (container, store) = try Self.open(url, [CardsV3.Card.self, CardsV3.Deck.self], cacheCapacity: 16 << 10)
        let context = ModelContext(container)
        for _ in 0..<2 {
            let headed = try context.fetch(
                FetchDescriptor<CardsV3.Card>(
                    predicate: #Predicate { $0.heading == "title 1234" || ($0.stars == 2 && $0.rank == 96) }))
            #expect(
                Set(headed.map(\.code)) == Set(["C1234"] + (0..<Self.count).filter { $0 % 97 == 96 }.map { "C\($0)" }))
        }
        #expect(store.readStatistics.blockReads > 0)
        store.close()
    }

    /// A layout record cut short by a crash is a torn tail: recovery cuts it, the file is
    /// the old layout's, whole, and the next open with the new schema appends it again.
    @Test func aTornLayoutRecordLeavesTheOldLayout() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let url = directory.storeURL
        try Self.writeV1(url)
        let v1Bytes = try Data(contentsOf: url)
        _ = try Self.open(url, [CardsV2.Card.self]).1.close()
        let offsets = try LogStore.recordOffsets(ofFileAt: url)
        let layoutEnd = try #require(offsets.last)
        let full = try Data(contentsOf: url).prefix(Int(layoutEnd))
        // Every length the record could have been cut to by a crash (every tenth, and the last).
        let cuts = Array(stride(from: Int64(v1Bytes.count) + 1, to: layoutEnd, by: 10)) + [layoutEnd - 1]
        for cut in cuts {
            try full.prefix(Int(cut)).write(to: url)
            // The old schema opens it, and finds every card.
            let (container, store) = try Self.open(url, [CardsV1.Card.self])
            #expect(store.lastRecovery?.validLength == Int64(v1Bytes.count))
            #expect(try ModelContext(container).fetchCount(FetchDescriptor<CardsV1.Card>()) == Self.count)
            store.close()
            #expect(try Data(contentsOf: url) == v1Bytes)
            // The new one appends the layout record again.
            let (grown, grownStore) = try Self.open(url, [CardsV2.Card.self])
            #expect(try Self.layoutRecords(url) == [Int64(v1Bytes.count)])
            #expect(try ModelContext(grown).fetchCount(FetchDescriptor<CardsV2.Card>()) == Self.count)
            grownStore.close()
        }
    }

    /// Damage in a commit before a layout record ends the valid prefix there: the layout
    /// record is gone with it, and the file's schema is the layout before it again.
    @Test func damageBeforeALayoutRecordTakesItsLayoutAway() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let url = directory.storeURL
        try Self.writeV1(url)
        let offsets = try LogStore.recordOffsets(ofFileAt: url)
        // The header, the first commit, the checkpoint, the second commit; then the end.
        let secondCommit = offsets[offsets.count - 2]
        _ = try Self.open(url, [CardsV2.Card.self]).1.close()
        var bytes = try Data(contentsOf: url)
        bytes[Int(secondCommit) + 40] ^= 0xFF
        try bytes.write(to: url)
        #expect(throws: DataStoreError.corruptStore) {
            try Self.open(url, [CardsV2.Card.self], recovery: .strict)
        }
        let (container, store) = try Self.open(url, [CardsV2.Card.self])
        #expect(store.lastRecovery?.validLength == secondCommit)
        let context = ModelContext(container)
        #expect(try context.fetchCount(FetchDescriptor<CardsV2.Card>()) == Self.count / 2)
        let card = try context.fetch(FetchDescriptor<CardsV2.Card>(predicate: #Predicate { $0.code == "C3" }))
        #expect(card.map(\.heading) == ["title 3"] && card.map(\.stars) == [2])
        store.close()
        // The layout record was appended again, after the valid prefix.
        #expect(try Self.layoutRecords(url) == [secondCommit])
    }

    /// What a layout record stores for a new property is fixed when it is written: a later
    /// default in code does not change what an older record reads as (SwiftData stored the
    /// default in each row when it migrated); a new record takes the new default.
    @Test func theDefaultIsTheOneOfTheChangeNotOfTheCode() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let url = directory.storeURL
        try Self.writeV1(url)
        _ = try Self.open(url, [CardsV2.Card.self]).1.close()
        let (container, store) = try Self.open(url, [CardsV2Later.Card.self])
        #expect(try Self.layoutRecords(url).count == 1, "a changed default is no change of layout")
        let context = ModelContext(container)
        context.insert(CardsV2Later.Card(code: "C-late", heading: "late", rank: 0))
        try context.save()
        let cards = try context.fetch(FetchDescriptor<CardsV2Later.Card>())
        #expect(cards.filter { $0.stars == 2 }.count == Self.count)
        #expect(cards.filter { $0.stars == 9 }.map(\.code) == ["C-late"])
        store.close()
    }

    /// A change a layout record cannot make (here an index added) is still a rewrite, and a
    /// version 5 file converts by a rewrite into version 6.
    @Test func changesALayoutRecordCannotMakeRewriteTheFile() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let url = directory.storeURL
        var configuration = LogStoreConfiguration(schema: Schema([CardsV1.Card.self]), url: url)
        configuration.newFileFormatVersion = 5
        do {
            let container = try ModelContainer(for: Schema([CardsV1.Card.self]), configurations: [configuration])
            let context = ModelContext(container)
            for i in 0..<50 { context.insert(CardsV1.Card(code: "C\(i)", title: "t\(i)", rank: i, note: nil)) }
            try context.save()
        }
        #expect(try Data(contentsOf: url)[8] == 5)
        let (container, store) = try Self.open(url, [CardsV2.Card.self])
        #expect(try Data(contentsOf: url)[8] == 6)
        #expect(try Self.layoutRecords(url).isEmpty)
        #expect(
            try ModelContext(container).fetchCount(
                FetchDescriptor<CardsV2.Card>(predicate: #Predicate { $0.stars == 2 })) == 50)
        store.close()
    }

    /// A property removed before an indexed one moves it: the indexes the open builds (by
    /// a rewrite of a version 5 file, or through a layout record of a version 6 one) hold
    /// the moved values, not what was at the position before.
    @Test(arguments: [UInt16(5), 6])
    func aRemovedPropertyBeforeAnIndexedOne(version: UInt16) throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let url = directory.storeURL
        var configuration = LogStoreConfiguration(schema: Schema([CardsV1.Card.self]), url: url)
        configuration.newFileFormatVersion = version
        configuration.checkpoints = nil
        do {
            let container = try ModelContainer(for: Schema([CardsV1.Card.self]), configurations: [configuration])
            let context = ModelContext(container)
            for i in 0..<300 { context.insert(CardsV1.Card(code: "C\(i)", title: "t\(i)", rank: i % 7, note: nil)) }
            try context.save()
        }
        for _ in 0..<2 {
            let (container, store) = try Self.open(url, [CardsUntitled.Card.self])
            let context = ModelContext(container)
            let rank3 = try context.fetch(
                FetchDescriptor<CardsUntitled.Card>(
                    predicate: #Predicate { $0.rank == 3 }, sortBy: [SortDescriptor(\.code)]))
            #expect(rank3.map(\.code) == (0..<300).filter { $0 % 7 == 3 }.map { "C\($0)" }.sorted())
            #expect(rank3.allSatisfy { $0.rank == 3 })
            let c5 = try context.fetch(FetchDescriptor<CardsUntitled.Card>(predicate: #Predicate { $0.code == "C5" }))
            #expect(c5.map(\.rank) == [5])
            store.close()
        }
    }

    /// A migration plan whose stages are all lightweight makes the whole chain with one
    /// layout record, appended by the open itself: no copy of the store, nothing rewritten,
    /// the store at the last version. The open after it is a plain one.
    @Test func aChainOfLightweightStagesIsOneLayoutRecord() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let url = directory.storeURL
        func open(_ version: any VersionedSchema.Type, plan: (any SchemaMigrationPlan.Type)?) throws -> (
            ModelContainer, LogStore
        ) {
            let schema = Schema(versionedSchema: version)
            var configuration = LogStoreConfiguration(schema: schema, url: url)
            configuration.automaticCompaction = nil
            let container = try ModelContainer(for: schema, migrationPlan: plan, configurations: [configuration])
            return (container, try #require(container.storesForTesting.first as? LogStore))
        }
        do {
            let (container, store) = try open(CardsV1.self, plan: nil)
            let context = ModelContext(container)
            for i in 0..<Self.count { context.insert(CardsV1.Card(code: "C\(i)", title: "t\(i)", rank: i % 97)) }
            try context.save()
            try store.checkpoint()
            store.close()
        }
        let v1Bytes = try Data(contentsOf: url)
        let (container, store) = try open(CardsV3.self, plan: CardsPlan.self)
        #expect(store.openedFromCheckpoint)
        #expect(try Data(contentsOf: url).prefix(v1Bytes.count) == v1Bytes)
        #expect(try Self.layoutRecords(url) == [Int64(v1Bytes.count)])
        #expect(store.storedSchema.versionText == "3.0.0")
        let cards = try Self.cards(ModelContext(container))
        #expect(cards.count == Self.count)
        #expect(cards.allSatisfy { $0.stars == 2 && $0.tag == nil && $0.heading == "t" + $0.code.dropFirst() })
        store.close()
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: directory.url.path).filter { $0.contains("migrating") }
                .isEmpty)
        // Opened again with the plan, the store is at its last version: nothing to do.
        let (_, again) = try open(CardsV3.self, plan: CardsPlan.self)
        #expect(try Self.layoutRecords(url).count == 1)
        again.close()
    }

    /// The version 6 sample opens with its contents: the trips before its layout record
    /// with the stored rating and their notes as remarks, and the one after it as saved.
    @Test(arguments: [true, false])
    func theVersion6SampleOpensThroughItsLayoutRecord(readOnly: Bool) throws {
        let (directory, url) = try LogGoldenTests.copy("trips-v6.stowlog")
        defer { directory.remove() }
        let before = try Data(contentsOf: url)
        let configuration = LogStoreConfiguration(
            schema: LogSamplesGrown.schema, url: url, recovery: .strict, allowsSave: !readOnly)
        let container = try ModelContainer(for: LogSamplesGrown.schema, configurations: [configuration])
        let context = ModelContext(container)
        let trips = try context.fetch(
            FetchDescriptor<LogSamplesGrown.LogSampleTrip>(sortBy: [SortDescriptor(\.name)]))
        #expect(trips.map(\.name) == ["Kyoto", "Lisbon", "Oslo", "Reykjavik"])
        #expect(trips.map(\.rating) == [3, 3, 3, 5])
        #expect(trips.map(\.remark) == ["Temples", nil, "Bring wool, wool and more wool.", "Lagoon"])
        #expect(trips[2].items.count == 19)
        #expect(try context.fetch(FetchDescriptor<LogSamplesGrown.LogSampleStop>()).map(\.name) == ["Hallgrimskirkja"])
        for store in container.storesForTesting { (store as? LogStore)?.close() }
        #expect(try Data(contentsOf: url).prefix(before.count) == before)
    }
}
