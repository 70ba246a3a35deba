import Foundation
import Observation
@_spi(Testing) import Stowage
import StowageTestSupport
import Synchronization
import Testing

/// A context's changes undone and redone through its `undoManager`, on every store.
@Suite("Undo and redo of a context's changes")
struct UndoTests {
    static let stores = StoreFactory.all.map(\.name)

    private func context(_ store: String) throws -> ModelContext {
        let factory = try #require(StoreFactory.all.first { $0.name == store })
        let context = ModelContext(try factory.make(Schema([Person.self, Trip.self, Item.self, Badge.self])))
        return context
    }

    /// The seed's undo code, as written but for the import: an insertion is undoable once
    /// the pending changes are processed.
    @Test(arguments: stores)
    func theSeedsInsertionIsUndoable(store: String) throws {
        let modelContext = try context(store)
        modelContext.undoManager = UndoManager()
        let trip = Trip(name: "Lisbon")
        modelContext.insert(trip)
        modelContext.processPendingChanges()
        // Now undo is available for the insertion
        #expect(modelContext.undoManager?.canUndo == true)
        modelContext.undoManager?.undo()
        #expect(!modelContext.hasChanges)
        #expect(modelContext.insertedModelsArray.isEmpty)
        #expect(trip.modelContext == nil)
        #expect(try modelContext.fetchCount(FetchDescriptor<Trip>()) == 0)
        #expect(modelContext.undoManager?.canRedo == true)
        modelContext.undoManager?.redo()
        #expect(modelContext.insertedModelsArray.count == 1 && trip.modelContext === modelContext)
        try modelContext.save()
        #expect(try modelContext.fetch(FetchDescriptor<Trip>()).map(\.name) == ["Lisbon"])
    }

    @Test(arguments: stores)
    func propertyChangesUndoAndRedoAndTheChangedListFollows(store: String) throws {
        let context = try context(store)
        let trip = Trip(name: "Lisbon")
        context.insert(trip)
        try context.save()
        let undo = UndoManager()
        context.undoManager = undo
        trip.name = "Porto"
        trip.budget = 10
        context.processPendingChanges()
        trip.budget = 20
        context.processPendingChanges()
        #expect(context.changedModelsArray.count == 1)
        let heard = PosixMutex(false)
        withObservationTracking {
            _ = trip.budget
        } onChange: {
            heard.withLock { $0 = true }
        }
        undo.undo()
        #expect(heard.withLock { $0 }, "an observer of the model hears the undo")
        #expect(trip.name == "Porto" && trip.budget == 10)
        undo.undo()
        #expect(trip.name == "Lisbon" && trip.budget == 0)
        #expect(!context.hasChanges)
        #expect(!undo.canUndo)
        undo.redo()
        #expect(trip.name == "Porto" && trip.budget == 10 && context.hasChanges)
        undo.redo()
        #expect(trip.budget == 20 && !undo.canRedo)
        try context.save()
        #expect(try context.fetch(FetchDescriptor<Trip>()).map(\.budget) == [20])
    }

    @Test(arguments: stores)
    func relationshipChangesUndoWithTheirInverses(store: String) throws {
        let context = try context(store)
        let lisbon = Trip(name: "Lisbon")
        let porto = Trip(name: "Porto")
        let socks = Item(name: "Socks")
        context.insert(lisbon)
        context.insert(porto)
        socks.trip = lisbon
        try context.save()
        let undo = UndoManager()
        context.undoManager = undo
        socks.trip = porto
        context.processPendingChanges()
        #expect(lisbon.items.isEmpty && porto.items.map(\.name) == ["Socks"])
        undo.undo()
        #expect(socks.trip === lisbon)
        #expect(lisbon.items.map(\.name) == ["Socks"] && porto.items.isEmpty)
        #expect(!context.hasChanges)
        undo.redo()
        #expect(socks.trip === porto && lisbon.items.isEmpty && porto.items.map(\.name) == ["Socks"])
        try context.save()
        let fresh = ModelContext(context.container)
        let stored = try fresh.fetch(FetchDescriptor<Item>()).first
        #expect(stored?.trip?.name == "Porto")
    }

    @Test(arguments: stores)
    func deletesUndoBeforeAndAfterTheSaveWithTheirCascades(store: String) throws {
        let context = try context(store)
        let trip = Trip(name: "Lisbon")
        context.insert(trip)
        trip.items = [Item(name: "Socks"), Item(name: "Map")]
        try context.save()
        let undo = UndoManager()
        context.undoManager = undo
        context.delete(trip)
        context.processPendingChanges()
        #expect(context.deletedModelsArray.count == 1)
        undo.undo()
        #expect(!trip.isDeleted && !context.hasChanges)
        undo.redo()
        #expect(trip.isDeleted)
        try context.save()
        #expect(try context.fetchCount(FetchDescriptor<Item>()) == 0)
        // Undoing the saved delete makes new unsaved changes: the trip and the items its
        // cascade deleted come back as new models.
        undo.undo()
        #expect(context.hasChanges)
        #expect(!trip.isDeleted && trip.name == "Lisbon")
        try context.save()
        let fresh = ModelContext(context.container)
        #expect(try fresh.fetch(FetchDescriptor<Trip>()).map(\.name) == ["Lisbon"])
        let items = try fresh.fetch(FetchDescriptor<Item>())
        #expect(Set(items.map(\.name)) == ["Socks", "Map"])
        #expect(items.allSatisfy { $0.trip?.name == "Lisbon" })
    }

    @Test(arguments: stores)
    func undoingAnInsertAfterTheSaveDeletesIt(store: String) throws {
        let context = try context(store)
        let undo = UndoManager()
        context.undoManager = undo
        context.insert(Person(email: "a@example.com", name: "A"))
        context.processPendingChanges()
        try context.save()
        #expect(!context.hasChanges)
        undo.undo()
        #expect(context.deletedModelsArray.count == 1)
        try context.save()
        #expect(try ModelContext(context.container).fetchCount(FetchDescriptor<Person>()) == 0)
    }

    /// Random inserts, renames and deletes, each its own undo step, with saves and undos
    /// and redos among them, against a model of which people exist under which names.
    @Test(arguments: stores)
    func randomSequencesMatchAModelOfTheExpectedState(store: String) throws {
        var random = SeededRandom.fromEnvironment()
        let context = try context(store)
        let undo = UndoManager()
        context.undoManager = undo
        typealias State = [String: String]  // email → name
        var history: [State] = [[:]]
        var position = 0
        var next = 0
        var people: [String: Person] = [:]
        func expectMatches(_ step: Int) throws {
            let fetched = try context.fetch(FetchDescriptor<Person>())
            let actual = Dictionary(uniqueKeysWithValues: fetched.map { ($0.email, $0.name) })
            #expect(actual == history[position], "seed \(random.seed), step \(step)")
        }
        for step in 0..<120 {
            let current = history[position]
            switch Int.random(in: 0..<10, using: &random) {
            case 0...2:
                next += 1
                let email = "p\(next)@example.com"
                let person = Person(email: email, name: "N\(next)", age: next)
                people[email] = person
                context.insert(person)
                var state = current
                state[email] = person.name
                history = Array(history[...position]) + [state]
                position += 1
            case 3...4:
                guard let email = current.keys.sorted().randomElement(using: &random), let person = people[email]
                else { continue }
                person.name = "R\(step)"
                var state = current
                state[email] = person.name
                history = Array(history[...position]) + [state]
                position += 1
            case 5:
                guard let email = current.keys.sorted().randomElement(using: &random), let person = people[email]
                else { continue }
                context.delete(person)
                var state = current
                state[email] = nil
                history = Array(history[...position]) + [state]
                position += 1
            case 6...7:
                guard position > 0 else { continue }
                undo.undo()
                position -= 1
            case 8:
                guard position < history.count - 1 else { continue }
                undo.redo()
                position += 1
            default:
                try context.save()
            }
            context.processPendingChanges()
            try expectMatches(step)
        }
        try context.save()
        let fresh = ModelContext(context.container)
        let stored = Dictionary(
            uniqueKeysWithValues: try fresh.fetch(FetchDescriptor<Person>()).map { ($0.email, $0.name) })
        #expect(stored == history[position], "seed \(random.seed)")
    }
}

/// An actor whose context records its changes for undo, as an app's background editor
/// would.
@ModelActor
actor UndoingEditor {
    func startRecording() { modelContext.undoManager = UndoManager() }

    func add(_ name: String) throws {
        modelContext.insert(Trip(name: name))
        modelContext.processPendingChanges()
    }

    func rename(_ name: String, to newName: String) throws {
        let trips = try modelContext.fetch(FetchDescriptor<Trip>(predicate: #Predicate { $0.name == name }))
        for trip in trips { trip.name = newName }
        modelContext.processPendingChanges()
    }

    func undo() { modelContext.undoManager?.undo() }
    func redo() { modelContext.undoManager?.redo() }
    func save() throws { try modelContext.save() }

    func names() throws -> [String] {
        try modelContext.fetch(FetchDescriptor<Trip>(sortBy: [SortDescriptor(\.name)])).map(\.name)
    }
}

@Suite("Undo in a @ModelActor")
struct ModelActorUndoTests {
    @Test(arguments: StoreFactory.all.map(\.name))
    func anActorsContextUndoesAndRedoesItsChanges(store: String) async throws {
        let factory = try #require(StoreFactory.all.first { $0.name == store })
        let container = try factory.make(Schema([Person.self, Trip.self, Item.self, Badge.self]))
        let editor = UndoingEditor(modelContainer: container)
        await editor.startRecording()
        try await editor.add("Lisbon")
        try await editor.add("Oslo")
        try await editor.rename("Oslo", to: "Bergen")
        #expect(try await editor.names() == ["Bergen", "Lisbon"])
        await editor.undo()
        #expect(try await editor.names() == ["Lisbon", "Oslo"])
        await editor.undo()
        #expect(try await editor.names() == ["Lisbon"])
        await editor.redo()
        try await editor.save()
        // Another context sees what the actor saved: its undo state, not its history.
        #expect(try ModelContext(container).fetch(FetchDescriptor<Trip>()).map(\.name).sorted() == ["Lisbon", "Oslo"])
    }
}
