import Foundation
import StowageTestSupport
import Testing

@_spi(Testing) @testable import Stowage

/// `Ticket` grown: an optional note, a currency with a default value, and a to-many
/// relationship to a new entity.
enum TicketsGrown {
    @Model final class Stamp {
        var mark: String
        init(mark: String) { self.mark = mark }
    }

    @Model final class Ticket {
        var code: String
        var seat: Int
        var price: Double
        var note: String?
        var currency: String = "EUR"
        var stamps: [Stamp] = []
        init(code: String, seat: Int, price: Double) {
            self.code = code
            self.seat = seat
            self.price = price
        }
    }
}

/// `Ticket` shrunk: the seat removed, the price renamed.
enum TicketsShrunk {
    @Model final class Ticket {
        var code: String
        @Attribute(originalName: "price") var cost: Double
        init(code: String, cost: Double) {
            self.code = code
            self.cost = cost
        }
    }
}

/// `Ticket` with the seat's type changed: needs a migration.
enum TicketsRetyped {
    @Model final class Ticket {
        var code: String
        var seat: String
        var price: Double
        init(code: String, seat: String, price: Double) {
            self.code = code
            self.seat = seat
            self.price = price
        }
    }
}

/// A shot with its bytes in an external file, before and after a property was added in
/// front of them (which moves the bytes' position, and so their file's name).
enum ShotsBefore {
    @Model final class Shot {
        var title: String
        @Attribute(.externalStorage) var bytes: Data
        init(title: String, bytes: Data) {
            self.title = title
            self.bytes = bytes
        }
    }
}

enum ShotsAfter {
    @Model final class Shot {
        var caption: String?
        var title: String
        @Attribute(.externalStorage) var bytes: Data
        init(title: String, bytes: Data) {
            self.title = title
            self.bytes = bytes
        }
    }
}

/// The shot with its bytes kept in the log instead.
enum ShotsInline {
    @Model final class Shot {
        var title: String
        var bytes: Data
        init(title: String, bytes: Data) {
            self.title = title
            self.bytes = bytes
        }
    }
}

/// The format samples' models, each grown by a property.
enum SamplesGrown {
    @Model final class LogSampleTrip {
        var name: String
        var startDate: Date
        var budget: Double = 0
        var note: String?
        @Relationship(deleteRule: .cascade, inverse: \LogSampleItem.trip) var items: [LogSampleItem] = []
        var rating: Int = 3
        init(name: String) {
            self.name = name
            self.startDate = Date(timeIntervalSince1970: 0)
        }
    }

    @Model final class LogSampleItem {
        var name: String
        var quantity: Int = 1
        var packed: Bool?
        var trip: LogSampleTrip?
        init(name: String) { self.name = name }
    }
}

/// Schema changes that need no migration plan (SwiftData's lightweight migration). In a
/// format version 6 file the store appends one layout record and reads the records before
/// it through the new layout (`Formats/log.md`, "Layout record"); a change a layout record
/// cannot make, or an older file, is converted and rewritten on the first open.
@Suite("LogStore lightweight schema changes")
struct LogSchemaConversionTests {
    typealias T = LogIndexChangeTests

    @Test func propertiesAddedWithDefaultsAndANewEntity() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let url = directory.storeURL
        try T.plainStore(url)
        let before = try Data(contentsOf: url)
        do {
            let (container, store) = try T.open(url, TicketsGrown.Ticket.self)
            // Nothing was rewritten: one layout record follows the old bytes, and the
            // checkpoint before it still gives the indexes.
            #expect(store.openedFromCheckpoint)
            let after = try Data(contentsOf: url)
            #expect(after.prefix(before.count) == before)
            let records = try LogStore.recordOffsets(ofFileAt: url)
            #expect(records.count >= 2 && records[records.count - 2] == Int64(before.count))
            #expect(after[Int(before.count) + 4] == LogFormat.RecordType.layout.rawValue)
            let context = ModelContext(container)
            let tickets = try context.fetch(FetchDescriptor<TicketsGrown.Ticket>(sortBy: [SortDescriptor(\.price)]))
            #expect(tickets.count == T.count)
            #expect(tickets.map(\.code) == (0..<T.count).map { "T\($0)" })
            #expect(tickets.map(\.seat) == (0..<T.count).map { $0 % 50 })
            #expect(tickets.allSatisfy { $0.note == nil && $0.currency == "EUR" && $0.stamps.isEmpty })
            // The new shape saves: a stamp on one ticket, a note on another.
            tickets[3].stamps.append(TicketsGrown.Stamp(mark: "validated"))
            tickets[4].note = "window"
            try context.save()
            store.close()
        }
        let (container, store) = try T.open(url, TicketsGrown.Ticket.self)
        #expect(store.openedFromCheckpoint, "the rewritten file has a checkpoint of the new layout")
        let context = ModelContext(container)
        let t3 = try context.fetch(FetchDescriptor<TicketsGrown.Ticket>(predicate: #Predicate { $0.code == "T3" }))
        #expect(t3.first?.stamps.map(\.mark) == ["validated"])
        let noted = try context.fetch(FetchDescriptor<TicketsGrown.Ticket>(predicate: #Predicate { $0.note != nil }))
        #expect(noted.map(\.code) == ["T4"])
        store.close()
        // Going back would drop the new properties and the stamps: that needs a migration.
        let error = #expect(throws: DataStoreError.schemaMismatch) { try T.open(url, TicketsPlain.Ticket.self) }
        #expect(
            error?.message.contains("Stamp records, which the schema lacks") == true, "\(String(describing: error))")
    }

    @Test func aPropertyRemovedAndOneRenamed() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let url = directory.storeURL
        try T.plainStore(url)
        let (container, store) = try T.open(url, TicketsShrunk.Ticket.self)
        let tickets = try ModelContext(container).fetch(
            FetchDescriptor<TicketsShrunk.Ticket>(
                predicate: #Predicate { $0.cost < 3 }, sortBy: [SortDescriptor(\.cost)]))
        #expect(tickets.map(\.code) == ["T0", "T1", "T2"])
        #expect(tickets.map(\.cost) == [0, 1, 2])
        store.close()
        let (again, againStore) = try T.open(url, TicketsShrunk.Ticket.self)
        #expect(againStore.openedFromCheckpoint)
        #expect(try ModelContext(again).fetchCount(FetchDescriptor<TicketsShrunk.Ticket>()) == T.count)
        againStore.close()
    }

    @Test func changesThatNeedAMigrationAreRefusedAndTheFileKept() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let url = directory.storeURL
        try T.plainStore(url)
        let before = directoryContents(directory.url)
        let retyped = #expect(throws: DataStoreError.schemaMismatch) { try T.open(url, TicketsRetyped.Ticket.self) }
        #expect(
            retyped?.message.contains("needs a migration: Ticket.seat is seat: Int") == true,
            "\(String(describing: retyped))")
        let renamed = #expect(throws: DataStoreError.schemaMismatch) { try T.open(url, TicketsRenamed.Ticket.self) }
        #expect(renamed?.message.contains("Ticket.row is new, not optional, and has no default value") == true)
        #expect(directoryContents(directory.url) == before)
        let (container, store) = try T.open(url, TicketsPlain.Ticket.self)
        #expect(try ModelContext(container).fetchCount(FetchDescriptor<TicketsPlain.Ticket>()) == T.count)
        store.close()
    }

    /// External values are read whole, converted, and written to files named for their
    /// new position; the old files go only after the new file is in place.
    @Test func externalValuesMoveToTheirNewPosition() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let url = directory.storeURL
        let payloads = (0..<20).map { LogExternalStorageTests.payload(UInt8($0), count: 5_000) }
        func open(_ type: any PersistentModel.Type, fileSystem: (any StoreFileSystem)? = nil) throws -> (
            ModelContainer, LogStore
        ) {
            try T.open(url, type, fileSystem: fileSystem)
        }
        do {
            let (container, store) = try open(ShotsBefore.Shot.self)
            let context = ModelContext(container)
            for (i, bytes) in payloads.enumerated() { context.insert(ShotsBefore.Shot(title: "S\(i)", bytes: bytes)) }
            try context.save()
            store.close()
        }
        let oldFiles = LogExternalStorageTests.blobs(url)
        #expect(oldFiles.count == 20)

        // A rewrite that fails at its rename leaves the old file and its values.
        let fs = FaultInjectingFileSystem()
        fs.arm(.rename, failOn: 1)
        #expect(throws: DataStoreError.ioFailure) { try open(ShotsAfter.Shot.self, fileSystem: fs) }
        #expect(LogExternalStorageTests.blobs(url) == oldFiles)
        do {
            let (container, store) = try open(ShotsBefore.Shot.self)
            let shots = try ModelContext(container).fetch(
                FetchDescriptor<ShotsBefore.Shot>(sortBy: [SortDescriptor(\.title)]))
            #expect(Set(shots.map(\.bytes)) == Set(payloads))
            store.close()
        }

        let (container, store) = try open(ShotsAfter.Shot.self)
        let shots = try ModelContext(container).fetch(FetchDescriptor<ShotsAfter.Shot>())
        #expect(shots.count == 20)
        for shot in shots { #expect(shot.bytes == payloads[Int(shot.title.dropFirst())!]) }
        #expect(shots.allSatisfy { $0.caption == nil })
        let newFiles = LogExternalStorageTests.blobs(url)
        #expect(newFiles.count == 20)
        #expect(Set(newFiles).isDisjoint(with: oldFiles), "\(newFiles)")
        store.close()
        let (again, againStore) = try open(ShotsAfter.Shot.self)
        let reread = try ModelContext(again).fetch(FetchDescriptor<ShotsAfter.Shot>())
        #expect(Set(reread.map(\.bytes)) == Set(payloads))
        againStore.close()
    }

    @Test func readOnlyTheRecordsAreConvertedAndNothingWritten() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let url = directory.storeURL
        try T.plainStore(url)
        let before = directoryContents(directory.url)
        let (container, store) = try T.open(
            url, TicketsGrown.Ticket.self, allowsSave: false, fileSystem: ReadOnlyFileSystem())
        let tickets = try ModelContext(container).fetch(
            FetchDescriptor<TicketsGrown.Ticket>(predicate: #Predicate { $0.seat == 7 }))
        #expect(tickets.count == T.expectedSeat.count)
        #expect(tickets.allSatisfy { $0.currency == "EUR" })
        store.close()
        #expect(directoryContents(directory.url) == before)
    }

    /// Dropping an entity would lose its records: that needs a migration.
    @Test func anEntityTheSchemaLacksIsRefused() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let url = directory.storeURL
        do {
            let container = try ModelContainer(
                for: Schema([TicketsPlain.Ticket.self, Chore.self]),
                configurations: [
                    LogStoreConfiguration(schema: Schema([TicketsPlain.Ticket.self, Chore.self]), url: url)
                ])
            let context = ModelContext(container)
            context.insert(Chore(seq: 1, title: "Sweep", priority: 1, isCompleted: false, dueDate: nil))
            try context.save()
        }
        let error = #expect(throws: DataStoreError.schemaMismatch) { try T.open(url, TicketsPlain.Ticket.self) }
        #expect(error?.message.contains("Chore") == true)
    }

    /// Every sample, of every format version (records held in memory in versions 1 to 3,
    /// by location in 4 and 5), converts: the same trips, items and links, with the new
    /// properties' defaults, before and after the rewrite.
    @Test(arguments: [
        "trips-v1.stowlog", "trips-v1-torn.stowlog", "trips-v3.stowlog", "trips-v4.stowlog", "trips-v5.stowlog",
    ])
    func theSamplesConvert(_ name: String) throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let sample = LogGoldenTests.samples.appendingPathComponent(name)
        let original = directory.url.appendingPathComponent("original-" + name)
        let url = directory.url.appendingPathComponent(name)
        try FileManager.default.copyItem(at: sample, to: original)
        try FileManager.default.copyItem(at: sample, to: url)
        let expected: [String] = try {
            let container = try ModelContainer(
                for: LogSamples.schema,
                configurations: [LogStoreConfiguration(schema: LogSamples.schema, url: original)])
            let context = ModelContext(container)
            return try context.fetch(FetchDescriptor<LogSampleTrip>()).map { trip in
                "\(trip.name) \(trip.budget) \(trip.note ?? "-") "
                    + trip.items.map { "\($0.name)x\($0.quantity)" }.sorted().joined(separator: ",")
            }.sorted()
        }()
        #expect(!expected.isEmpty)
        let grown = Schema([SamplesGrown.LogSampleTrip.self, SamplesGrown.LogSampleItem.self])
        for round in 0..<2 {
            let container = try ModelContainer(
                for: grown, configurations: [LogStoreConfiguration(schema: grown, url: url)])
            let context = ModelContext(container)
            let trips = try context.fetch(FetchDescriptor<SamplesGrown.LogSampleTrip>())
            let found = trips.map { trip in
                "\(trip.name) \(trip.budget) \(trip.note ?? "-") "
                    + trip.items.map { "\($0.name)x\($0.quantity)" }.sorted().joined(separator: ",")
            }.sorted()
            #expect(found == expected, "round \(round)")
            #expect(trips.allSatisfy { $0.rating == 3 })
            #expect(try context.fetch(FetchDescriptor<SamplesGrown.LogSampleItem>()).allSatisfy { $0.packed == nil })
        }
        #expect(try Data(contentsOf: url)[8] == LogFormat.version.rawValue, "not rewritten in the current version")
    }

    /// An attribute moved out of external storage and back: the values go inline, then to
    /// files again, and stay the same.
    @Test func valuesMoveOutOfExternalStorageAndBack() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let url = directory.storeURL
        let payloads = (0..<5).map { LogExternalStorageTests.payload(UInt8(40 + $0), count: 3_000) }
        do {
            let (container, store) = try T.open(url, ShotsBefore.Shot.self)
            let context = ModelContext(container)
            for (i, bytes) in payloads.enumerated() { context.insert(ShotsBefore.Shot(title: "S\(i)", bytes: bytes)) }
            try context.save()
            store.close()
        }
        #expect(LogExternalStorageTests.blobs(url).count == 5)
        do {
            let (container, store) = try T.open(url, ShotsInline.Shot.self)
            let shots = try ModelContext(container).fetch(
                FetchDescriptor<ShotsInline.Shot>(sortBy: [SortDescriptor(\.title)]))
            #expect(shots.map(\.bytes) == payloads)
            #expect(LogExternalStorageTests.blobs(url).isEmpty)
            #expect(LogExternalStorageTests.contains(try Data(contentsOf: url), payloads[0]))
            store.close()
        }
        let (container, store) = try T.open(url, ShotsBefore.Shot.self)
        let shots = try ModelContext(container).fetch(
            FetchDescriptor<ShotsBefore.Shot>(sortBy: [SortDescriptor(\.title)]))
        #expect(shots.map(\.bytes) == payloads)
        #expect(LogExternalStorageTests.blobs(url).count == 5)
        #expect(!LogExternalStorageTests.contains(try Data(contentsOf: url), payloads[0]))
        store.close()
    }

    /// A converting open that fails at any write, sync, rename or directory sync leaves a
    /// store that the new schema opens with every value: the old file (converted again) or
    /// the new one. Files of neither layout are left behind.
    @Test func aConversionThatFailsAnywhereLosesNothing() throws {
        let payloads = (0..<6).map { LogExternalStorageTests.payload(UInt8(90 + $0), count: 2_000) }
        var injected = 0
        for operation in FaultInjectingFileSystem.Operation.allCases {
            for n in 1...6 {
                let directory = LogTestDirectory.fresh()
                defer { directory.remove() }
                let url = directory.storeURL
                do {
                    let (container, store) = try T.open(url, ShotsBefore.Shot.self)
                    let context = ModelContext(container)
                    for (i, bytes) in payloads.enumerated() {
                        context.insert(ShotsBefore.Shot(title: "S\(i)", bytes: bytes))
                    }
                    try context.save()
                    store.close()
                }
                let fs = FaultInjectingFileSystem()
                fs.arm(operation, failOn: n)
                do {
                    let (_, store) = try T.open(url, ShotsAfter.Shot.self, fileSystem: fs)
                    store.close()
                } catch let error as DataStoreError {
                    #expect(error.code == .ioFailure, "\(operation) \(n): \(error)")
                }
                injected += fs.injected.count
                let (container, store) = try T.open(url, ShotsAfter.Shot.self)
                let shots = try ModelContext(container).fetch(FetchDescriptor<ShotsAfter.Shot>())
                #expect(shots.count == payloads.count, "\(operation) \(n)")
                for shot in shots {
                    #expect(shot.bytes == payloads[Int(shot.title.dropFirst())!], "\(operation) \(n): \(shot.title)")
                }
                store.close()
                #expect(LogExternalStorageTests.blobs(url).count == payloads.count, "\(operation) \(n)")
            }
        }
        #expect(injected > 10, "too few of the failures were reached")
    }

    /// The JSON store converts the same changes as it reads its document, and writes the
    /// new layout with its next save.
    @Test func theJSONStoreConvertsToo() throws {
        func store(_ name: String, _ type: any PersistentModel.Type, at url: URL) throws -> ModelContainer {
            try ModelContainer(
                for: Schema([type]),
                configurations: [JSONStoreConfiguration(name: name, schema: Schema([type]), fileURL: url)])
        }
        let url = JSONTest.freshURL()
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        let other = url.deletingLastPathComponent().appendingPathComponent("other.json")
        for target in [url, other] {
            let context = ModelContext(try store("plain", TicketsPlain.Ticket.self, at: target))
            for i in 0..<100 { context.insert(TicketsPlain.Ticket(code: "T\(i)", seat: i % 50, price: Double(i))) }
            try context.save()
        }
        let before = try Data(contentsOf: url)
        #expect(throws: DataStoreError.schemaMismatch) { try store("retyped", TicketsRetyped.Ticket.self, at: url) }

        do {
            let context = ModelContext(try store("grown", TicketsGrown.Ticket.self, at: url))
            let tickets = try context.fetch(FetchDescriptor<TicketsGrown.Ticket>(sortBy: [SortDescriptor(\.price)]))
            #expect(tickets.map(\.code) == (0..<100).map { "T\($0)" })
            #expect(tickets.allSatisfy { $0.note == nil && $0.currency == "EUR" && $0.stamps.isEmpty })
            #expect(try Data(contentsOf: url) == before, "opening wrote the document")
            tickets[1].stamps.append(TicketsGrown.Stamp(mark: "ok"))
            try context.save()
        }
        let document = try #require(String(data: try Data(contentsOf: url), encoding: .utf8))
        #expect(document.contains(#""currency""#) && document.contains(#""Stamp""#))
        let context = ModelContext(try store("grown", TicketsGrown.Ticket.self, at: url))
        let t1 = try context.fetch(FetchDescriptor<TicketsGrown.Ticket>(predicate: #Predicate { $0.code == "T1" }))
        #expect(t1.first?.stamps.map(\.mark) == ["ok"])
        #expect(t1.first?.currency == "EUR")

        let shrunk = try ModelContext(try store("shrunk", TicketsShrunk.Ticket.self, at: other)).fetch(
            FetchDescriptor<TicketsShrunk.Ticket>(
                predicate: #Predicate { $0.cost < 2 }, sortBy: [SortDescriptor(\.cost)]))
        #expect(shrunk.map(\.code) == ["T0", "T1"])
    }
}
