import Foundation
import StowageTestSupport
import Testing

@_spi(Testing) @testable import Stowage

/// One entity, `Ticket`, as four versions of an app declare it: without indexes, with two,
/// with two others, and with a property renamed.
enum TicketsPlain {
    @Model final class Ticket {
        var code: String
        var seat: Int
        var price: Double
        init(code: String, seat: Int, price: Double) {
            self.code = code
            self.seat = seat
            self.price = price
        }
    }
}

enum TicketsIndexed {
    @Model final class Ticket {
        var code: String
        var seat: Int
        var price: Double
        #Index<Ticket>([\.seat], [\.price])
        init(code: String, seat: Int, price: Double) {
            self.code = code
            self.seat = seat
            self.price = price
        }
    }
}

enum TicketsReindexed {
    @Model final class Ticket {
        var code: String
        var seat: Int
        var price: Double
        #Index<Ticket>([\.price], [\.code])
        init(code: String, seat: Int, price: Double) {
            self.code = code
            self.seat = seat
            self.price = price
        }
    }
}

enum TicketsRenamed {
    @Model final class Ticket {
        var code: String
        var row: Int
        var price: Double
        init(code: String, row: Int, price: Double) {
            self.code = code
            self.row = row
            self.price = price
        }
    }
}

enum TicketsUniqueCode {
    @Model final class Ticket {
        @Attribute(.unique) var code: String
        var seat: Int
        var price: Double
        init(code: String, seat: Int, price: Double) {
            self.code = code
            self.seat = seat
            self.price = price
        }
    }
}

enum TicketsUniqueSeat {
    @Model final class Ticket {
        var code: String
        var seat: Int
        var price: Double
        #Unique<Ticket>([\.seat])
        init(code: String, seat: Int, price: Double) {
            self.code = code
            self.seat = seat
            self.price = price
        }
    }
}

enum TicketsUniqueCodeAndPrice {
    @Model final class Ticket {
        @Attribute(.unique) var code: String
        var seat: Int
        var price: Double
        #Unique<Ticket>([\.price])
        init(code: String, seat: Int, price: Double) {
            self.code = code
            self.seat = seat
            self.price = price
        }
    }
}

/// Adding, removing or changing `#Index`, `#Unique` or `@Attribute(.unique)` is not a
/// schema mismatch: the store opens, builds the indexes from its records (never from a
/// checkpoint of the old ones), checks an added constraint against them, and rewrites its
/// file with the new schema before its first save.
@Suite("LogStore index changes")
struct LogIndexChangeTests {
    static let count = 3000

    static func open(
        _ url: URL, _ type: any PersistentModel.Type, allowsSave: Bool = true, fileSystem: (any StoreFileSystem)? = nil
    ) throws -> (ModelContainer, LogStore) {
        var configuration = LogStoreConfiguration(schema: Schema([type]), url: url, allowsSave: allowsSave)
        if let fileSystem { configuration.fileSystem = fileSystem }
        let container = try ModelContainer(for: Schema([type]), configurations: [configuration])
        return (container, try #require(container.storesForTesting.first as? LogStore))
    }

    /// A store of `count` plain tickets (seat = i % 50, price = i), closed with a
    /// checkpoint at its end, so that a later open could take the indexes from it.
    static func plainStore(_ url: URL) throws {
        let (container, store) = try open(url, TicketsPlain.Ticket.self)
        let context = ModelContext(container)
        for i in 0..<count {
            context.insert(TicketsPlain.Ticket(code: "T\(i)", seat: i % 50, price: Double(i)))
        }
        try context.save()
        try store.checkpoint()
        store.close()
    }

    /// The codes of the tickets with `seat`, and of the 5 cheapest over `price`, by the
    /// indexed model's queries; with the plan of the first.
    static func indexedAnswers(_ context: ModelContext) throws -> (seat: [String], cheapest: [String], plan: String) {
        typealias Ticket = TicketsIndexed.Ticket
        let bySeat = FetchDescriptor<Ticket>(predicate: #Predicate { $0.seat == 7 }, sortBy: [SortDescriptor(\.code)])
        var cheapest = FetchDescriptor<Ticket>(
            predicate: #Predicate { $0.price > 2500 }, sortBy: [SortDescriptor(\.price)])
        cheapest.fetchLimit = 5
        return (
            try context.fetch(bySeat).map(\.code), try context.fetch(cheapest).map(\.code),
            try context.explain(bySeat)
        )
    }

    static let expectedSeat = (0..<count).filter { $0 % 50 == 7 }.map { "T\($0)" }.sorted()
    static let expectedCheapest = (2501...2505).map { "T\($0)" }

    @Test func addingIndexesOpensUsesThemAndRewritesTheHeader() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let url = directory.storeURL
        try Self.plainStore(url)
        let before = try Data(contentsOf: url)

        do {
            let (container, store) = try Self.open(url, TicketsIndexed.Ticket.self)
            #expect(!store.openedFromCheckpoint)
            let answers = try Self.indexedAnswers(ModelContext(container))
            #expect(answers.seat == Self.expectedSeat)
            #expect(answers.cheapest == Self.expectedCheapest)
            #expect(answers.plan.hasPrefix("INDEX Ticket(seat) EQ seat = 7"), "\(answers.plan)")
            #expect(try Data(contentsOf: url) != before, "the header still lists the old indexes")
            let context = ModelContext(container)
            context.insert(TicketsIndexed.Ticket(code: "T9999", seat: 7, price: 0.5))
            try context.save()
            store.close()
        }
        // The rewritten file opens from its checkpoint with the new indexes, and the old
        // model no longer matches it only by its indexes: it opens too, without them.
        let (container, store) = try Self.open(url, TicketsIndexed.Ticket.self)
        #expect(store.openedFromCheckpoint)
        let answers = try Self.indexedAnswers(ModelContext(container))
        #expect(answers.seat == (Self.expectedSeat + ["T9999"]).sorted())
        store.close()
        let (plain, plainStore) = try Self.open(url, TicketsPlain.Ticket.self)
        let seven = try ModelContext(plain).fetch(
            FetchDescriptor<TicketsPlain.Ticket>(predicate: #Predicate { $0.seat == 7 }))
        #expect(seven.count == Self.expectedSeat.count + 1)
        plainStore.close()
    }

    /// Two indexes replaced by two others: a checkpoint of the old ones has as many
    /// indexes, and must not be taken for the new ones.
    @Test func changedIndexesAreBuiltFromTheRecordsNotFromTheOldCheckpoint() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let url = directory.storeURL
        try Self.plainStore(url)
        do {
            let (container, store) = try Self.open(url, TicketsIndexed.Ticket.self)
            _ = try Self.indexedAnswers(ModelContext(container))
            try store.checkpoint()
            store.close()
        }
        let (container, store) = try Self.open(url, TicketsReindexed.Ticket.self)
        #expect(!store.openedFromCheckpoint)
        typealias Ticket = TicketsReindexed.Ticket
        let context = ModelContext(container)
        var cheapest = FetchDescriptor<Ticket>(
            predicate: #Predicate { $0.price > 2500 }, sortBy: [SortDescriptor(\.price)])
        cheapest.fetchLimit = 5
        #expect(try context.fetch(cheapest).map(\.code) == Self.expectedCheapest)
        let byCode = FetchDescriptor<Ticket>(predicate: #Predicate { $0.code == "T1234" })
        #expect(try context.fetch(byCode).map(\.price) == [1234])
        #expect(try context.explain(byCode).hasPrefix("INDEX Ticket(code)"))
        let range = FetchDescriptor<Ticket>(predicate: #Predicate { $0.code >= "T2990" && $0.code < "T2999" })
        #expect(try context.fetch(range).count == 9)
        store.close()
    }

    @Test func readOnlyAnIndexChangeIsReadWithoutRewriting() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let url = directory.storeURL
        try Self.plainStore(url)
        let before = directoryContents(directory.url)
        let (container, store) = try Self.open(
            url, TicketsIndexed.Ticket.self, allowsSave: false, fileSystem: ReadOnlyFileSystem())
        let answers = try Self.indexedAnswers(ModelContext(container))
        #expect(answers.seat == Self.expectedSeat)
        #expect(answers.cheapest == Self.expectedCheapest)
        #expect(answers.plan.hasPrefix("INDEX Ticket(seat)"))
        store.close()
        #expect(directoryContents(directory.url) == before)
    }

    /// The rewrite is a compaction: a crash or failure before its rename leaves the old
    /// file, which the next open rewrites again.
    @Test func aFailedRewriteLeavesTheOldFile() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let url = directory.storeURL
        try Self.plainStore(url)
        let before = try Data(contentsOf: url)
        let fs = FaultInjectingFileSystem()
        fs.arm(.rename, failOn: 1)
        #expect(throws: DataStoreError.ioFailure) { try Self.open(url, TicketsIndexed.Ticket.self, fileSystem: fs) }
        #expect(try Data(contentsOf: url) == before)
        let (container, store) = try Self.open(url, TicketsIndexed.Ticket.self)
        #expect(try Self.indexedAnswers(ModelContext(container)).seat == Self.expectedSeat)
        store.close()
    }

    /// Anything beyond the indexes is still a mismatch, and the file is left as it is.
    @Test func aPropertyChangeIsStillAMismatch() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let url = directory.storeURL
        try Self.plainStore(url)
        let before = directoryContents(directory.url)
        let error = #expect(throws: DataStoreError.schemaMismatch) { try Self.open(url, TicketsRenamed.Ticket.self) }
        #expect(error?.message.contains("property 2") == true, "\(String(describing: error))")
        #expect(directoryContents(directory.url) == before)
    }

    /// A container of a JSON store at `url`, with `type` as its one model.
    static func openJSON(_ url: URL, _ type: any PersistentModel.Type) throws -> ModelContainer {
        try ModelContainer(
            for: Schema([type]),
            configurations: [JSONStoreConfiguration(name: "tickets", schema: Schema([type]), fileURL: url)])
    }

    /// The JSON store reads an index change the same way, and writes the new indexes with
    /// its next save.
    @Test func theJSONStoreOpensAfterAnIndexChange() throws {
        let url = JSONTest.freshURL()
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        do {
            let context = ModelContext(try Self.openJSON(url, TicketsPlain.Ticket.self))
            for i in 0..<Self.count {
                context.insert(TicketsPlain.Ticket(code: "T\(i)", seat: i % 50, price: Double(i)))
            }
            try context.save()
        }
        let before = try Data(contentsOf: url)
        do {
            let context = ModelContext(try Self.openJSON(url, TicketsIndexed.Ticket.self))
            let answers = try Self.indexedAnswers(context)
            #expect(answers.seat == Self.expectedSeat)
            #expect(answers.cheapest == Self.expectedCheapest)
            #expect(answers.plan.hasPrefix("INDEX Ticket(seat)"))
            #expect(try Data(contentsOf: url) == before, "opening wrote the document")
            context.insert(TicketsIndexed.Ticket(code: "T9999", seat: 7, price: 0.5))
            try context.save()
        }
        let document = try #require(String(data: try Data(contentsOf: url), encoding: .utf8))
        #expect(document.contains("\"seat\""))
        #expect(document.range(of: #""indexes"\s*:\s*\[\s*\[\s*"seat"\s*\]"#, options: .regularExpression) != nil)
        #expect(throws: DataStoreError.schemaMismatch) { try Self.openJSON(url, TicketsRenamed.Ticket.self) }
        let plain = try ModelContext(try Self.openJSON(url, TicketsPlain.Ticket.self)).fetchCount(
            FetchDescriptor<TicketsPlain.Ticket>(predicate: #Predicate { $0.seat == 7 }))
        #expect(plain == Self.expectedSeat.count + 1)
    }

    /// A constraint the records keep is added and then enforced; one they break is refused
    /// and the store left as it was; a removed one no longer applies.
    @Test func uniquenessAddedIsCheckedAndRemovedIsDropped() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let url = directory.storeURL
        try Self.plainStore(url)
        let before = try Data(contentsOf: url)

        // Seats repeat (i % 50): the constraint cannot hold.
        let error = #expect(throws: DataStoreError.schemaMismatch) { try Self.open(url, TicketsUniqueSeat.Ticket.self) }
        #expect(error?.message.contains("makes Ticket's seat unique") == true, "\(String(describing: error))")
        #expect(error?.message.contains("2950 more records") == true, "\(String(describing: error))")
        #expect(try Data(contentsOf: url) == before)

        // Codes are distinct: the constraint is added, and a save upserts by it.
        do {
            let (container, store) = try Self.open(url, TicketsUniqueCode.Ticket.self)
            let context = ModelContext(container)
            context.insert(TicketsUniqueCode.Ticket(code: "T7", seat: 99, price: 7.5))
            try context.save()
            let sevens = try context.fetch(
                FetchDescriptor<TicketsUniqueCode.Ticket>(predicate: #Predicate { $0.code == "T7" }))
            #expect(sevens.map(\.seat) == [99])
            #expect(try context.fetchCount(FetchDescriptor<TicketsUniqueCode.Ticket>()) == Self.count)
            store.close()
        }
        let (reopened, reopenedStore) = try Self.open(url, TicketsUniqueCode.Ticket.self)
        #expect(reopenedStore.openedFromCheckpoint)
        #expect(try ModelContext(reopened).fetchCount(FetchDescriptor<TicketsUniqueCode.Ticket>()) == Self.count)
        reopenedStore.close()

        // Removed again: two tickets may share a code.
        let (plain, plainStore) = try Self.open(url, TicketsPlain.Ticket.self)
        let context = ModelContext(plain)
        context.insert(TicketsPlain.Ticket(code: "T7", seat: 1, price: 1))
        try context.save()
        let sevens = try context.fetchCount(
            FetchDescriptor<TicketsPlain.Ticket>(predicate: #Predicate { $0.code == "T7" }))
        #expect(sevens == 2)
        plainStore.close()
    }

    @Test func theJSONStoreChecksAnAddedConstraint() throws {
        let url = JSONTest.freshURL()
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        do {
            let context = ModelContext(try Self.openJSON(url, TicketsPlain.Ticket.self))
            for i in 0..<200 { context.insert(TicketsPlain.Ticket(code: "T\(i)", seat: i % 50, price: Double(i))) }
            try context.save()
        }
        let error = #expect(throws: DataStoreError.schemaMismatch) {
            try Self.openJSON(url, TicketsUniqueSeat.Ticket.self)
        }
        #expect(error?.message.contains("uniqueness constraint") == true, "\(String(describing: error))")
        let context = ModelContext(try Self.openJSON(url, TicketsUniqueCode.Ticket.self))
        context.insert(TicketsUniqueCode.Ticket(code: "T7", seat: 99, price: 7.5))
        try context.save()
        #expect(try context.fetchCount(FetchDescriptor<TicketsUniqueCode.Ticket>()) == 200)
    }

    /// Records that break a constraint the document already had are damage, a
    /// `corruptStore`, even when the schema also adds a constraint (which they keep): only
    /// a duplicate under an added constraint is a `schemaMismatch`.
    @Test func theJSONStoreCallsABrokenOldConstraintDamageWhenTheSchemaAddsAnother() throws {
        let url = JSONTest.freshURL()
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        do {
            let context = ModelContext(try Self.openJSON(url, TicketsUniqueCode.Ticket.self))
            for i in 0..<200 { context.insert(TicketsUniqueCode.Ticket(code: "T\(i)", seat: i % 50, price: Double(i))) }
            try context.save()
        }
        // Ticket T1 gets T0's code, as a hand edit or a damaged copy might give it.
        let written = try #require(String(data: try Data(contentsOf: url), encoding: .utf8))
        #expect(written.components(separatedBy: "\"T1\"").count == 2, "the code T1 is not written once")
        try Data(written.replacingOccurrences(of: "\"T1\"", with: "\"T0\"").utf8).write(to: url)
        let damaged = try Data(contentsOf: url)

        let same = #expect(throws: DataStoreError.corruptStore) {
            try Self.openJSON(url, TicketsUniqueCode.Ticket.self)
        }
        #expect(same?.message.contains("the same code") == true, "\(String(describing: same))")
        let added = #expect(throws: DataStoreError.corruptStore) {
            try Self.openJSON(url, TicketsUniqueCodeAndPrice.Ticket.self)
        }
        #expect(added?.message.contains("the same code") == true, "\(String(describing: added))")
        #expect(added?.message.contains("adds") == false, "\(String(describing: added))")
        #expect(try Data(contentsOf: url) == damaged, "opening changed the document")

        // The same document with T1's code back opens under the added constraint.
        try Data(written.utf8).write(to: url)
        let context = ModelContext(try Self.openJSON(url, TicketsUniqueCodeAndPrice.Ticket.self))
        #expect(try context.fetchCount(FetchDescriptor<TicketsUniqueCodeAndPrice.Ticket>()) == 200)
    }
}
