import Foundation
import StowageTestSupport
import Testing

@_spi(Testing) @testable import Stowage

/// A model of an entity whose attributes all have fast conversions keeps the values it was
/// fetched with and decodes each on read (`ModelBackingData`). Reads, writes and saves
/// must behave as if every value had been decoded at fetch, and a value that would not
/// decode must still fail the fetch, never a later read.
/// A memory container and a log container (in a fresh directory, for the caller to remove)
/// of one model type, named for test messages.
func memoryAndLogContainers(for type: any PersistentModel.Type) throws -> [(String, ModelContainer, LogTestDirectory?)]
{
    let memory = try ModelContainer(for: type, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
    let directory = LogTestDirectory.fresh()
    let log = try ModelContainer(
        for: [type], configurations: [LogStoreConfiguration(schema: Schema([type]), url: directory.storeURL)])
    return [("memory", memory, nil), ("log", log, directory)]
}

@Suite("Values decoded on read")
struct LazyValueTests {
    static let date = Date(timeIntervalSinceReferenceDate: 123_456.5)
    static let uuid = UUID(uuidString: "6F9619FF-8B86-D011-B42D-00CF4FC964FF")!

    static func filled() -> Gauge {
        Gauge(
            text: "hello", count: -42, small: 70_000, big: Int64.min, ratio: 0.25, single: 1.5, flag: true,
            when: date, id: uuid, blob: Data([1, 2, 3]), link: URL(string: "https://example.com/a")!,
            amount: Decimal(string: "12.34")!, note: "n", level: 7)
    }

    static func expectFilled(_ gauge: Gauge) {
        #expect(gauge.text == "hello")
        #expect(gauge.count == -42)
        #expect(gauge.small == 70_000)
        #expect(gauge.big == Int64.min)
        #expect(gauge.ratio == 0.25)
        #expect(gauge.single == 1.5)
        #expect(gauge.flag)
        #expect(gauge.when == date)
        #expect(gauge.id == uuid)
        #expect(gauge.blob == Data([1, 2, 3]))
        #expect(gauge.link == URL(string: "https://example.com/a")!)
        #expect(gauge.amount == Decimal(string: "12.34")!)
        #expect(gauge.note == "n")
        #expect(gauge.level == 7)
    }

    static func containers() throws -> [(String, ModelContainer, LogTestDirectory?)] {
        try memoryAndLogContainers(for: Gauge.self)
    }

    @Test func theEntityQualifiesAndOneWithARelationshipDoesNot() {
        #expect(Schema([Gauge.self]).entitiesByName["Gauge"]?.lazyChecks?.count == 14)
        #expect(Schema([Trip.self]).entitiesByName["Trip"]?.lazyChecks == nil)
    }

    @Test func everyTypeReadsBackAfterAFetch() throws {
        for (name, container, directory) in try Self.containers() {
            defer { directory?.remove() }
            let context = ModelContext(container)
            context.insert(Self.filled())
            context.insert(Gauge(text: "empty"))
            try context.save()
            let fetched = try ModelContext(container).fetch(FetchDescriptor<Gauge>(sortBy: [SortDescriptor(\.text)]))
            #expect(fetched.map(\.text) == ["empty", "hello"], "\(name)")
            Self.expectFilled(fetched[1])
            #expect(fetched[0].note == nil, "\(name)")
            #expect(fetched[0].level == nil, "\(name)")
            #expect(fetched[0].count == 0, "\(name)")
        }
    }

    /// The first write decodes the other values into the model: a save after it stores
    /// them all, not just the one written.
    @Test func aWriteAfterAFetchKeepsTheOtherValues() throws {
        for (name, container, directory) in try Self.containers() {
            defer { directory?.remove() }
            let writer = ModelContext(container)
            writer.insert(Self.filled())
            try writer.save()
            let editor = ModelContext(container)
            let gauge = try #require(try editor.fetch(FetchDescriptor<Gauge>()).first)
            gauge.level = nil
            gauge.count += 1
            #expect(gauge.text == "hello", "\(name)")
            try editor.save()
            let again = try #require(try ModelContext(container).fetch(FetchDescriptor<Gauge>()).first)
            #expect(again.count == -41, "\(name)")
            #expect(again.level == nil, "\(name)")
            again.count = -42
            again.level = 7
            Self.expectFilled(again)
        }
    }

    /// Values written by the app are kept encoded when their type is a common one; reads
    /// before any save, and the snapshot a save takes, must see exactly what was written.
    @Test func writtenValuesReadBackBeforeAndAfterASave() throws {
        let context = ModelContext(
            try ModelContainer(for: Gauge.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true)))
        let empty = Gauge(text: "empty")
        #expect(empty.text == "empty" && empty.count == 0 && empty.note == nil && empty.level == nil)
        #expect(empty.when == Date(timeIntervalSinceReferenceDate: 0) && !empty.flag && empty.small == 0)
        let gauge = Self.filled()
        Self.expectFilled(gauge)
        gauge.note = nil
        gauge.level = nil
        #expect(gauge.note == nil && gauge.level == nil)
        gauge.note = "again"
        gauge.level = -1
        context.insert(gauge)
        let snapshot = try context.snapshotForTesting(gauge)
        let entity = try #require(Schema([Gauge.self]).entitiesByName["Gauge"])
        #expect(snapshot.value(forKey: "note", in: entity) == .string("again"))
        #expect(snapshot.value(forKey: "level", in: entity) == .int(-1))
        #expect(snapshot.value(forKey: "count", in: entity) == .int(-42))
        #expect(snapshot.value(forKey: "small", in: entity) == .int(70_000))
        #expect(snapshot.value(forKey: "when", in: entity) == .date(Self.date))
        try context.save()
        gauge.note = "n"
        gauge.level = 7
        Self.expectFilled(gauge)
    }

    /// A property with a transformer never takes the direct encoding, even when its type
    /// is a common one: its value is stored as the transformer's data.
    @Test func aTransformedStringGoesThroughItsTransformer() throws {
        let container = try ModelContainer(
            for: Shouter.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let entity = try #require(container.schema.entitiesByName["Shouter"])
        #expect(entity.lazyChecks == nil)
        let context = ModelContext(container)
        let shouter = Shouter(word: "quiet", plain: "plain")
        #expect(shouter.word == "quiet")
        context.insert(shouter)
        let snapshot = try context.snapshotForTesting(shouter)
        #expect(snapshot.value(forKey: "word", in: entity) == .data(Data("QUIET".utf8)))
        #expect(snapshot.value(forKey: "plain", in: entity) == .string("plain"))
        try context.save()
        let fetched = try #require(try ModelContext(container).fetch(FetchDescriptor<Shouter>()).first)
        #expect(fetched.word == "quiet")
        #expect(fetched.plain == "plain")
    }

    @Test func aValueOfAnotherCaseThatDecodesTakesTheEagerPath() throws {
        let container = try ModelContainer(
            for: Gauge.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let entity = try #require(container.schema.entitiesByName["Gauge"])
        var values = try ModelContext(container).snapshotForTesting(Self.filled()).values
        // The fast conversion of a Double takes `.double` only; the general one takes an
        // integer too.
        values[entity.property(named: "ratio")!.index] = .int(3)
        try storeRecord(values, of: "Gauge", in: container)
        let gauge = try #require(try ModelContext(container).fetch(FetchDescriptor<Gauge>()).first)
        #expect(gauge.ratio == 3)
        #expect(gauge.text == "hello")
    }

    @Test func aValueThatDoesNotDecodeFailsTheFetch() throws {
        for (property, value) in [("text", SnapshotValue.int(1)), ("count", .string("x")), ("note", .bool(true))] {
            let container = try ModelContainer(
                for: Gauge.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
            let entity = try #require(container.schema.entitiesByName["Gauge"])
            var values = try ModelContext(container).snapshotForTesting(Self.filled()).values
            values[entity.property(named: property)!.index] = value
            try storeRecord(values, of: "Gauge", in: container)
            do {
                _ = try ModelContext(container).fetch(FetchDescriptor<Gauge>())
                Issue.record("\(property): the fetch should have thrown")
            } catch let error as SwiftDataError {
                #expect(error.code == .modelValidationFailure, "\(property)")
                #expect(error.message.contains(property), "\(property): \(error.message)")
            }
        }
    }
}

@Model
final class Gauge {
    var text: String
    var count: Int = 0
    var small: Int32 = 0
    var big: Int64 = 0
    var ratio: Double = 0
    var single: Float = 0
    var flag = false
    var when = Date(timeIntervalSinceReferenceDate: 0)
    var id = UUID()
    var blob = Data()
    var link = URL(string: "https://example.com")!
    var amount = Decimal(0)
    var note: String?
    var level: Int?

    init(text: String) {
        self.text = text
    }

    init(
        text: String, count: Int, small: Int32, big: Int64, ratio: Double, single: Float, flag: Bool, when: Date,
        id: UUID, blob: Data, link: URL, amount: Decimal, note: String?, level: Int?
    ) {
        self.text = text
        self.count = count
        self.small = small
        self.big = big
        self.ratio = ratio
        self.single = single
        self.flag = flag
        self.when = when
        self.id = id
        self.blob = blob
        self.link = link
        self.amount = amount
        self.note = note
        self.level = level
    }
}

/// Stores a string as its upper-cased UTF-8 bytes, and reads it back lower-cased.
final class ShoutTransformer: ValueTransformer {
    override class func allowsReverseTransformation() -> Bool { true }
    override func transformedValue(_ value: Any?) -> Any? {
        (value as? String).map { Data($0.uppercased().utf8) }
    }
    override func reverseTransformedValue(_ value: Any?) -> Any? {
        (value as? Data).map { String(decoding: $0, as: UTF8.self).lowercased() }
    }
}

@Model
final class Shouter {
    @Attribute(.transformable(by: ShoutTransformer.self)) var word: String
    var plain: String

    init(word: String, plain: String) {
        self.word = word
        self.plain = plain
    }
}
