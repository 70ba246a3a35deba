import Foundation
@_spi(Testing) import Stowage
import StowageTestSupport
import Testing

func memoryContainer() throws -> ModelContainer {
    try StoreFactory.memory.container()
}

@Suite("ModelContext semantics")
struct ContextTests {
    @Test func hasChangesTracksInsertsChangesAndDeletes() throws {
        let context = ModelContext(try memoryContainer())
        #expect(!context.hasChanges)
        let trip = Trip(name: "Lisbon")
        context.insert(trip)
        #expect(context.hasChanges)
        #expect(context.insertedModelsArray.count == 1)
        try context.save()
        #expect(!context.hasChanges)
        trip.budget = 10
        #expect(context.hasChanges)
        #expect(context.changedModelsArray.map(\.persistentModelID) == [trip.persistentModelID])
        #expect(trip.hasChanges)
        try context.save()
        context.delete(trip)
        #expect(context.deletedModelsArray.count == 1)
        #expect(trip.isDeleted)
        try context.save()
        #expect(!context.hasChanges)
        #expect(trip.modelContext == nil)
    }

    /// The pending inserts stay in insertion order through repeated inserts, a delete of an
    /// unsaved model and its insert again, and each model is saved once.
    @Test func pendingInsertsKeepTheirOrderThroughRepeatsAndDeletes() throws {
        let container = try memoryContainer()
        let context = ModelContext(container)
        let (a, b, c) = (Trip(name: "A"), Trip(name: "B"), Trip(name: "C"))
        context.insert(a)
        context.insert(b)
        context.insert(a)
        context.insert(c)
        #expect(context.insertedModelsArray.map { ($0 as? Trip)?.name } == ["A", "B", "C"])
        context.delete(b)
        #expect(context.insertedModelsArray.map { ($0 as? Trip)?.name } == ["A", "C"])
        #expect(b.modelContext == nil)
        context.insert(b)
        #expect(context.insertedModelsArray.map { ($0 as? Trip)?.name } == ["A", "C", "B"])
        let temporary = c.persistentModelID
        let found: Trip? = context.registeredModel(for: temporary)
        #expect(found === c)
        try context.save()
        let names = try ModelContext(container).fetch(FetchDescriptor<Trip>(sortBy: [SortDescriptor(\.name)]))
            .map(\.name)
        #expect(names == ["A", "B", "C"])
        #expect(context.insertedModelsArray.isEmpty)
        #expect(context.registeredModelCount == 3)
        let gone: Trip? = context.registeredModel(for: temporary)
        #expect(gone == nil)
        let saved: Trip? = context.registeredModel(for: c.persistentModelID)
        #expect(saved === c)
        // A change to a saved model is a change, not another insert.
        c.budget = 5
        #expect(context.changedModelsArray.count == 1)
        #expect(context.insertedModelsArray.isEmpty)
    }

    /// Changed models stay listed in the order of their first change; deleting one takes it
    /// out, rollback clears the list, and a save writes exactly the models listed.
    @Test func changedModelsKeepTheirOrderThroughDeletesAndRollback() throws {
        let container = try memoryContainer()
        let context = ModelContext(container)
        let trips = ["A", "B", "C"].map { Trip(name: $0) }
        for trip in trips { context.insert(trip) }
        try context.save()
        trips[2].budget = 3
        trips[0].budget = 1
        trips[2].budget = 33
        trips[1].budget = 2
        #expect(context.changedModelsArray.map { ($0 as? Trip)?.name } == ["C", "A", "B"])
        context.delete(trips[0])
        #expect(context.changedModelsArray.map { ($0 as? Trip)?.name } == ["C", "B"])
        context.rollback()
        #expect(context.changedModelsArray.isEmpty)
        #expect(trips.map(\.budget) == [0, 0, 0])
        trips[1].budget = 20
        try context.save()
        let stored = try ModelContext(container).fetch(FetchDescriptor<Trip>(sortBy: [SortDescriptor(\.name)]))
        #expect(stored.map(\.budget) == [0, 20, 0])
    }

    /// Inserts into two stores in one save, interleaved, each get the permanent identifier
    /// of the store that holds them.
    @Test func insertsSpreadOverTwoStoresEachGetTheirStoresIdentifier() throws {
        let schema = Schema([Trip.self, Person.self])
        let trips = MemoryStoreConfiguration(name: "trips", schema: Schema([Trip.self]))
        let people = MemoryStoreConfiguration(name: "people", schema: Schema([Person.self]))
        let container = try ModelContainer(for: schema, configurations: [trips, people])
        let context = ModelContext(container)
        let models: [any PersistentModel] = [
            Trip(name: "T1"), Person(email: "p1@x", name: "P1"), Trip(name: "T2"), Person(email: "p2@x", name: "P2"),
            Person(email: "p3@x", name: "P3"),
        ]
        for model in models { context.insert(model) }
        try context.save()
        let tripStores = Set(models.filter { $0 is Trip }.map(\.persistentModelID.storeIdentifier))
        let personStores = Set(models.filter { $0 is Person }.map(\.persistentModelID.storeIdentifier))
        #expect(tripStores.count == 1 && personStores.count == 1 && tripStores != personStores)
        #expect(!tripStores.contains(nil) && !personStores.contains(nil))
        for model in models {
            let id = model.persistentModelID
            #expect(!id.isTemporary)
            #expect(try context.existingModel(for: id) === model)
        }
        // A new context loads them by identifier, the entities taking turns: each model is
        // made as its own entity's, not the last one's.
        let loader = ModelContext(container)
        for model in models {
            let loaded = try loader.existingModel(for: model.persistentModelID)
            if let trip = model as? Trip {
                #expect((loaded as? Trip)?.name == trip.name)
            } else if let person = model as? Person {
                #expect((loaded as? Person)?.email == person.email)
            }
        }
        let reader = ModelContext(container)
        #expect(try reader.fetch(FetchDescriptor<Trip>(sortBy: [SortDescriptor(\.name)])).map(\.name) == ["T1", "T2"])
        #expect(
            try reader.fetch(FetchDescriptor<Person>(sortBy: [SortDescriptor(\.name)])).map(\.name) == [
                "P1", "P2", "P3",
            ])
    }

    @Test func transientPropertiesAreNotStored() throws {
        let container = try memoryContainer()
        let context = ModelContext(container)
        let trip = Trip(name: "T")
        trip.isSelected = true
        context.insert(trip)
        try context.save()
        let other = try #require(try ModelContext(container).fetch(FetchDescriptor<Trip>()).first)
        #expect(other.isSelected == false)
        #expect(!Trip.schemaMetadata.contains { $0.name == "isSelected" })
    }

    @Test func rollbackRestoresSavedValues() throws {
        let context = ModelContext(try memoryContainer())
        let trip = Trip(name: "Before")
        context.insert(trip)
        try context.save()
        trip.name = "After"
        let unsaved = Trip(name: "Unsaved")
        context.insert(unsaved)
        context.rollback()
        #expect(trip.name == "Before")
        #expect(!context.hasChanges)
        #expect(try context.fetch(FetchDescriptor<Trip>()).map(\.name) == ["Before"])
    }

    @Test func identityMapGivesOneObjectPerIdentifier() throws {
        let context = ModelContext(try memoryContainer())
        let trip = Trip(name: "Same")
        context.insert(trip)
        try context.save()
        let a = try context.fetch(FetchDescriptor<Trip>()).first
        let b = try context.fetch(FetchDescriptor<Trip>(predicate: #Predicate { $0.name == "Same" })).first
        #expect(a === trip && b === trip)
        #expect(context.registeredModel(for: trip.persistentModelID) as Trip? === trip)
        #expect(context.model(for: trip.persistentModelID) as? Trip === trip)
    }

    @Test func twoContextsSeeEachOthersChangesOnlyAfterSave() throws {
        let container = try memoryContainer()
        let a = ModelContext(container)
        let b = ModelContext(container)
        let trip = Trip(name: "Shared")
        a.insert(trip)
        #expect(try b.fetchCount(FetchDescriptor<Trip>()) == 0)
        try a.save()
        let seen = try #require(try b.fetch(FetchDescriptor<Trip>()).first)
        #expect(seen !== trip)
        trip.budget = 99
        #expect(try b.fetch(FetchDescriptor<Trip>()).first?.budget == 0)
        try a.save()
        #expect(try b.fetch(FetchDescriptor<Trip>()).first?.budget == 99)
        #expect(seen.budget == 99)
    }

    @Test func pendingChangesAreVisibleToFetchByDefault() throws {
        let context = ModelContext(try memoryContainer())
        let saved = Trip(name: "Saved")
        context.insert(saved)
        try context.save()
        context.insert(Trip(name: "Pending"))
        saved.name = "Renamed"
        var descriptor = FetchDescriptor<Trip>(sortBy: [SortDescriptor(\.name)])
        #expect(try context.fetch(descriptor).map(\.name) == ["Pending", "Renamed"])
        #expect(try context.fetchCount(FetchDescriptor<Trip>(predicate: #Predicate { $0.name == "Saved" })) == 0)
        descriptor.includePendingChanges = false
        #expect(try context.fetch(descriptor).map(\.name) == ["Renamed"])
        context.delete(saved)
        #expect(try context.fetch(FetchDescriptor<Trip>()).map(\.name) == ["Pending"])
    }

    @Test func transactionSavesOrRollsBack() throws {
        let context = ModelContext(try memoryContainer())
        try context.transaction { context.insert(Trip(name: "In")) }
        #expect(!context.hasChanges)
        struct Stop: Error {}
        #expect(throws: Stop.self) {
            try context.transaction {
                context.insert(Trip(name: "Out"))
                throw Stop()
            }
        }
        #expect(try context.fetch(FetchDescriptor<Trip>()).map(\.name) == ["In"])
    }

    @Test func notificationsAreSentAroundSave() throws {
        let context = ModelContext(try memoryContainer())
        nonisolated(unsafe) var events: [String] = []
        nonisolated(unsafe) var inserted: Set<PersistentIdentifier> = []
        let center = NotificationCenter.default
        let will = center.addObserver(forName: ModelContext.willSave, object: context, queue: nil) { _ in
            events.append("will")
        }
        let did = center.addObserver(forName: ModelContext.didSave, object: context, queue: nil) { note in
            events.append("did")
            inserted =
                note.userInfo?[ModelContext.NotificationKey.insertedIdentifiers.rawValue]
                as? Set<PersistentIdentifier> ?? []
        }
        defer {
            center.removeObserver(will)
            center.removeObserver(did)
        }
        let trip = Trip(name: "N")
        context.insert(trip)
        try context.save()
        #expect(events == ["will", "did"])
        #expect(inserted == [trip.persistentModelID])
    }

    @Test func modelsNestedInAVersionedSchemaWork() throws {
        let container = try ModelContainer(
            for: Schema(versionedSchema: SchemaV1.self), configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        #expect(container.schema.version == Schema.Version(1, 0, 0))
        let context = ModelContext(container)
        context.insert(SchemaV1.Note(text: "hello"))
        try context.save()
        #expect(try context.fetch(FetchDescriptor<SchemaV1.Note>()).map(\.text) == ["hello"])
        #expect(container.schema.entitiesByName["Note"] != nil)
    }

    @Test func observationSeesPropertyChanges() throws {
        let trip = Trip(name: "Observed")
        nonisolated(unsafe) var changed = false
        withObservationTracking {
            _ = trip.name
        } onChange: {
            changed = true
        }
        trip.name = "Changed"
        #expect(changed)
    }

    @Test @MainActor func theMainContextIsSharedAndAutosaves() throws {
        let container = try memoryContainer()
        let main = container.mainContext
        #expect(main === container.mainContext)
        #expect(main.autosaveEnabled)
        #expect(!ModelContext(container).autosaveEnabled)
    }

    /// A container and its main context refer to each other; letting the container go
    /// must still close its store, or the next open of the same file in this process
    /// finds it locked.
    @Test @MainActor func aContainerWhoseMainContextWasUsedClosesItsStoreWhenLetGo() throws {
        let url = LogTestDirectory.fresh().url.appendingPathComponent("main.store")
        weak var gone: ModelContainer?
        do {
            let container = try ModelContainer(for: Trip.self, configurations: ModelConfiguration(url: url))
            gone = container
            // An autosave scheduled on the main queue would hold the context until the
            // queue runs it, after this test; the save below is the one that matters.
            container.mainContext.autosaveEnabled = false
            container.mainContext.insert(Trip(name: "Kept by the main context"))
            try container.mainContext.save()
            #expect(container.mainContext.container === container)
        }
        #expect(gone == nil, "the container outlived every reference to it")
        let reopened = try ModelContainer(for: Trip.self, configurations: ModelConfiguration(url: url))
        #expect(try ModelContext(reopened).fetchCount(FetchDescriptor<Trip>()) == 1)
    }

    /// Holding only the main context keeps its container's stores open and working.
    @Test @MainActor func aMainContextHeldAloneKeepsItsStoresOpen() throws {
        let url = LogTestDirectory.fresh().url.appendingPathComponent("alone.store")
        let main = try ModelContainer(for: Trip.self, configurations: ModelConfiguration(url: url)).mainContext
        main.autosaveEnabled = false
        main.insert(Trip(name: "Alone"))
        try main.save()
        #expect(try main.fetch(FetchDescriptor<Trip>()).map(\.name) == ["Alone"])
        // Its container, asked for again, is one whose main context is this one.
        #expect(main.container.mainContext === main)
        #expect(try ModelContext(main.container).fetchCount(FetchDescriptor<Trip>()) == 1)
        #expect(throws: DataStoreError.storeLocked) {
            _ = try ModelContainer(for: Trip.self, configurations: ModelConfiguration(url: url))
        }
    }

    @Test func aContainerFromASchemaAndAnyConfigurations() throws {
        let schema = Schema([Trip.self, Item.self])
        let configurations: [any DataStoreConfiguration] = [ModelConfiguration(isStoredInMemoryOnly: true)]
        let container = try ModelContainer(for: schema, configurations: configurations)
        #expect(container.schema.entitiesByName.keys.contains("Trip"))
        #expect(
            container.schema.entitiesByName.keys.contains("Badge"),
            "types reachable through relationships join the schema")
        let context = ModelContext(container)
        context.insert(Trip(name: "x"))
        try context.save()
        try container.erase()
        #expect(try context.fetchCount(FetchDescriptor<Trip>()) == 0)
    }

    /// A model's initializer may set its properties in any order; each value must land in
    /// its own property (the backing data guesses declaration order, then looks names up).
    @Test func initializersThatSetPropertiesOutOfOrderKeepEachValue() throws {
        let container = try ModelContainer(
            for: OutOfOrder.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let context = ModelContext(container)
        let model = OutOfOrder(first: "one", second: 2, third: 3.5, fourth: true)
        #expect(model.first == "one" && model.second == 2 && model.third == 3.5 && model.fourth)
        context.insert(model)
        try context.save()
        let fetched = try #require(try ModelContext(container).fetch(FetchDescriptor<OutOfOrder>()).first)
        #expect(fetched.first == "one")
        #expect(fetched.second == 2)
        #expect(fetched.third == 3.5)
        #expect(fetched.fourth)
        #expect(fetched.fifth == "default")
    }
}

@Model
final class OutOfOrder {
    var first: String
    var second: Int
    var third: Double
    var fifth = "default"
    var fourth: Bool

    init(first: String, second: Int, third: Double, fourth: Bool) {
        self.fourth = fourth
        self.third = third
        self.first = first
        self.second = second
    }
}
