import Foundation
@_spi(Testing) import Stowage
import StowageTestSupport
import Testing

/// A model whose `deinit` runs app code: here, a change to another model of its context.
@Model final class Farewell {
    var name: String
    @Transient var onDeinit: (() -> Void)?

    init(name: String) { self.name = name }

    deinit { onDeinit?() }
}

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

    /// Pending inserts are found by their temporary identifiers, through every way of
    /// asking, until a save gives them permanent ones; lookups between inserts and deletes
    /// see each change.
    @Test(arguments: StoreFactory.all)
    func pendingInsertsAreFoundByTheirTemporaryIdentifiers(_ factory: StoreFactory) throws {
        let container = try factory.container()
        let context = ModelContext(container)
        let trips = (0..<5).map { Trip(name: "P\($0)") }
        var temporary: [PersistentIdentifier] = []
        for trip in trips {
            context.insert(trip)
            temporary.append(trip.persistentModelID)
            // Each look-up right after an insert sees it.
            let found: Trip? = context.registeredModel(for: trip.persistentModelID)
            #expect(found === trip)
        }
        #expect(temporary.allSatisfy { $0.isTemporary })
        #expect(try context.existingModel(for: temporary[3]) === trips[3])
        #expect(context.model(for: temporary[1]) === trips[1])
        context.insert(trips[2])
        #expect(context.insertedModelsArray.count == 5, "inserting a pending insert again does nothing")

        context.delete(trips[2])
        let deleted: Trip? = context.registeredModel(for: temporary[2])
        #expect(deleted == nil)
        let fourth: Trip? = context.registeredModel(for: temporary[4])
        #expect(fourth === trips[4], "positions after a removed insert still find their models")

        // A fetch with pending changes returns the inserted objects themselves.
        let fetched = try context.fetch(FetchDescriptor<Trip>(sortBy: [SortDescriptor(\.name)]))
        #expect(fetched.count == 4)
        #expect(zip(fetched, [trips[0], trips[1], trips[3], trips[4]]).allSatisfy { $0 === $1 })

        try context.save()
        #expect(context.registeredModelCount == 4)
        for (index, trip) in trips.enumerated() where index != 2 {
            #expect(!trip.persistentModelID.isTemporary)
            let byPermanent: Trip? = context.registeredModel(for: trip.persistentModelID)
            #expect(byPermanent === trip)
            let byTemporary: Trip? = context.registeredModel(for: temporary[index])
            #expect(byTemporary == nil)
        }
        #expect(throws: SwiftDataError.self) { _ = try context.existingModel(for: temporary[0]) }
    }

    /// Rollback takes pending inserts out: they are no longer found, and the context
    /// no longer names itself as theirs.
    @Test func rollbackForgetsPendingInserts() throws {
        let context = ModelContext(try StoreFactory.memory.container())
        let trip = Trip(name: "Undone")
        context.insert(trip)
        let id = trip.persistentModelID
        context.rollback()
        let found: Trip? = context.registeredModel(for: id)
        #expect(found == nil)
        #expect(trip.modelContext == nil)
        #expect(!context.hasChanges)
        context.insert(trip)
        #expect(context.insertedModelsArray.count == 1, "a rolled-back model can be inserted again")
    }

    /// Many items that share a parent the app does not hold reach one parent object: the
    /// context keeps models reached through relationships alive a while, instead of
    /// loading the parent again for every item.
    @Test(arguments: StoreFactory.all)
    func aSharedParentIsLoadedOnceForManyItems(_ factory: StoreFactory) throws {
        let container = try factory.container()
        let writer = ModelContext(container)
        let trip = Trip(name: "Shared")
        trip.items = (0..<20).map { Item(name: "I\($0)") }
        writer.insert(trip)
        try writer.save()

        let context = ModelContext(container)
        let items = try context.fetch(FetchDescriptor<Item>(sortBy: [SortDescriptor(\.name)]))
        #expect(items.count == 20)
        weak let first = items[0].trip
        #expect(first != nil, "the parent stays alive after the access that loaded it")
        for item in items {
            #expect(item.trip === first)
            #expect(item.trip?.name == "Shared")
        }
    }

    /// The save lets go of the changed models it kept alive only after it is done with its
    /// lists, so a model's `deinit` may change another model of the context: that change
    /// waits for the next save. (The lists are read and changed without the dynamic
    /// exclusivity check; a `deinit` inside one of those changes would touch a list while it
    /// is being changed.)
    @Test(arguments: StoreFactory.all)
    func aDeinitThatChangesAnotherModelDuringTheSaveIsKeptForTheNextSave(_ factory: StoreFactory) throws {
        let container = try factory.make(Schema([Farewell.self]))
        let writer = ModelContext(container)
        writer.insert(Farewell(name: "leaving"))
        writer.insert(Farewell(name: "staying"))
        try writer.save()

        let context = ModelContext(container)
        let stayingID = try #require(
            try context.fetch(FetchDescriptor<Farewell>(predicate: #Predicate { $0.name == "staying" })).first
        ).persistentModelID
        let staying = try #require(context.model(for: stayingID) as? Farewell)
        var ran = false
        do {
            let leaving = try #require(
                try context.fetch(FetchDescriptor<Farewell>(predicate: #Predicate { $0.name == "leaving" })).first)
            leaving.name = "left"
            leaving.onDeinit = {
                ran = true
                staying.name = "changed by a deinit"
            }
        }
        // Only the context keeps `leaving` alive now, as a changed model; the save lets it go.
        try context.save()
        #expect(ran)
        #expect(context.hasChanges)
        #expect(context.changedModelsArray.count == 1)
        try context.save()

        let check = ModelContext(container)
        let names = try check.fetch(FetchDescriptor<Farewell>(sortBy: [SortDescriptor(\.name)])).map(\.name)
        #expect(names == ["changed by a deinit", "left"])
    }
}
