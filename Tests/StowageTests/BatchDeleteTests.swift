import Foundation
@_spi(Testing) import Stowage
import StowageTestSupport
import Synchronization
import Testing

/// `delete(model:where:)` on an entity no relationship touches deletes at the next save
/// without loading the records; with relationships it loads them and applies delete rules.
@Suite("Deletes by predicate")
struct BatchDeleteTests {
    static let stores = StoreFactory.all.map(\.name)

    private func container(_ store: String) throws -> ModelContainer {
        let factory = try #require(StoreFactory.all.first { $0.name == store })
        return try factory.make(Schema([Person.self, Trip.self, Item.self, Badge.self]))
    }

    private func seed(_ context: ModelContext, count: Int = 10) throws {
        for n in 0..<count { context.insert(Person(email: "p\(n)@example.com", name: "P\(n)", age: n)) }
        try context.save()
    }

    @Test(arguments: stores)
    func aBatchDeleteWaitsForTheSaveAndFetchesLeaveItsRecordsOut(store: String) throws {
        let container = try container(store)
        let context = ModelContext(container)
        try seed(context)
        let held = try #require(try context.fetch(FetchDescriptor<Person>(predicate: #Predicate { $0.age == 2 })).first)

        try context.delete(model: Person.self, where: #Predicate { $0.age < 5 })
        #expect(context.hasChanges)
        #expect(try context.fetchCount(FetchDescriptor<Person>()) == 5)
        let left = try context.fetch(FetchDescriptor<Person>(sortBy: [SortDescriptor(\.age)])).map(\.age)
        #expect(left == [5, 6, 7, 8, 9])
        // Another context sees nothing deleted until the save.
        #expect(try ModelContext(container).fetchCount(FetchDescriptor<Person>()) == 10)

        let heard = Mutex<Set<PersistentIdentifier>>([])
        let observer = NotificationCenter.default.addObserver(
            forName: ModelContext.didSave, object: context, queue: nil
        ) { note in
            if let ids = note.userInfo?[ModelContext.NotificationKey.deletedIdentifiers.rawValue]
                as? Set<PersistentIdentifier>
            {
                heard.withLock { $0 = ids }
            }
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        try context.save()
        #expect(!context.hasChanges)
        let deletedInNotification = heard.withLock { $0 }
        #expect(deletedInNotification.count == 5)
        #expect(deletedInNotification.contains(held.persistentModelID))
        #expect(held.isDeleted && held.modelContext == nil)
        let fresh = ModelContext(container)
        #expect(
            try fresh.fetch(FetchDescriptor<Person>(sortBy: [SortDescriptor(\.age)])).map(\.age) == [5, 6, 7, 8, 9])
    }

    @Test(arguments: stores)
    func aRecordInsertedAfterTheCallSurvivesTheSave(store: String) throws {
        let container = try container(store)
        let context = ModelContext(container)
        try seed(context, count: 4)
        try context.delete(model: Person.self)
        #expect(try context.fetchCount(FetchDescriptor<Person>()) == 0)
        context.insert(Person(email: "late@example.com", name: "Late", age: 1))
        #expect(try context.fetchCount(FetchDescriptor<Person>()) == 1)
        try context.save()
        #expect(try ModelContext(container).fetch(FetchDescriptor<Person>()).map(\.email) == ["late@example.com"])
    }

    /// A model of a record the batch takes, changed after the call, is deleted with it, not
    /// saved back into being.
    @Test(arguments: stores)
    func aRecordChangedAfterTheCallIsStillDeleted(store: String) throws {
        let container = try container(store)
        let context = ModelContext(container)
        try seed(context, count: 4)
        let held = try #require(try context.fetch(FetchDescriptor<Person>(predicate: #Predicate { $0.age == 1 })).first)
        try context.delete(model: Person.self, where: #Predicate { $0.age < 2 })
        held.name = "Changed"
        try context.save()
        let left = try ModelContext(container).fetch(FetchDescriptor<Person>(sortBy: [SortDescriptor(\.age)]))
        #expect(left.map(\.age) == [2, 3])
        #expect(held.isDeleted)
    }

    @Test(arguments: stores)
    func rollbackForgetsABatchDelete(store: String) throws {
        let container = try container(store)
        let context = ModelContext(container)
        try seed(context, count: 3)
        try context.delete(model: Person.self, where: #Predicate { $0.name == "P1" })
        #expect(try context.fetchCount(FetchDescriptor<Person>()) == 2)
        context.rollback()
        #expect(!context.hasChanges)
        try context.save()
        #expect(try ModelContext(container).fetchCount(FetchDescriptor<Person>()) == 3)
    }

    /// The custom store is asked for a batch (its `delete(_:)` is called), where an entity
    /// with relationships is deleted model by model with its delete rules.
    @Test func aCustomBatchingStoreIsAskedAndRelationshipsTakeTheModelPath() throws {
        let container = try container(StoreFactory.fileDictionary.name)
        let store = try #require(container.storesForTesting.first as? FileDictionaryStore)
        let context = ModelContext(container)
        try seed(context, count: 6)
        let trip = Trip(name: "Lisbon")
        trip.items = [Item(name: "hat"), Item(name: "map")]
        context.insert(trip)
        try context.save()

        try context.delete(model: Person.self, where: #Predicate { $0.age >= 3 })
        try context.save()
        #expect(store.batchDeletes == 1)
        #expect(try ModelContext(container).fetchCount(FetchDescriptor<Person>()) == 3)

        try context.delete(model: Trip.self)
        try context.save()
        #expect(store.batchDeletes == 1)
        let fresh = ModelContext(container)
        #expect(try fresh.fetchCount(FetchDescriptor<Trip>()) == 0)
        #expect(try fresh.fetchCount(FetchDescriptor<Item>()) == 0)  // cascaded
    }

    /// Stowage's own stores resolve the batch inside the save's one commit: a unique
    /// violation elsewhere in the same save leaves the batch's records in place.
    @Test(arguments: [StoreFactory.memory.name, StoreFactory.log.name, StoreFactory.json.name])
    func aFailedSaveDeletesNothing(store: String) throws {
        let container = try container(store)
        let context = ModelContext(container)
        try seed(context, count: 3)
        context.uniquenessPolicy = .fail
        try context.delete(model: Person.self, where: #Predicate { $0.age == 0 })
        context.insert(Person(email: "p1@example.com", name: "Clash", age: 7))
        #expect(throws: SwiftDataError.uniqueConstraintViolation) { try context.save() }
        #expect(try ModelContext(container).fetchCount(FetchDescriptor<Person>()) == 3)
        #expect(context.hasChanges)
    }
}
