import Foundation
@_spi(Testing) import Stowage
import StowageTestSupport
import Testing

@Suite("Relationships and delete rules")
struct RelationshipTests {
    @Test func settingOneSideUpdatesTheInverseAtOnce() throws {
        let context = ModelContext(try memoryContainer())
        let trip = Trip(name: "Paris")
        context.insert(trip)
        let item = Item(name: "Map")
        item.trip = trip
        #expect(trip.items.map(\.name) == ["Map"])
        #expect(item.modelContext === context, "a related model is inserted with its owner")
        let other = Trip(name: "Rome")
        context.insert(other)
        other.items.append(item)
        #expect(item.trip === other)
        #expect(trip.items.isEmpty)
        item.trip = nil
        #expect(other.items.isEmpty)
    }

    @Test func relatedModelsAreInsertedWithTheirOwner() throws {
        let context = ModelContext(try memoryContainer())
        let trip = Trip(name: "Graph")
        trip.items = [Item(name: "A"), Item(name: "B")]
        context.insert(trip)
        try context.save()
        #expect(try context.fetchCount(FetchDescriptor<Item>()) == 2)
        #expect(trip.items.allSatisfy { $0.trip === trip })
    }

    @Test func manyToManyKeepsBothSides() throws {
        let context = ModelContext(try memoryContainer())
        let a = Trip(name: "A")
        let b = Trip(name: "B")
        let tag = Badge(label: "fun")
        context.insert(a)
        context.insert(b)
        a.tags.append(tag)
        b.tags.append(tag)
        #expect(Set(tag.trips.map(\.name)) == ["A", "B"])
        a.tags = []
        #expect(tag.trips.map(\.name) == ["B"])
    }

    /// Unsaved related models hold each other (a relationship holds an unsaved model
    /// itself, and the inverse holds the owner). A context that goes away unsaved, or rolls
    /// back, discards its inserts: they must let go of each other and be freed.
    @Test(arguments: [false, true])
    func discardedInsertsAreFreed(rollingBack: Bool) throws {
        weak var weakTrip: Trip?
        weak var weakItem: Item?
        weak var weakBadge: Badge?
        let container = try memoryContainer()
        do {
            let context = ModelContext(container)
            let saved = Badge(label: "saved")
            context.insert(saved)
            try context.save()
            let trip = Trip(name: "discarded")
            let item = Item(name: "boots")
            let badge = Badge(label: "new")
            context.insert(trip)
            trip.items.append(item)
            trip.tags = [badge, saved]
            #expect(item.trip === trip && badge.trips.first === trip)
            weakTrip = trip
            weakItem = item
            weakBadge = badge
            if rollingBack {
                context.rollback()
                #expect(trip.name == "discarded", "a discarded insert keeps its attribute values")
                #expect(trip.items.isEmpty && item.trip == nil && badge.trips.isEmpty)
            }
            withExtendedLifetime((context, saved)) {}
        }
        #expect(weakTrip == nil)
        #expect(weakItem == nil)
        #expect(weakBadge == nil)
        #expect(try ModelContext(container).fetchCount(FetchDescriptor<Trip>()) == 0)
    }

    @Test func nullifyIsTheDefaultAndKeepsRelatedModels() throws {
        let context = ModelContext(try memoryContainer())
        let trip = Trip(name: "Seattle")
        context.insert(trip)
        let tag = Badge(label: "rain")
        trip.tags = [tag]
        try context.save()
        context.delete(trip)
        try context.save()
        #expect(try context.fetchCount(FetchDescriptor<Badge>()) == 1)
        #expect(tag.trips.isEmpty)
    }

    @Test func itemDeletedWithNullifyLeavesTheTrip() throws {
        let context = ModelContext(try memoryContainer())
        let trip = Trip(name: "Seattle")
        context.insert(trip)
        trip.items = [Item(name: "Passport"), Item(name: "Boots")]
        try context.save()
        let boots = try #require(trip.items.first { $0.name == "Boots" })
        context.delete(boots)
        try context.save()
        #expect(trip.items.map(\.name) == ["Passport"])
        let freshContext = ModelContext(context.container)
        let fresh = try #require(try freshContext.fetch(FetchDescriptor<Trip>()).first)
        #expect(fresh.items.map(\.name) == ["Passport"])
    }

    @Test func cascadeDeletesRelatedModels() throws {
        let container = try memoryContainer()
        let context = ModelContext(container)
        let trip = Trip(name: "Seattle")
        context.insert(trip)
        trip.items = [Item(name: "Passport"), Item(name: "Boots")]
        try context.save()
        context.delete(trip)
        try context.save()
        #expect(try context.fetchCount(FetchDescriptor<Item>()) == 0)
        #expect(try ModelContext(container).fetchCount(FetchDescriptor<Item>()) == 0)
    }

    @Test func cascadeReachesModelsThatWereNeverLoaded() throws {
        let container = try memoryContainer()
        let writer = ModelContext(container)
        let trip = Trip(name: "Cold")
        writer.insert(trip)
        trip.items = [Item(name: "Gloves")]
        try writer.save()
        let reader = ModelContext(container)
        let fetched = try #require(try reader.fetch(FetchDescriptor<Trip>()).first)
        reader.delete(fetched)
        try reader.save()
        #expect(try reader.fetchCount(FetchDescriptor<Item>()) == 0)
    }

    @Test func denyRefusesTheSaveAndDeletesNothing() throws {
        let container = try memoryContainer()
        let context = ModelContext(container)
        let folder = Folder(name: "Taxes")
        context.insert(folder)
        folder.documents = [Document(title: "2025")]
        try context.save()
        context.delete(folder)
        #expect(throws: SwiftDataError.deleteRuleDenied) { try context.save() }
        #expect(try ModelContext(container).fetchCount(FetchDescriptor<Folder>()) == 1)
        #expect(try ModelContext(container).fetchCount(FetchDescriptor<Document>()) == 1)
        // Emptying the folder lets the delete through.
        context.rollback()
        let documents = folder.documents
        for document in documents { context.delete(document) }
        context.delete(folder)
        try context.save()
        #expect(try ModelContext(container).fetchCount(FetchDescriptor<Folder>()) == 0)
    }

    @Test func deletingAnUnsavedModelDiscardsIt() throws {
        let context = ModelContext(try memoryContainer())
        let trip = Trip(name: "Never")
        context.insert(trip)
        context.delete(trip)
        #expect(!context.hasChanges)
        try context.save()
        #expect(try context.fetchCount(FetchDescriptor<Trip>()) == 0)
    }

    @Test func oneWayRelationshipWithTheDefaultRuleLeavesItemsBehind() throws {
        let context = ModelContext(try memoryContainer())
        let outing = Outing(city: "Seattle")
        context.insert(outing)
        outing.stops = [Stop(name: "Passport"), Stop(name: "Boots")]
        try context.save()
        context.delete(outing)
        try context.save()
        #expect(try context.fetchCount(FetchDescriptor<Stop>()) == 2)
    }

    @Test func oneWayRelationshipWithCascadeDeletesItems() throws {
        let context = ModelContext(try memoryContainer())
        let expedition = Expedition(city: "Seattle")
        context.insert(expedition)
        expedition.stops = [Stop(name: "Passport"), Stop(name: "Boots")]
        try context.save()
        context.delete(expedition)
        try context.save()
        #expect(try context.fetchCount(FetchDescriptor<Stop>()) == 0)
    }

    @Test func aDanglingReferenceIsSkippedWhenRead() throws {
        let context = ModelContext(try memoryContainer())
        let outing = Outing(city: "Oslo")
        context.insert(outing)
        outing.stops = [Stop(name: "Museum"), Stop(name: "Fjord")]
        try context.save()
        let museum = try #require(outing.stops.first { $0.name == "Museum" })
        context.delete(museum)
        try context.save()
        #expect(outing.stops.map(\.name) == ["Fjord"])
    }
}
