import Foundation
import Stowage
import Testing

/// The behaviour every ``DataStore`` must show, run through `ModelContext` as a user
/// would. Each check takes a factory, so the Memory, JSON and Log stores all run the
/// same checks.
public enum StoreConformance {
    /// Every check, by name.
    public static let checks: [(String, @Sendable (StoreFactory) throws -> Void)] = [
        ("insert, save and fetch back", insertSaveFetch),
        ("identifiers become permanent and stable", permanentIdentifiers),
        ("updates and deletes persist", updatesAndDeletes),
        ("a failed save changes nothing", failedSaveIsAtomic),
        ("fetch windows and sorting", sortingAndWindows),
        ("count and identifiers agree with fetch", countAndIdentifiers),
        ("relationships survive a save", relationshipsRoundTrip),
        ("every value type round-trips", valueTypesRoundTrip),
        ("unique inserts upsert", uniqueUpsert),
        ("erase removes everything", eraseRemovesEverything),
    ]

    static func freshContext(_ factory: StoreFactory) throws -> (ModelContainer, ModelContext) {
        let container = try factory.container()
        return (container, ModelContext(container))
    }

    public static func insertSaveFetch(_ factory: StoreFactory) throws {
        let (container, context) = try freshContext(factory)
        context.insert(Trip(name: "Lisbon", destination: "PT"))
        context.insert(Trip(name: "Oslo", destination: "NO"))
        try context.save()
        let other = ModelContext(container)
        let names = try other.fetch(FetchDescriptor<Trip>(sortBy: [SortDescriptor(\.name)])).map(\.name)
        #expect(names == ["Lisbon", "Oslo"])
    }

    public static func permanentIdentifiers(_ factory: StoreFactory) throws {
        let (container, context) = try freshContext(factory)
        let trip = Trip(name: "Rome")
        context.insert(trip)
        #expect(trip.persistentModelID.isTemporary)
        try context.save()
        let id = trip.persistentModelID
        #expect(!id.isTemporary)
        #expect(id.entityName == "Trip")
        #expect(id.storeIdentifier != nil)
        let other = ModelContext(container)
        let fetched = try #require(try other.existingModel(for: id) as? Trip)
        #expect(fetched.name == "Rome")
        #expect(fetched.persistentModelID == id)
        let copy = try JSONDecoder().decode(PersistentIdentifier.self, from: JSONEncoder().encode(id))
        #expect(copy == id)
    }

    public static func updatesAndDeletes(_ factory: StoreFactory) throws {
        let (container, context) = try freshContext(factory)
        let a = Trip(name: "A")
        let b = Trip(name: "B")
        context.insert(a)
        context.insert(b)
        try context.save()
        a.budget = 42
        context.delete(b)
        try context.save()
        let other = ModelContext(container)
        let trips = try other.fetch(FetchDescriptor<Trip>())
        #expect(trips.map(\.name) == ["A"])
        #expect(trips.first?.budget == 42)
    }

    public static func failedSaveIsAtomic(_ factory: StoreFactory) throws {
        let (container, context) = try freshContext(factory)
        context.insert(Person(email: "a@x", name: "Ann"))
        try context.save()
        context.uniquenessPolicy = .fail
        context.insert(Person(email: "b@x", name: "Bob"))
        context.insert(Person(email: "a@x", name: "Another Ann"))
        #expect(throws: SwiftDataError.uniqueConstraintViolation) { try context.save() }
        let other = ModelContext(container)
        let emails = try other.fetch(FetchDescriptor<Person>(sortBy: [SortDescriptor(\.email)])).map(\.email)
        #expect(emails == ["a@x"], "no part of the failed save may be visible")
    }

    public static func sortingAndWindows(_ factory: StoreFactory) throws {
        let (_, context) = try freshContext(factory)
        for (i, name) in ["d", "b", "e", "a", "c"].enumerated() {
            let item = Item(name: name, weight: Double(i))
            item.note = i % 2 == 0 ? nil : "n\(i)"
            context.insert(item)
        }
        try context.save()
        var descriptor = FetchDescriptor<Item>(sortBy: [SortDescriptor(\.name)])
        descriptor.fetchOffset = 1
        descriptor.fetchLimit = 3
        #expect(try context.fetch(descriptor).map(\.name) == ["b", "c", "d"])
        let reversed = FetchDescriptor<Item>(sortBy: [SortDescriptor(\.name, order: .reverse)])
        #expect(try context.fetch(reversed).map(\.name) == ["e", "d", "c", "b", "a"])
        // nil sorts first ascending and last descending.
        let byNote = try context.fetch(FetchDescriptor<Item>(sortBy: [SortDescriptor(\.note), SortDescriptor(\.name)]))
        #expect(byNote.map(\.note) == [nil, nil, nil, "n1", "n3"])
        let byNoteDesc = try context.fetch(
            FetchDescriptor<Item>(sortBy: [SortDescriptor(\.note, order: .reverse), SortDescriptor(\.name)]))
        #expect(byNoteDesc.map(\.note) == ["n3", "n1", nil, nil, nil])
    }

    public static func countAndIdentifiers(_ factory: StoreFactory) throws {
        let (_, context) = try freshContext(factory)
        for i in 0..<20 { context.insert(Item(name: "i\(i)", weight: Double(i))) }
        try context.save()
        let heavy = FetchDescriptor<Item>(predicate: #Predicate { $0.weight >= 10 }, sortBy: [SortDescriptor(\.weight)])
        let models = try context.fetch(heavy)
        #expect(models.count == 10)
        #expect(try context.fetchCount(heavy) == 10)
        #expect(try context.fetchIdentifiers(heavy) == models.map(\.persistentModelID))
    }

    public static func relationshipsRoundTrip(_ factory: StoreFactory) throws {
        let (container, context) = try freshContext(factory)
        let trip = Trip(name: "Kyoto")
        context.insert(trip)
        trip.items = [Item(name: "Passport", category: .documents), Item(name: "Boots", category: .clothes)]
        let tag = Badge(label: "asia")
        trip.tags.append(tag)
        try context.save()
        let other = ModelContext(container)
        let fetched = try #require(try other.fetch(FetchDescriptor<Trip>()).first)
        #expect(Set(fetched.items.map(\.name)) == ["Passport", "Boots"])
        #expect(fetched.items.allSatisfy { $0.trip === fetched })
        #expect(fetched.tags.map(\.label) == ["asia"])
        #expect(fetched.tags.first?.trips.first === fetched)
    }

    public static func valueTypesRoundTrip(_ factory: StoreFactory) throws {
        let (container, context) = try freshContext(factory)
        let sample = Sample()
        sample.bool = true
        sample.int = -7
        sample.int8 = -8
        sample.int16 = -16
        sample.int32 = -32
        sample.int64 = .min
        sample.uint = 7
        sample.uint8 = 255
        sample.uint16 = 16
        sample.uint32 = 32
        sample.uint64 = .max
        sample.float = 1.5
        sample.double = -0.25
        sample.string = "héllo ✈︎"
        sample.date = Date(timeIntervalSince1970: 1_234_567.875)
        sample.data = Data([0, 1, 2, 255])
        sample.url = URL(string: "https://example.com/a?b=c")!
        let uuid = UUID()
        sample.uuid = uuid
        sample.decimal = Decimal(string: "12345678901234567890.123456789")!
        sample.optionalInt = 5
        sample.optionalString = nil
        sample.array = ["x", "y"]
        sample.set = [3, 1, 2]
        sample.dictionary = ["a": 1, "b": 2]
        sample.intKeyed = [1: "one", 2: "two"]
        sample.category = .documents
        sample.reminder = .before(days: 3)
        sample.place = Place(latitude: 10.5, longitude: -3)
        sample.places = [Place(latitude: 1, longitude: 2)]
        context.insert(sample)
        try context.save()
        let other = ModelContext(container)
        let s = try #require(try other.fetch(FetchDescriptor<Sample>()).first)
        #expect(s.bool == true)
        #expect(s.int == -7 && s.int8 == -8 && s.int16 == -16 && s.int32 == -32 && s.int64 == .min)
        #expect(s.uint == 7 && s.uint8 == 255 && s.uint16 == 16 && s.uint32 == 32 && s.uint64 == .max)
        #expect(s.float == 1.5 && s.double == -0.25)
        #expect(s.string == "héllo ✈︎")
        #expect(s.date == Date(timeIntervalSince1970: 1_234_567.875))
        #expect(s.data == Data([0, 1, 2, 255]))
        #expect(s.url == URL(string: "https://example.com/a?b=c")!)
        #expect(s.uuid == uuid)
        #expect(s.decimal == Decimal(string: "12345678901234567890.123456789")!)
        #expect(s.optionalInt == 5 && s.optionalString == nil)
        #expect(s.array == ["x", "y"] && s.set == [1, 2, 3])
        #expect(s.dictionary == ["a": 1, "b": 2] && s.intKeyed == [1: "one", 2: "two"])
        #expect(s.category == .documents && s.reminder == .before(days: 3))
        #expect(s.place == Place(latitude: 10.5, longitude: -3) && s.places == [Place(latitude: 1, longitude: 2)])
    }

    public static func uniqueUpsert(_ factory: StoreFactory) throws {
        let (container, context) = try freshContext(factory)
        context.insert(Badge(label: "beach"))
        try context.save()
        context.insert(Badge(label: "beach"))
        try context.save()
        let other = ModelContext(container)
        #expect(try other.fetchCount(FetchDescriptor<Badge>()) == 1)
    }

    public static func eraseRemovesEverything(_ factory: StoreFactory) throws {
        let (container, context) = try freshContext(factory)
        context.insert(Trip(name: "X"))
        try context.save()
        try container.erase()
        #expect(try ModelContext(container).fetchCount(FetchDescriptor<Trip>()) == 0)
    }
}
