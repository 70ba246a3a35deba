import Foundation
@_spi(Testing) import Stowage
import StowageTestSupport
import Synchronization
import Testing

/// `delete(model:where:)` on an entity no relationship touches deletes at the next save
/// without loading the records; with relationships it loads them and applies delete rules.
@Suite("Deletes by predicate")
struct BatchDeleteTests {
    /// Every check on Stowage's own stores, and on the custom test store
    /// (`FileDictionaryStore`) all but the one-commit check: a store of one's own deletes
    /// in a step before the save, so a failed save there can have deleted.
    @Test(arguments: BatchDeleteChecks.checks.map(\.0), StoreFactory.all.map(\.name))
    func check(_ check: String, store: String) throws {
        if store == StoreFactory.fileDictionary.name, check == BatchDeleteChecks.oneCommit { return }
        let factory = try #require(StoreFactory.all.first { $0.name == store })
        let run = try #require(BatchDeleteChecks.checks.first { $0.0 == check }?.1)
        try run(factory)
    }

    /// The custom store is asked for a batch (its `delete(_:)` is called), where an entity
    /// with relationships is deleted model by model with its delete rules.
    @Test func aCustomBatchingStoreIsAskedAndRelationshipsTakeTheModelPath() throws {
        let container = try BatchDeleteChecks.container(StoreFactory.fileDictionary)
        let store = try #require(container.storesForTesting.first as? FileDictionaryStore)
        let context = ModelContext(container)
        try BatchDeleteChecks.seed(context, count: 6)
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
}
