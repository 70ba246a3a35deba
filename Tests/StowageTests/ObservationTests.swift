import Foundation
import Stowage
import StowageTestSupport
import Synchronization
import Testing

/// Observation of models through `withObservationTracking`: models written, inserted,
/// saved or fetched before anyone read them, one model's observers beside another's, and
/// properties an observer did not read.
@Suite("Observation of models")
struct ObservationTests {
    /// Counts the changes `withObservationTracking` reports for what `read` reads. The
    /// tracking fires once, as Observation's does; `arm` tracks again.
    final class Watch: Sendable {
        let changes = Mutex(0)
        var count: Int { changes.withLock { $0 } }

        func arm(_ read: () -> Void) {
            withObservationTracking(read) { [self] in changes.withLock { $0 += 1 } }
        }
    }

    @Test func writesBeforeAnyReadReachLaterObservers() {
        let trip = Trip(name: "first")
        trip.name = "second"
        trip.budget = 10
        let watch = Watch()
        watch.arm { _ = trip.name }
        #expect(watch.count == 0)
        trip.name = "third"
        #expect(watch.count == 1)
        #expect(trip.name == "third")
        #expect(trip.budget == 10)
    }

    @Test func anObserverSeesOnlyWhatItRead() {
        let trip = Trip(name: "a")
        let watch = Watch()
        watch.arm { _ = trip.name }
        trip.budget = 5
        trip.destination = "Oslo"
        #expect(watch.count == 0, "budget and destination were not read")
        trip.name = "b"
        #expect(watch.count == 1)
    }

    @Test func eachModelHasItsOwnObservers() {
        let observed = Trip(name: "observed")
        let other = Trip(name: "other")
        _ = other.name
        let watch = Watch()
        watch.arm { _ = observed.name }
        other.name = "changed"
        #expect(watch.count == 0, "a change to another model reached this model's observer")
        observed.name = "changed"
        #expect(watch.count == 1)
    }

    @Test(arguments: [StoreFactory.memory, StoreFactory.log])
    func fetchedAndSavedModelsAreObserved(_ factory: StoreFactory) throws {
        let container = try factory.container()
        let writer = ModelContext(container)
        let inserted = Trip(name: "saved unread", destination: "Rome")
        writer.insert(inserted)
        try writer.save()
        let afterSave = Watch()
        afterSave.arm { _ = inserted.destination }
        inserted.destination = "Paris"
        #expect(afterSave.count == 1)
        try writer.save()

        // A fetched model, never read before the observer reads it.
        let reader = ModelContext(container)
        let fetched = try #require(try reader.fetch(FetchDescriptor<Trip>()).first)
        let watch = Watch()
        watch.arm { _ = fetched.destination }
        fetched.budget = 3
        #expect(watch.count == 0)
        fetched.destination = "Lima"
        #expect(watch.count == 1)
        try reader.save()

        // A fetched model written before any read: the write lands, observers come later.
        let third = ModelContext(container)
        let unread = try #require(try third.fetch(FetchDescriptor<Trip>()).first)
        unread.name = "renamed unread"
        let late = Watch()
        late.arm { _ = unread.name }
        unread.name = "renamed again"
        #expect(late.count == 1)
        try third.save()
        let check = try ModelContext(container).fetch(FetchDescriptor<Trip>())
        #expect(check.map(\.name) == ["renamed again"])
        #expect(check.map(\.destination) == ["Lima"])
        #expect(check.map(\.budget) == [3])
    }

    @Test func relationshipsAreObserved() {
        let trip = Trip(name: "with items")
        let watch = Watch()
        watch.arm { _ = trip.items }
        trip.items.append(Item(name: "boots"))
        #expect(watch.count == 1)
    }

    /// A model gets its backing data from its first initial value, or when first asked
    /// for, and keeps that one: a model with no persisted property at all still saves.
    @Test(arguments: [StoreFactory.memory, StoreFactory.log])
    func backingDataIsMadeOnceAndKept(_ factory: StoreFactory) throws {
        let trip = Trip(name: "once")
        let data = trip.persistentBackingData
        #expect(trip.persistentBackingData === data)
        #expect(trip.name == "once")

        let marker = Marker()
        marker.label = "not stored"
        let made = marker.persistentBackingData
        #expect(marker.persistentBackingData === made)
        let container = try factory.make(Schema([Marker.self]))
        let context = ModelContext(container)
        context.insert(marker)
        try context.save()
        #expect(!marker.persistentModelID.isTemporary)
        #expect(try ModelContext(container).fetchCount(FetchDescriptor<Marker>()) == 1)
    }
}

/// A model whose only stored property is transient: nothing of it is persisted.
@Model final class Marker {
    @Transient var label = ""
    init() {}
}
