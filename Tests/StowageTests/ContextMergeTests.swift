import Foundation
import StowageTestSupport
import Synchronization
import Testing

@testable import Stowage

/// `willSave` and `didSave` notifications, and contexts of one container that see each
/// other's saves, on every store.
@Suite("Save notifications and merging other contexts' saves")
struct ContextMergeTests {
    /// What one context's save notifications said, in the order they came.
    final class SaveLog: @unchecked Sendable {
        // @unchecked: the observers run on the saving thread, which is the test's own.
        var events: [String] = []
        var willSaveUserInfo: [AnyHashable: Any]?
        var inserted: Set<PersistentIdentifier>?
        var updated: Set<PersistentIdentifier>?
        var deleted: Set<PersistentIdentifier>?
        var insertedByRawValue: Set<PersistentIdentifier>?
        var updatedByRawValue: Set<PersistentIdentifier>?
        var deletedByRawValue: Set<PersistentIdentifier>?
        /// What `check` found when `willSave` and `didSave` came.
        var checkedAtWillSave: Int?
        var checkedAtDidSave: Int?
        private var tokens: [any NSObjectProtocol] = []
        private let check: () -> Int?

        /// Watches `context`'s notifications; `check` runs in each observer.
        init(_ context: ModelContext, check: @escaping () -> Int? = { nil }) {
            self.check = check
            let center = NotificationCenter.default
            tokens.append(
                center.addObserver(forName: ModelContext.willSave, object: context, queue: nil) { [self] note in
                    events.append("willSave")
                    willSaveUserInfo = note.userInfo
                    checkedAtWillSave = self.check()
                })
            tokens.append(
                center.addObserver(forName: ModelContext.didSave, object: context, queue: nil) { [self] note in
                    events.append("didSave")
                    // The seed's reading pattern: the key itself.
                    typealias Key = ModelContext.NotificationKey
                    inserted = note.userInfo?[Key.insertedIdentifiers] as? Set<PersistentIdentifier>
                    updated = note.userInfo?[Key.updatedIdentifiers] as? Set<PersistentIdentifier>
                    deleted = note.userInfo?[Key.deletedIdentifiers] as? Set<PersistentIdentifier>
                    insertedByRawValue = note.userInfo?[Key.insertedIdentifiers.rawValue] as? Set<PersistentIdentifier>
                    updatedByRawValue = note.userInfo?[Key.updatedIdentifiers.rawValue] as? Set<PersistentIdentifier>
                    deletedByRawValue = note.userInfo?[Key.deletedIdentifiers.rawValue] as? Set<PersistentIdentifier>
                    checkedAtDidSave = self.check()
                })
        }

        func reset() {
            events = []
            inserted = nil
            updated = nil
            deleted = nil
        }

        deinit {
            for token in tokens { NotificationCenter.default.removeObserver(token) }
        }
    }

    // MARK: Notifications

    @Test(arguments: StoreFactory.all)
    func didSaveListsInsertedUpdatedAndDeletedIdentifiers(_ factory: StoreFactory) throws {
        let container = try factory.container()
        let context = ModelContext(container)
        let log = SaveLog(context)

        let kept = Trip(name: "kept")
        let changed = Trip(name: "changed")
        let removed = Trip(name: "removed")
        let item = Item(name: "tent", trip: removed)
        for trip in [kept, changed, removed] { context.insert(trip) }
        try context.save()
        #expect(log.events == ["willSave", "didSave"])
        #expect(log.willSaveUserInfo == nil, "willSave has no userInfo, as in SwiftData")
        let insertedIDs = Set(
            [kept.persistentModelID, changed.persistentModelID, removed.persistentModelID, item.persistentModelID])
        #expect(insertedIDs.allSatisfy { !$0.isTemporary }, "the inserted identifiers are the permanent ones")
        #expect(log.inserted == insertedIDs)
        #expect(log.updated == [])
        #expect(log.deleted == [])
        #expect(log.insertedByRawValue == log.inserted)

        log.reset()
        changed.budget = 12
        context.delete(removed)
        try context.save()
        #expect(log.events == ["willSave", "didSave"])
        #expect(log.inserted == [])
        #expect(log.updated == [changed.persistentModelID])
        // The item goes with its trip (`.cascade`), and is listed.
        #expect(log.deleted == [removed.persistentModelID, item.persistentModelID])
        #expect(log.updatedByRawValue == log.updated)
        #expect(log.deletedByRawValue == log.deleted)

        log.reset()
        try context.save()
        #expect(log.events == [], "a save with no changes posts nothing")
    }

    @Test(arguments: StoreFactory.all)
    func willSaveComesBeforeTheStoreHasTheSaveAndDidSaveAfter(_ factory: StoreFactory) throws {
        let container = try factory.container()
        let context = ModelContext(container)
        let reader = ModelContext(container)
        let log = SaveLog(context) { (try? reader.fetchCount(FetchDescriptor<Trip>())) ?? -1 }
        context.insert(Trip(name: "one"))
        context.insert(Trip(name: "two"))
        try context.save()
        #expect(log.events == ["willSave", "didSave"])
        #expect(log.checkedAtWillSave == 0)
        #expect(log.checkedAtDidSave == 2)
    }

    // MARK: Merging

    /// A container, a writer context with `trip` saved, and a reader context that fetched it.
    struct Pair {
        let container: ModelContainer
        let writer: ModelContext
        let reader: ModelContext
        let written: Trip
        let read: Trip

        init(_ factory: StoreFactory) throws {
            container = try factory.container()
            writer = ModelContext(container)
            reader = ModelContext(container)
            written = Trip(name: "before", destination: "Oslo")
            written.budget = 100
            writer.insert(written)
            try writer.save()
            read = try #require(try reader.fetch(FetchDescriptor<Trip>()).first)
            #expect(read !== written)
            #expect(read.name == "before")
        }
    }

    @Test(arguments: StoreFactory.all)
    func anUnchangedModelShowsTheOtherContextsSave(_ factory: StoreFactory) throws {
        let pair = try Pair(factory)
        pair.written.name = "after"
        pair.written.budget = 250
        try pair.writer.save()
        // The next property read, with no call to the reader context in between.
        #expect(pair.read.name == "after")
        #expect(pair.read.budget == 250)
        #expect(pair.read.destination == "Oslo")
        #expect(!pair.reader.hasChanges)
        #expect(try pair.reader.fetch(FetchDescriptor<Trip>()).map(\.name) == ["after"])
    }

    @Test(arguments: StoreFactory.all)
    func aModelDeletedElsewhereIsKnownDeleted(_ factory: StoreFactory) throws {
        let pair = try Pair(factory)
        let id = pair.written.persistentModelID
        pair.writer.delete(pair.written)
        try pair.writer.save()
        pair.reader.processPendingChanges()
        #expect(pair.read.isDeleted)
        #expect(pair.read.modelContext == nil)
        #expect(pair.reader.registeredModel(for: id) as Trip? == nil)
        #expect(try pair.reader.fetch(FetchDescriptor<Trip>()).isEmpty)
        #expect(!pair.reader.hasChanges)
    }

    @Test(arguments: StoreFactory.all)
    func aDeleteElsewhereWinsOverUnsavedChangesHere(_ factory: StoreFactory) throws {
        let pair = try Pair(factory)
        pair.read.budget = 1
        #expect(pair.reader.hasChanges)
        pair.writer.delete(pair.written)
        try pair.writer.save()
        // The reader's next use brings the delete in.
        #expect(try pair.reader.fetchCount(FetchDescriptor<Trip>()) == 0)
        #expect(pair.read.isDeleted)
        #expect(!pair.reader.hasChanges, "the change to a deleted record was dropped")
        try pair.reader.save()
        #expect(try ModelContext(pair.container).fetchCount(FetchDescriptor<Trip>()) == 0)
    }

    @Test(arguments: StoreFactory.all)
    func unsavedChangesHereAreKeptAndTheOtherPropertiesMerge(_ factory: StoreFactory) throws {
        let pair = try Pair(factory)
        pair.read.destination = "Lima"
        pair.written.budget = 999
        pair.written.name = "after"
        try pair.writer.save()
        // The property written here keeps its unsaved value; the others show the save.
        #expect(pair.read.destination == "Lima")
        #expect(pair.read.budget == 999)
        #expect(pair.read.name == "after")
        #expect(pair.reader.hasChanges)
        try pair.reader.save()
        let fresh = try #require(try ModelContext(pair.container).fetch(FetchDescriptor<Trip>()).first)
        #expect(fresh.destination == "Lima")
        #expect(fresh.budget == 999, "the reader's save did not undo the writer's budget")
        #expect(fresh.name == "after")
    }

    @Test(arguments: StoreFactory.all)
    func aRollbackAfterAMergeShowsTheStoredValues(_ factory: StoreFactory) throws {
        let pair = try Pair(factory)
        pair.read.destination = "Lima"
        pair.written.budget = 999
        try pair.writer.save()
        pair.reader.processPendingChanges()
        pair.reader.rollback()
        #expect(pair.read.destination == "Oslo")
        #expect(pair.read.budget == 999)
        #expect(!pair.reader.hasChanges)
    }

    /// The policy for one property changed in both contexts: the unsaved value here wins
    /// until this context saves, and its save then wins in the store (the last save wins).
    @Test(arguments: StoreFactory.all)
    func aPropertyChangedOnBothSidesKeepsTheLocalValueAndTheLastSaveWins(_ factory: StoreFactory) throws {
        let pair = try Pair(factory)
        pair.read.name = "reader's"
        pair.written.name = "writer's"
        pair.written.destination = "Rome"
        try pair.writer.save()
        pair.reader.processPendingChanges()
        #expect(pair.read.name == "reader's")
        #expect(pair.read.destination == "Rome")
        try pair.reader.save()
        // The reader's save reaches the writer, whose model has no unsaved changes.
        #expect(pair.written.name == "reader's")
        #expect(pair.written.destination == "Rome")
        let fresh = ModelContext(pair.container)
        #expect(try fresh.fetch(FetchDescriptor<Trip>()).map(\.name) == ["reader's"])
    }

    @Test(arguments: StoreFactory.all)
    func aToOneRelationshipChangeMerges(_ factory: StoreFactory) throws {
        let container = try factory.container()
        let writer = ModelContext(container)
        let reader = ModelContext(container)
        let first = Trip(name: "first")
        let second = Trip(name: "second")
        let item = Item(name: "map", trip: first)
        writer.insert(first)
        writer.insert(second)
        writer.insert(item)
        try writer.save()
        let readItem = try #require(try reader.fetch(FetchDescriptor<Item>()).first)
        #expect(readItem.trip?.name == "first")
        item.trip = second
        try writer.save()
        #expect(readItem.trip?.name == "second")
        item.trip = nil
        try writer.save()
        #expect(readItem.trip == nil)
        // A model with an unsaved change of its own still takes a relationship it did not write.
        readItem.note = "reader's note"
        item.trip = first
        try writer.save()
        #expect(readItem.trip?.name == "first")
        #expect(readItem.note == "reader's note")
    }

    @Test(arguments: StoreFactory.all)
    func observersSeeMergedChanges(_ factory: StoreFactory) throws {
        let pair = try Pair(factory)
        let nameWatch = ObservationTests.Watch()
        nameWatch.arm { _ = pair.read.name }
        let destinationWatch = ObservationTests.Watch()
        destinationWatch.arm { _ = pair.read.destination }
        pair.written.name = "after"
        try pair.writer.save()
        #expect(nameWatch.count == 0, "the reader context has not merged yet")
        pair.reader.processPendingChanges()
        #expect(nameWatch.count == 1)
        #expect(destinationWatch.count == 0, "the destination did not change")
        #expect(pair.read.name == "after")
    }

    @Test(arguments: StoreFactory.all)
    func observersOfAChangedModelHearOnlyOfWhatMerged(_ factory: StoreFactory) throws {
        let pair = try Pair(factory)
        pair.read.destination = "Lima"
        let budgetWatch = ObservationTests.Watch()
        budgetWatch.arm { _ = pair.read.budget }
        let destinationWatch = ObservationTests.Watch()
        destinationWatch.arm { _ = pair.read.destination }
        pair.written.budget = 5
        pair.written.destination = "Rome"
        try pair.writer.save()
        pair.reader.processPendingChanges()
        #expect(budgetWatch.count == 1)
        #expect(destinationWatch.count == 0, "the destination written here kept its value")
        #expect(pair.read.destination == "Lima")
    }

    @Test(arguments: StoreFactory.all)
    func insertsElsewhereAreFetchedNotRegistered(_ factory: StoreFactory) throws {
        let pair = try Pair(factory)
        let added = Trip(name: "added")
        pair.writer.insert(added)
        try pair.writer.save()
        #expect(pair.reader.registeredModel(for: added.persistentModelID) as Trip? == nil)
        #expect(Set(try pair.reader.fetch(FetchDescriptor<Trip>()).map(\.name)) == ["before", "added"])
    }

    @Test func aLoneContextQueuesNothing() throws {
        let container = try StoreFactory.memory.container()
        let context = ModelContext(container)
        #expect(!container.core.contexts.hasOthers)
        do {
            let other = ModelContext(container)
            #expect(container.core.contexts.hasOthers)
            _ = other
        }
        #expect(!container.core.contexts.hasOthers, "a context that is gone is no longer handed saves")
        context.insert(Trip(name: "a"))
        try context.save()
        let pending = context.link.mergePending.load(ordering: .relaxed)
        #expect(!pending)
    }

    @Test func queuedChangesAreBoundedAndStillMerge() throws {
        let container = try StoreFactory.memory.container()
        let writer = ModelContext(container)
        let reader = ModelContext(container)
        let trip = Trip(name: "0")
        writer.insert(trip)
        try writer.save()
        let read = try #require(try reader.fetch(FetchDescriptor<Trip>()).first)
        // More queued identifiers than the queue keeps: the reader refreshes everything.
        let ids = Array(repeating: trip.persistentModelID, count: PendingMerge.capacity + 1)
        container.core.contexts.post(ids, from: writer.link)
        trip.name = "1"
        try writer.save()
        #expect(reader.link.mergeQueue.withLock { $0.refreshAll && $0.identifiers.isEmpty })
        #expect(read.name == "1")
    }

    /// A context used on one thread while another context saves on another.
    @Test(arguments: StoreFactory.all)
    func savesOnAnotherThreadReachAContextSafely(_ factory: StoreFactory) async throws {
        let container = try factory.container()
        let setup = ModelContext(container)
        let trip = Trip(name: "0")
        setup.insert(trip)
        try setup.save()
        let id = trip.persistentModelID
        let reader = ModelContext(container)
        let read = try #require(reader.model(for: id) as? Trip)
        let rounds = 200
        let writerTask = Task.detached {
            let writer = ModelContext(container)
            guard let written = writer.model(for: id) as? Trip else { return false }
            for round in 1...rounds {
                written.budget = Double(round)
                try writer.save()
            }
            return true
        }
        var last = 0.0
        var monotonic = true
        let deadline = Date().addingTimeInterval(60)
        while last < Double(rounds), Date() < deadline {
            let value = read.budget
            if value < last { monotonic = false }
            last = value
            await Task.yield()
        }
        #expect(try await writerTask.value)
        #expect(monotonic, "a merged value never went back to an older one")
        #expect(read.budget == Double(rounds))
    }
}
