import Foundation
@_spi(Testing) import Stowage
import StowageTestSupport
import Testing

@Suite("Predicates")
struct PredicateTests {
    func seeded() throws -> ModelContext {
        let context = ModelContext(try memoryContainer())
        let lisbon = Trip(name: "Lisbon", destination: "Portugal", startDate: Date(timeIntervalSince1970: 100))
        lisbon.budget = 1500
        lisbon.place = Place(latitude: 38.7, longitude: -9.1)
        let oslo = Trip(name: "Oslo", destination: "Norway", startDate: Date(timeIntervalSince1970: 200))
        oslo.budget = 800
        oslo.place = Place(latitude: 59.9, longitude: 10.7)
        let home = Trip(name: "Home", destination: "", startDate: Date(timeIntervalSince1970: 50))
        for trip in [lisbon, oslo, home] { context.insert(trip) }
        lisbon.items = [
            Item(name: "Passport", category: .documents, weight: 0.1),
            Item(name: "Boots", category: .clothes, weight: 1.4),
        ]
        oslo.items = [Item(name: "Gloves", category: .clothes, weight: 0.2)]
        context.insert(Item(name: "Stray Café", category: .gear, weight: 3))
        try context.save()
        return context
    }

    func names<T: PersistentModel>(_ context: ModelContext, _ predicate: Predicate<T>, _ name: KeyPath<T, String>)
        throws
        -> Set<String>
    {
        Set(try context.fetch(FetchDescriptor(predicate: predicate)).map { $0[keyPath: name] })
    }

    @Test func comparisonsAndLogic() throws {
        let c = try seeded()
        #expect(try names(c, #Predicate<Item> { $0.weight > 1 }, \.name) == ["Boots", "Stray Café"])
        #expect(try names(c, #Predicate<Item> { $0.weight > 1 && $0.name != "Boots" }, \.name) == ["Stray Café"])
        #expect(
            try names(c, #Predicate<Item> { $0.weight < 0.15 || $0.weight >= 3 }, \.name) == ["Passport", "Stray Café"])
        #expect(try names(c, #Predicate<Item> { !($0.weight > 0.15) }, \.name) == ["Passport"])
    }

    /// Fetches read the descriptor's predicate as it is when they run: a predicate set,
    /// replaced or removed after the descriptor was made is the one used, through every
    /// fetching call.
    @Test func aPredicateChangedAfterTheDescriptorWasMadeIsTheOneUsed() throws {
        let c = try seeded()
        var descriptor = FetchDescriptor<Item>(predicate: #Predicate { $0.weight > 1 })
        #expect(Set(try c.fetch(descriptor).map(\.name)) == ["Boots", "Stray Café"])
        descriptor.predicate = #Predicate { $0.weight < 0.15 }
        #expect(try c.fetch(descriptor).map(\.name) == ["Passport"])
        #expect(try c.fetchCount(descriptor) == 1)
        #expect(try c.fetchIdentifiers(descriptor).count == 1)
        var enumerated: [String] = []
        try c.enumerate(descriptor) { enumerated.append($0.name) }
        #expect(enumerated == ["Passport"])
        descriptor.predicate = nil
        #expect(try c.fetch(descriptor).count == 4)
        #expect(try c.fetchCount(descriptor) == 4)
        var unfiltered = FetchDescriptor<Item>()
        #expect(try c.fetchCount(unfiltered) == 4)
        unfiltered.predicate = #Predicate { $0.name == "Gloves" }
        #expect(try c.fetch(unfiltered).map(\.name) == ["Gloves"])
    }

    /// Predicates of one expression type (the compiler's cache is by type) keep their own
    /// key paths and constants, repeated in any order, on the fast and the general path.
    @Test func predicatesOfOneShapeKeepTheirOwnKeyPathsAndConstants() throws {
        let c = try seeded()
        let destinations = ["Lisbon": "Portugal", "Oslo": "Norway", "Home": ""]
        for _ in 0..<3 {
            for (value, byName, byDestination) in [
                ("Lisbon", Set(["Lisbon"]), Set<String>()), ("Norway", [], ["Oslo"]), ("", [], ["Home"]),
            ] {
                #expect(try names(c, #Predicate<Trip> { $0.name == value }, \.name) == byName)
                #expect(try names(c, #Predicate<Trip> { $0.destination == value }, \.name) == byDestination)
                // A shape the fast path does not take.
                #expect(
                    try names(c, #Predicate<Trip> { $0.destination.localizedStandardContains(value) }, \.name)
                        == Set(destinations.filter { $0.value.localizedStandardContains(value) }.keys))
            }
        }
    }

    @Test func anEnumCapturedAsAConstant() throws {
        let c = try seeded()
        let documents = Category.documents
        #expect(try names(c, #Predicate<Item> { $0.category == documents }, \.name) == ["Passport"])
    }

    @Test func aCodableStructCapturedWhole() throws {
        let c = try seeded()
        let target = Place(latitude: 59.9, longitude: 10.7)
        #expect(try names(c, #Predicate<Trip> { $0.place == target }, \.name) == ["Oslo"])
    }

    @Test func fieldsOfACompositeAttribute() throws {
        let c = try seeded()
        #expect(try names(c, #Predicate<Trip> { ($0.place?.latitude ?? 0) > 50 }, \.name) == ["Oslo"])
        #expect(try names(c, #Predicate<Trip> { $0.place == nil }, \.name) == ["Home"])
    }

    @Test func arithmeticAndTheTernary() throws {
        let c = try seeded()
        #expect(try names(c, #Predicate<Item> { $0.weight * 10 > 13 }, \.name) == ["Boots", "Stray Café"])
        #expect(
            try names(c, #Predicate<Trip> { ($0.budget > 1000 ? $0.budget / 2 : $0.budget) > 760 }, \.name) == ["Oslo"])
        #expect(try names(c, #Predicate<Item> { $0.quantity % 2 == 1 }, \.name).count == 4)
    }

    @Test func stringSearches() throws {
        let c = try seeded()
        #expect(try names(c, #Predicate<Trip> { $0.destination.contains("way") }, \.name) == ["Oslo"])
        #expect(try names(c, #Predicate<Trip> { $0.name.starts(with: "Li") }, \.name) == ["Lisbon"])
        #expect(try names(c, #Predicate<Trip> { $0.destination.isEmpty }, \.name) == ["Home"])
        #expect(try names(c, #Predicate<Item> { $0.name.localizedStandardContains("CAFE") }, \.name) == ["Stray Café"])
        let same = ComparisonResult.orderedSame
        #expect(try names(c, #Predicate<Trip> { $0.name.caseInsensitiveCompare("OSLO") == same }, \.name) == ["Oslo"])
    }

    /// A NUL in either string is a character like any other, as Foundation's evaluation of
    /// the same predicate has it: "Oslo" does not contain "Oslo\u{0}" (Foundation's
    /// `String.contains` on Linux stops at the NUL and says it does).
    @Test func aSubstringWithANULIsSearchedWhole() throws {
        let c = try seeded()
        let tail = "Oslo\u{0}"
        let nul = "\u{0}"
        #expect(try names(c, #Predicate<Trip> { $0.name.contains(tail) }, \.name).isEmpty)
        #expect(try names(c, #Predicate<Trip> { $0.name.contains(nul) }, \.name).isEmpty)
        let oslo = try #require(try c.fetch(FetchDescriptor<Trip>(predicate: #Predicate { $0.name == "Oslo" })).first)
        oslo.name = "Os\u{0}lo"
        try c.save()
        #expect(try names(c, #Predicate<Trip> { $0.name.contains(nul) }, \.name) == ["Os\u{0}lo"])
        for name in ["Lisbon", "Os\u{0}lo", "Home"] {
            let reference = try #Predicate<String> { $0.contains(tail) }.evaluate(name)
            #expect(!reference, "Foundation's evaluation, the reference: \(name)")
        }
    }

    @Test func keyPathsThroughToOneRelationships() throws {
        let c = try seeded()
        #expect(try names(c, #Predicate<Item> { $0.trip?.name == "Lisbon" }, \.name) == ["Passport", "Boots"])
        #expect(try names(c, #Predicate<Item> { $0.trip == nil }, \.name) == ["Stray Café"])
        #expect(try names(c, #Predicate<Item> { $0.trip?.budget ?? 0 > 1000 }, \.name) == ["Passport", "Boots"])
    }

    @Test func collectionsOfRelatedModels() throws {
        let c = try seeded()
        #expect(try names(c, #Predicate<Trip> { $0.items.contains { $0.weight > 1 } }, \.name) == ["Lisbon"])
        let clothes = Category.clothes
        #expect(
            try names(c, #Predicate<Trip> { $0.items.allSatisfy { $0.category == clothes } }, \.name) == [
                "Oslo", "Home",
            ])
        #expect(try names(c, #Predicate<Trip> { $0.items.count == 2 }, \.name) == ["Lisbon"])
        #expect(try names(c, #Predicate<Trip> { $0.items.isEmpty }, \.name) == ["Home"])
        #expect(
            try names(c, #Predicate<Trip> { $0.items.filter { $0.weight < 1 }.count == 1 }, \.name) == [
                "Lisbon", "Oslo",
            ])
    }

    @Test func identifiersInAPredicate() throws {
        let c = try seeded()
        let oslo = try #require(try c.fetch(FetchDescriptor<Trip>(predicate: #Predicate { $0.name == "Oslo" })).first)
        let id = oslo.persistentModelID
        #expect(try names(c, #Predicate<Item> { $0.trip?.persistentModelID == id }, \.name) == ["Gloves"])
        let ids = [id]
        #expect(try names(c, #Predicate<Trip> { ids.contains($0.persistentModelID) }, \.name) == ["Oslo"])
    }

    @Test func aComputedPropertyIsAClearErrorNotACrash() throws {
        let c = try seeded()
        do {
            _ = try c.fetch(FetchDescriptor<Trip>(predicate: #Predicate { $0.isExpensive }))
            Issue.record("fetch should have thrown")
        } catch let error as SwiftDataError {
            #expect(error.code == .unsupportedPredicate)
            #expect(error.message.contains("isExpensive") || error.message.contains("Trip"))
        }
    }

    @Test func rangesAndOptionals() throws {
        let c = try seeded()
        #expect(try names(c, #Predicate<Item> { (0.15...1.5).contains($0.weight) }, \.name) == ["Boots", "Gloves"])
        let start = Date(timeIntervalSince1970: 60)
        let end = Date(timeIntervalSince1970: 150)
        #expect(try names(c, #Predicate<Trip> { $0.startDate > start && $0.startDate < end }, \.name) == ["Lisbon"])
        #expect(try names(c, #Predicate<Item> { $0.note == nil }, \.name).count == 4)
    }
}
