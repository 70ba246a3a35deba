import Foundation
import StowageTestSupport
import Synchronization
import Testing

@testable import Stowage

/// Observation of models through `withObservationTracking`: models written, inserted,
/// saved or fetched before anyone read them, one model's observers beside another's, and
/// properties an observer did not read.
@Suite("Observation of models")
struct ObservationTests {
    /// Counts the changes `withObservationTracking` reports for what `read` reads. The
    /// tracking fires once, as Observation's does; `arm` tracks again.
    final class Watch: Sendable {
        let changes = PosixMutex(0)
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

    /// `enumerate` gives the models of a batch one registrar (Stowage's own): the observer
    /// of a changed model always hears of the change, and so do the observers of the same
    /// property of the other models of its batch, but not those of other batches, nor of
    /// models a plain fetch made.
    @Test(arguments: [StoreFactory.memory, StoreFactory.log])
    func enumeratedModelsTellTheirObserversOfEachChange(_ factory: StoreFactory) throws {
        let container = try factory.container()
        let writer = ModelContext(container)
        for i in 0..<12 { writer.insert(Trip(name: "trip \(i < 10 ? "0" : "")\(i)", destination: "D\(i)")) }
        try writer.save()

        let context = ModelContext(container)
        var kept: [(trip: Trip, watch: Watch)] = []
        try context.enumerate(FetchDescriptor<Trip>(sortBy: [SortDescriptor(\.name)]), batchSize: 5) { trip in
            let watch = Watch()
            watch.arm { _ = trip.destination }
            kept.append((trip, watch))
        }
        #expect(kept.map(\.trip.name) == (0..<12).map { "trip \($0 < 10 ? "0" : "")\($0)" })
        let fetched = try #require(try ModelContext(container).fetch(FetchDescriptor<Trip>()).first)
        let plain = Watch()
        plain.arm { _ = fetched.destination }

        // Batches of 5: trips 0-4, 5-9 and 10-11.
        kept[0].trip.destination = "changed 0"
        #expect(kept.map(\.watch.count) == [1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0])
        kept[7].trip.destination = "changed 7"
        #expect(kept.map(\.watch.count) == [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0])
        kept[11].trip.destination = "changed 11"
        #expect(kept.map(\.watch.count) == Array(repeating: 1, count: 12))
        #expect(plain.count == 0, "a change to an enumerated model reached a fetched model's observer")
        // A property nobody read tells no one.
        let again = Watch()
        again.arm { _ = kept[3].trip.destination }
        kept[4].trip.budget = 5
        #expect(again.count == 0)
        kept[3].trip.destination = "changed 3"
        #expect(again.count == 1)

        try context.save()
        let stored = try ModelContext(container).fetch(FetchDescriptor<Trip>(sortBy: [SortDescriptor(\.name)]))
        #expect(stored.map(\.destination)[0...3] == ["changed 0", "D1", "D2", "changed 3"])
        #expect(stored.map(\.destination)[7] == "changed 7")
        #expect(stored.map(\.destination)[11] == "changed 11")
    }

    /// The sharing is for the models an enumeration makes, first read while it hands out a
    /// batch: a batch of a nested enumeration has its own registrar, the outer batch's is
    /// back after it, a model kept for a later batch and first read there shares that
    /// batch's, and a model kept past the enumeration and first read then gets its own.
    @Test(arguments: [StoreFactory.memory, StoreFactory.log])
    func onlyABatchsOwnModelsShareItsRegistrar(_ factory: StoreFactory) throws {
        let container = try factory.container()
        let writer = ModelContext(container)
        for i in 0..<6 { writer.insert(Trip(name: "trip \(i)")) }
        try writer.save()

        let context = ModelContext(container)
        var unread: [Trip] = []
        var outer: [_ModelObservation] = []
        var inner: [_ModelObservation] = []
        var outerAfterInner: [_ModelObservation] = []
        var keptForLater: [_ModelObservation] = []
        try context.enumerate(FetchDescriptor<Trip>(), batchSize: 3) { trip in
            unread.append(trip)
            outer.append(trip.persistentBackingData._firstObservation())
            // A model of the first batch, kept and first read in the second, shares the
            // second's registrar.
            if outer.count == 4 { keptForLater.append(unread[2].persistentBackingData._firstObservation()) }
            guard outer.count == 1 else { return }
            try context.enumerate(FetchDescriptor<Trip>(), batchSize: 10) { nested in
                inner.append(nested.persistentBackingData._firstObservation())
            }
            outerAfterInner.append(trip.persistentBackingData._firstObservation())
        }
        #expect(outer.count == 6 && inner.count == 6)
        #expect(outer[1] === outer[0] && outer[2] === outer[0], "the first batch's models did not share")
        #expect(outer[4] === outer[3] && outer[5] === outer[3], "the second batch's models did not share")
        #expect(outer[0] !== outer[3], "two batches shared one registrar")
        #expect(inner.allSatisfy { $0 === inner[0] } && inner[0] !== outer[0], "the nested batch did not have its own")
        #expect(outerAfterInner.count == 1 && outerAfterInner[0] === outer[0], "the nested batch took the outer one's")
        #expect(
            keptForLater.count == 1 && keptForLater[0] === outer[3], "a kept model read later took another registrar")

        // After the enumeration, each model's first read gets its own.
        #expect(
            unread[0].persistentBackingData._firstObservation() !== unread[1].persistentBackingData._firstObservation())
        let watch = Watch()
        watch.arm { _ = unread[0].name }
        unread[1].name = "renamed"
        #expect(watch.count == 0, "a model first read after the enumeration shared a registrar")
        unread[0].name = "renamed too"
        #expect(watch.count == 1)
    }

    /// A batch makes its registrar when the first of its models is read: a block that
    /// reads nothing makes none, and the registrar is gone once the enumeration returns.
    @Test func aBatchMakesItsRegistrarOnlyWhenAModelIsRead() throws {
        let container = try StoreFactory.memory.container()
        let writer = ModelContext(container)
        for i in 0..<4 { writer.insert(Trip(name: "trip \(i)")) }
        try writer.save()
        let context = ModelContext(container)
        var seen: [Bool] = []
        var position = 0
        try context.enumerate(FetchDescriptor<Trip>(sortBy: [SortDescriptor(\.name)]), batchSize: 2) { trip in
            seen.append(context.link.batchObservation != nil)
            if position == 2 {
                _ = trip.name
                seen.append(context.link.batchObservation != nil)
            }
            position += 1
        }
        // The first batch is not read; reading the second batch's first model makes its
        // registrar, which the next model of the batch finds.
        #expect(seen == [false, false, false, true, true])
        #expect(context.link.batchObservation == nil && !context.link.handsOutBatch)
    }

    @Test func relationshipsAreObserved() {
        let trip = Trip(name: "with items")
        let watch = Watch()
        watch.arm { _ = trip.items }
        trip.items.append(Item(name: "boots"))
        #expect(watch.count == 1)
        // Unmanaged related models hold each other as any two Swift objects can (no context
        // owns them to let go, as a rollback does): the test breaks its cycle, so that the
        // leak-checked run (`STOWAGE_ASAN_LEAKS=1 Scripts/asan`) reports only Stowage's own.
        trip.items = []
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
