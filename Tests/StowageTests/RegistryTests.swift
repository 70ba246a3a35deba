import Foundation
@_spi(Testing) import Stowage
import StowageTestSupport
import Testing

/// A context's registry does not keep unchanged models alive; unsaved changes are kept
/// until they are saved or rolled back.
@Suite("ModelContext registry")
struct RegistryTests {
    /// Saved models the app lets go leave the context, and fetching them again gives new
    /// objects with the saved values.
    @Test(arguments: StoreFactory.all)
    func savedModelsTheAppDropsAreFreed(_ factory: StoreFactory) throws {
        let container = try factory.container()
        let context = ModelContext(container)
        weak var first: Trip?
        do {
            let trips = (0..<50).map { Trip(name: "T\($0)") }
            for trip in trips { context.insert(trip) }
            first = trips[0]
            try context.save()
            #expect(context.registeredModelCount == 50)
        }
        #expect(first == nil, "the context kept a saved model alive")
        #expect(context.registeredModelCount == 0)
        let again = try context.fetch(FetchDescriptor<Trip>(sortBy: [SortDescriptor(\.name)]))
        #expect(again.count == 50)
        #expect(again.first?.name == "T0")
        #expect(context.registeredModelCount == 50)
    }

    /// While the app holds a model, every fetch and look-up gives that same object.
    @Test(arguments: StoreFactory.all)
    func heldModelsKeepTheirIdentity(_ factory: StoreFactory) throws {
        let container = try factory.container()
        let writer = ModelContext(container)
        writer.insert(Trip(name: "Oslo"))
        try writer.save()
        let context = ModelContext(container)
        let held = try #require(try context.fetch(FetchDescriptor<Trip>()).first)
        let fetched = try #require(try context.fetch(FetchDescriptor<Trip>()).first)
        #expect(fetched === held)
        #expect(try context.existingModel(for: held.persistentModelID) === held)
        let registered: Trip? = context.registeredModel(for: held.persistentModelID)
        #expect(registered === held)
    }

    /// A changed model is saved even when the app let it go before the save, and a
    /// deleted one is deleted.
    @Test(arguments: StoreFactory.all)
    func changesOfDroppedModelsAreSaved(_ factory: StoreFactory) throws {
        let container = try factory.container()
        let writer = ModelContext(container)
        writer.insert(Trip(name: "Keep"))
        writer.insert(Trip(name: "Gone"))
        try writer.save()

        let context = ModelContext(container)
        weak var changed: Trip?
        do {
            let trips = try context.fetch(FetchDescriptor<Trip>(sortBy: [SortDescriptor(\.name)]))
            #expect(trips.map(\.name) == ["Gone", "Keep"])
            trips[1].budget = 42
            context.delete(trips[0])
            changed = trips[1]
        }
        #expect(changed != nil, "a changed model must live until it is saved")
        #expect(context.hasChanges)
        #expect(context.changedModelsArray.count == 1)
        #expect(context.deletedModelsArray.count == 1)
        try context.save()
        #expect(changed == nil, "a saved model the app does not hold is freed")

        let check = try ModelContext(container).fetch(FetchDescriptor<Trip>())
        #expect(check.map(\.name) == ["Keep"])
        #expect(check.first?.budget == 42)
    }

    /// Rollback refreshes a changed model the app let go of, and the model leaves after.
    @Test(arguments: StoreFactory.all)
    func rollbackOfADroppedChange(_ factory: StoreFactory) throws {
        let container = try factory.container()
        let context = ModelContext(container)
        context.insert(Trip(name: "Rome"))
        try context.save()
        do {
            let trip = try #require(try context.fetch(FetchDescriptor<Trip>()).first)
            trip.budget = 7
        }
        #expect(context.registeredModelCount == 1)
        context.rollback()
        #expect(!context.hasChanges)
        #expect(context.registeredModelCount == 0)
        #expect(try context.fetch(FetchDescriptor<Trip>()).first?.budget == 0)
    }

    /// A saved relationship resolves through the registry: its related models are loaded
    /// again after the app let them go, with their saved values and links.
    @Test(arguments: StoreFactory.all)
    func relationshipsResolveAfterRelatedModelsAreFreed(_ factory: StoreFactory) throws {
        let container = try factory.container()
        let context = ModelContext(container)
        let trip = Trip(name: "Kyoto")
        trip.items = [Item(name: "Map"), Item(name: "Umbrella")]
        context.insert(trip)
        try context.save()
        #expect(context.registeredModelCount == 1, "only the trip is held")
        #expect(trip.items.map(\.name).sorted() == ["Map", "Umbrella"])
        #expect(trip.items.allSatisfy { $0.trip === trip })
        let item = try #require(trip.items.first { $0.name == "Map" })
        item.weight = 2
        try context.save()
        let reader = ModelContext(container)
        let check = try reader.fetch(FetchDescriptor<Item>(predicate: #Predicate { $0.weight > 1 }))
        #expect(check.map(\.name) == ["Map"])
        #expect(check.first?.trip?.name == "Kyoto")
    }

    /// A model the app drops while an earlier context still has it registered is freed
    /// there too, and a context that goes first leaves its models working.
    @Test func modelsOutliveTheirContextAndContextsOutliveTheirModels() throws {
        let container = try StoreFactory.log.container()
        var context: ModelContext? = ModelContext(container)
        let trip = Trip(name: "Quito")
        context?.insert(trip)
        try context?.save()
        context = nil
        #expect(trip.name == "Quito")
        #expect(trip.modelContext == nil)

        let other = ModelContext(container)
        do {
            let fetched = try other.fetch(FetchDescriptor<Trip>())
            #expect(fetched.count == 1)
        }
        #expect(other.registeredModelCount == 0)
    }
}
