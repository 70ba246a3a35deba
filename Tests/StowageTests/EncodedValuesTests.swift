import Foundation
import StowageTestSupport
import Testing

@testable import Stowage

/// A model of an entity whose attributes are all of common types writes its values in the
/// store's form (values mode, `ModelBackingData.encodedValues`), and a save takes them as
/// they are. A saved record must never change with a later write to the model, and a model
/// must read back what it was given at every step.
@Suite("Values written encoded")
struct EncodedValuesTests {
    static let date = Date(timeIntervalSinceReferenceDate: 9_876.25)
    static let uuid = UUID(uuidString: "0F9619FF-8B86-D011-B42D-00CF4FC964FF")!

    static func containers() throws -> [(String, ModelContainer, LogTestDirectory?)] {
        try memoryAndLogContainers(for: Reading.self)
    }

    @Test func theEntityIsInValuesMode() {
        #expect(Schema([Reading.self]).entitiesByName["Reading"]?.lazyChecks?.count == 9)
        let reading = Reading(label: "new")
        let snapshot = try? reading.persistentBackingData.snapshot()
        #expect(
            snapshot?.values == [
                .string("new"), .int(0), .int(0), .double(0), .bool(false), .date(Date(timeIntervalSince1970: 0)),
                .uuid(UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))), .data(Data()), .null,
            ])
    }

    @Test func valuesReadBackAtEveryStep() throws {
        for (name, container, directory) in try Self.containers() {
            defer { directory?.remove() }
            let context = ModelContext(container)
            let reading = Reading(label: "first")
            reading.count = 3
            reading.big = -9
            reading.ratio = 0.5
            reading.flag = true
            reading.when = Self.date
            reading.id = Self.uuid
            reading.blob = Data([9, 8])
            reading.note = "n"
            #expect(reading.label == "first", "\(name)")
            context.insert(reading)
            try context.save()
            #expect(reading.count == 3 && reading.note == "n", "\(name): after the save")

            // A write after the save changes the model, not the record saved before it.
            reading.label = "second"
            reading.note = nil
            #expect(reading.label == "second" && reading.note == nil, "\(name)")
            let other = try #require(try ModelContext(container).fetch(FetchDescriptor<Reading>()).first)
            #expect(other.label == "first", "\(name): the saved record changed with an unsaved write")
            #expect(other.note == "n", "\(name)")
            #expect(other.count == 3 && other.big == -9 && other.ratio == 0.5 && other.flag, "\(name)")
            #expect(other.when == Self.date && other.id == Self.uuid && other.blob == Data([9, 8]), "\(name)")

            try context.save()
            let fetcher = ModelContext(container)
            let again = try #require(try fetcher.fetch(FetchDescriptor<Reading>()).first)
            #expect(again.label == "second" && again.note == nil, "\(name)")

            // A fetched model written to and saved, then written again without a save.
            again.count = 11
            try fetcher.save()
            again.count = 12
            let third = try #require(try ModelContext(container).fetch(FetchDescriptor<Reading>()).first)
            #expect(third.count == 11, "\(name)")
            #expect(again.count == 12, "\(name)")
        }
    }

    @Test func aSnapshotIsAValueTheModelCannotChange() throws {
        let reading = Reading(label: "kept")
        let before = try reading.persistentBackingData.snapshot()
        reading.label = "changed"
        reading.count = 5
        #expect(before.values[0] == .string("kept"))
        #expect(before.values[1] == .int(0))
        let after = try reading.persistentBackingData.snapshot()
        #expect(after.values[0] == .string("changed"))
        #expect(after.values[1] == .int(5))
    }

    @Test func uniqueValuesWrittenEncodedStillUpsert() throws {
        for (name, container, directory) in try Self.containers() {
            defer { directory?.remove() }
            let context = ModelContext(container)
            let first = Reading(label: "a")
            first.id = Self.uuid
            first.count = 1
            context.insert(first)
            try context.save()
            let second = Reading(label: "b")
            second.id = Self.uuid
            second.count = 2
            context.insert(second)
            try context.save()
            let all = try ModelContext(container).fetch(FetchDescriptor<Reading>())
            #expect(all.count == 1, "\(name)")
            #expect(all.first?.label == "b" && all.first?.count == 2, "\(name)")
        }
    }

    /// A save leaves each inserted model holding its own values, whichever store it went
    /// to, when models of two stores are inserted interleaved (each store's snapshots share
    /// the arrays of its own models).
    @Test func modelsOfTwoStoresKeepTheirOwnValuesAfterASave() throws {
        let schema = Schema([Reading.self, Dial.self])
        let readings = MemoryStoreConfiguration(name: "readings", schema: Schema([Reading.self]))
        let gauges = MemoryStoreConfiguration(name: "gauges", schema: Schema([Dial.self]))
        let container = try ModelContainer(for: schema, configurations: [readings, gauges])
        #expect(schema.entitiesByName["Dial"]?.lazyChecks != nil, "Dial should be in values mode")
        let context = ModelContext(container)
        var made: [(Reading?, Dial?)] = []
        for i in 0..<7 {
            if i % 3 == 1 {
                let gauge = Dial(name: "g\(i)", level: i * 10)
                context.insert(gauge)
                made.append((nil, gauge))
            } else {
                let reading = Reading(label: "r\(i)")
                reading.count = i
                reading.id = UUID()  // `id` is unique: equal ones would upsert into one record
                context.insert(reading)
                made.append((reading, nil))
            }
        }
        try context.save()
        for (i, pair) in made.enumerated() {
            if let reading = pair.0 { #expect(reading.label == "r\(i)" && reading.count == i) }
            if let gauge = pair.1 { #expect(gauge.name == "g\(i)" && gauge.level == i * 10) }
        }
        // A write after the save changes the model only.
        let first = try #require(made[0].0)
        first.count = 99
        let stored = try ModelContext(container).fetch(
            FetchDescriptor<Reading>(predicate: #Predicate { $0.label == "r0" }))
        #expect(stored.map(\.count) == [0])
    }

    /// The common types and their optionals are recognised by their exact type, and
    /// everything else still by a cast: the result is the same, and an empty optional of a
    /// common type is `.null`.
    @Test func directValuesOfEveryCommonTypeAndOfOptionals() {
        let id = UUID()
        let date = Date(timeIntervalSince1970: 1_700_000_000)
        let cases: [(Any, SnapshotValue?)] = [
            ("text", .string("text")), (id, .uuid(id)), (42, .int(42)), (2.5, .double(2.5)),
            (true, .bool(true)), (date, .date(date)), (Int64(-7), .int(-7)), (Int32(7), .int(7)),
            (UInt8(9), .uint(9)), (Float(1.5), .double(1.5)),
            (Optional("wrapped") as Any, .string("wrapped")), (Optional(id) as Any, .uuid(id)),
            (Optional<Int>.none as Any, .null), (Optional<Int8>.some(3) as Any, .int(3)), ([1, 2], nil),
        ]
        for (value, expected) in cases {
            #expect(SnapshotValueEncoder.directValue(value) == expected, "\(type(of: value)) \(value)")
        }
    }
}

/// Attributes of common types only, so that it writes its values encoded.
@Model
final class Reading {
    var label: String
    var count: Int = 0
    var big: Int64 = 0
    var ratio: Double = 0
    var flag = false
    var when = Date(timeIntervalSince1970: 0)
    @Attribute(.unique) var id = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
    var blob = Data()
    var note: String?

    init(label: String) {
        self.label = label
    }
}

/// A second model of common types only, for a store of its own.
@Model
final class Dial {
    var name: String
    var level: Int

    init(name: String, level: Int) {
        self.name = name
        self.level = level
    }
}
