import Foundation
import StowageTestSupport
import Synchronization
import Testing

@_spi(Testing) @testable import Stowage

/// One value written by one model actor; `key` is unique, so a second insert of a key
/// updates the record that has it.
@Model final class ActorTally {
    var key: String
    var writer: Int
    var value: Int
    #Unique<ActorTally>([\.key])

    init(key: String, writer: Int, value: Int) {
        self.key = key
        self.writer = writer
        self.value = value
    }
}

/// A second model, to look an identifier up as the wrong type.
@Model final class ActorNote {
    var text: String
    init(text: String) { self.text = text }
}

extension StoreKind {
    static let tallySchema = Schema([ActorTally.self, ActorNote.self])

    /// A container of ``ActorTally`` and ``ActorNote`` on this kind of store.
    func tallies(in directory: LogTestDirectory) throws -> ModelContainer {
        try container(Self.tallySchema, in: directory)
    }
}

/// Counts how many calls are inside ``OverlapProbe/during(_:)`` at once, and the most there were.
final class OverlapProbe: Sendable {
    private let state = PosixMutex<(current: Int, maximum: Int)>((0, 0))

    func during(_ body: () -> Void) {
        state.withLock { state in
            state.current += 1
            state.maximum = max(state.maximum, state.current)
        }
        body()
        state.withLock { $0.current -= 1 }
    }

    var maximum: Int { state.withLock { $0.maximum } }
}

@ModelActor
actor TallyWriter {
    /// `batches` saves, each of `perBatch` keys of this writer's own and one shared key
    /// (`shared-<batch>`) that every writer inserts too. Returns the number of saves.
    func write(writer: Int, batches: Int, perBatch: Int) throws -> Int {
        for batch in 0..<batches {
            for j in 0..<perBatch {
                let n = batch * perBatch + j
                modelContext.insert(ActorTally(key: "w\(writer)-\(n)", writer: writer, value: n))
            }
            modelContext.insert(ActorTally(key: "shared-\(batch)", writer: writer, value: -1))
            try modelContext.save()
        }
        return batches
    }

    /// Inserts `count` tallies and saves them; returns their identifiers in key order.
    func insert(_ count: Int, prefix: String) throws -> [PersistentIdentifier] {
        let tallies = (0..<count).map { ActorTally(key: "\(prefix)\($0)", writer: 0, value: $0) }
        for tally in tallies { modelContext.insert(tally) }
        try modelContext.save()
        return tallies.map(\.persistentModelID)
    }

    /// The identifiers of every tally whose key starts with `prefix`, in key order.
    func identifiers(prefix: String) throws -> [PersistentIdentifier] {
        try modelContext.fetchIdentifiers(
            FetchDescriptor<ActorTally>(
                predicate: #Predicate { $0.key.starts(with: prefix) }, sortBy: [SortDescriptor(\.key)]))
    }

    /// Adds `amount` to the value of each tally in `ids` that this actor can find, saves,
    /// and returns how many it found.
    func add(_ amount: Int, to ids: [PersistentIdentifier]) throws -> Int {
        var found = 0
        for id in ids {
            guard let tally = self[id, as: ActorTally.self] else { continue }
            tally.value += amount
            found += 1
        }
        try modelContext.save()
        return found
    }

    func key(of id: PersistentIdentifier) -> String? {
        self[id, as: ActorTally.self]?.key
    }

    func isNote(_ id: PersistentIdentifier) -> Bool {
        self[id, as: ActorNote.self] != nil
    }

    /// Inserts a tally without saving; whether the subscript hands back that same object
    /// for its temporary identifier, and the identifier.
    func insertUnsavedAndLookUp(key: String) -> (same: Bool, id: PersistentIdentifier) {
        let tally = ActorTally(key: key, writer: 0, value: 0)
        modelContext.insert(tally)
        return (self[tally.persistentModelID, as: ActorTally.self] === tally, tally.persistentModelID)
    }

    /// Whether the subscript gives the model the context has registered, rather than a new
    /// object, after a fetch registered it.
    func lookUpGivesTheRegisteredModel(_ id: PersistentIdentifier) throws -> Bool {
        let fetched = try modelContext.fetch(FetchDescriptor<ActorTally>()).first { $0.persistentModelID == id }
        guard let fetched else { return false }
        return self[id, as: ActorTally.self] === fetched
    }

    /// Where the actor's code runs: on its model executor's queue, not the main thread,
    /// with a context of its own and the container it was made with.
    func isolation(container: ModelContainer) -> (onExecutor: Bool, onMainThread: Bool, ownContext: Bool) {
        let executor = modelExecutor as? DefaultSerialModelExecutor
        preconditionIsolated()
        return (
            executor?.isIsolatingCurrentContext() == true,
            Thread.isMainThread,
            modelContainer === container && modelContext === executor?.modelContext
        )
    }

    /// Spends a little time inside `probe`, so that overlapping calls would show.
    func step(_ probe: OverlapProbe) {
        probe.during { usleep(200) }
    }
}

/// A model actor written by hand, without the macro: the protocol's `unownedExecutor`
/// puts it on its model executor too.
actor HandWrittenTallyReader: ModelActor {
    nonisolated let modelExecutor: any ModelExecutor
    nonisolated let modelContainer: ModelContainer

    init(container: ModelContainer) {
        modelContainer = container
        modelExecutor = DefaultSerialModelExecutor(modelContext: ModelContext(container))
    }

    func runsOnItsExecutor() -> Bool {
        (modelExecutor as? DefaultSerialModelExecutor)?.isIsolatingCurrentContext() == true
    }

    func count() throws -> Int {
        try modelContext.fetchCount(FetchDescriptor<ActorTally>())
    }
}

@Suite("@ModelActor")
struct ModelActorTests {
    /// The keys and count of the tallies a fresh context of `container` finds.
    static func stored(in container: ModelContainer) throws -> (keys: [String], count: Int) {
        let context = ModelContext(container)
        let tallies = try context.fetch(FetchDescriptor<ActorTally>(sortBy: [SortDescriptor(\.key)]))
        return (tallies.map(\.key), try context.fetchCount(FetchDescriptor<ActorTally>()))
    }

    @Test(arguments: StoreKind.allCases)
    func theSubscriptFindsRegisteredAndStoredModelsOfItsType(_ kind: StoreKind) async throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let container = try kind.tallies(in: directory)
        let main = ModelContext(container)
        let saved = ActorTally(key: "saved", writer: 0, value: 1)
        let gone = ActorTally(key: "gone", writer: 0, value: 2)
        main.insert(saved)
        main.insert(gone)
        main.insert(ActorNote(text: "note"))
        try main.save()
        let unsavedElsewhere = ActorTally(key: "unsaved", writer: 0, value: 3)
        main.insert(unsavedElsewhere)
        main.delete(gone)
        try main.save()

        let actor = TallyWriter(modelContainer: container)
        // Not registered in the actor's context: read from the store.
        #expect(await actor.key(of: saved.persistentModelID) == "saved")
        #expect(await actor.key(of: unsavedElsewhere.persistentModelID) == "unsaved")
        // Registered: the same object.
        #expect(try await actor.lookUpGivesTheRegisteredModel(saved.persistentModelID))
        let unsaved = await actor.insertUnsavedAndLookUp(key: "mine")
        #expect(unsaved.same)
        #expect(unsaved.id.isTemporary)
        // Deleted, another context's temporary identifier, or another model type: nil.
        #expect(await actor.key(of: gone.persistentModelID) == nil)
        let temporary = ActorTally(key: "never saved", writer: 0, value: 0)
        main.insert(temporary)
        #expect(temporary.persistentModelID.isTemporary)
        #expect(await actor.key(of: temporary.persistentModelID) == nil)
        #expect(await actor.isNote(saved.persistentModelID) == false)
        let note = try #require(try main.fetch(FetchDescriptor<ActorNote>()).first)
        #expect(await actor.isNote(note.persistentModelID))
    }

    @Test(arguments: StoreKind.allCases)
    func identifiersCrossActorsAndResolveInAnotherContext(_ kind: StoreKind) async throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let container = try kind.tallies(in: directory)
        let importer = TallyWriter(modelContainer: container)
        let editor = TallyWriter(modelContainer: container)

        let inserted = try await importer.insert(30, prefix: "item-")
        #expect(inserted.count == 30)
        #expect(inserted.allSatisfy { !$0.isTemporary })
        #expect(Set(inserted).count == 30)
        // The importer's identifiers, fetched, are the ones its save gave out.
        let fetched = try await importer.identifiers(prefix: "item-")
        #expect(Set(fetched) == Set(inserted))
        // Another actor resolves them in its own context and changes every one.
        #expect(try await editor.add(100, to: fetched) == 30)
        // A third context sees the editor's changes.
        let values = try ModelContext(container).fetch(FetchDescriptor<ActorTally>(sortBy: [SortDescriptor(\.value)]))
            .map(\.value)
        #expect(values == Array(100..<130))
        // And back on the first actor, by the same identifiers.
        for (n, id) in inserted.enumerated() { #expect(await importer.key(of: id) == "item-\(n)") }
    }

    @Test func theActorRunsSeriallyOnItsModelExecutorOffTheMainThread() async throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let container = try StoreKind.memory.tallies(in: directory)
        let actor = TallyWriter(modelContainer: container)
        let isolation = await actor.isolation(container: container)
        #expect(isolation.onExecutor)
        #expect(!isolation.onMainThread)
        #expect(isolation.ownContext)
        // Calls from many tasks at once never overlap.
        let probe = OverlapProbe()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<200 { group.addTask { await actor.step(probe) } }
        }
        #expect(probe.maximum == 1)
        // Two actors have two executors.
        let other = TallyWriter(modelContainer: container)
        let first = try #require(actor.modelExecutor as? DefaultSerialModelExecutor)
        let second = try #require(other.modelExecutor as? DefaultSerialModelExecutor)
        #expect(first !== second)
    }

    @Test func aModelActorWrittenByHandRunsOnItsModelExecutor() async throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let container = try StoreKind.memory.tallies(in: directory)
        _ = try await TallyWriter(modelContainer: container).insert(3, prefix: "t")
        let reader = HandWrittenTallyReader(container: container)
        #expect(await reader.runsOnItsExecutor())
        #expect(try await reader.count() == 3)
    }

    /// Eight actors save at once into one store with a unique key: every save lands, with
    /// nothing lost or duplicated, before and after the store is reopened.
    @Test(arguments: StoreKind.allCases)
    func eightActorsSavingAtOnceLoseAndDuplicateNothing(_ kind: StoreKind) async throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let container = try kind.tallies(in: directory)
        let writers = 8
        let batches = 8
        let perBatch = 5
        let actors = (0..<writers).map { _ in TallyWriter(modelContainer: container) }
        let saves = try await withThrowingTaskGroup(of: Int.self) { group in
            for (writer, actor) in actors.enumerated() {
                group.addTask { try await actor.write(writer: writer, batches: batches, perBatch: perBatch) }
            }
            return try await group.reduce(0, +)
        }
        #expect(saves == writers * batches)

        let own = (0..<writers).flatMap { w in (0..<(batches * perBatch)).map { "w\(w)-\($0)" } }
        let shared = (0..<batches).map { "shared-\($0)" }
        let expected = (own + shared).sorted()
        let stored = try Self.stored(in: container)
        #expect(stored.count == expected.count)
        #expect(stored.keys == expected)
        let context = ModelContext(container)
        for key in shared {
            let matches = try context.fetch(FetchDescriptor<ActorTally>(predicate: #Predicate { $0.key == key }))
            #expect(matches.count == 1, "\(key)")
            #expect((0..<writers).contains(matches.first?.writer ?? -1), "\(key)")
        }

        if kind == .log {
            let store = try #require(container.stores.first as? LogStore)
            let syncs = store.commitSyncCount
            // Each save waits for at most one sync; how many share one depends on timing.
            #expect(syncs >= 1 && syncs <= saves, "\(syncs) syncs for \(saves) saves")
            print("ModelActorTests: the log store made \(syncs) commit syncs for \(saves) saves by \(writers) actors")
        }

        guard kind.reopens else { return }
        StoreKind.close(container)
        let reopened = try Self.stored(in: try kind.tallies(in: directory))
        #expect(reopened.count == expected.count)
        #expect(reopened.keys == expected)
    }

    /// With a sync as slow as a real disk's, the saves of eight model actors share syncs
    /// (the log store's group commit), and every one of them is there after a reopen.
    @Test func modelActorsSavingIntoALogStoreShareSyncs() async throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let fs = FaultInjectingFileSystem()
        fs.setBeforeSync { _ in usleep(2000) }
        let schema = StoreKind.tallySchema
        var configuration = LogStoreConfiguration(schema: schema, url: directory.storeURL)
        configuration.fileSystem = fs
        let container = try ModelContainer(for: schema, configurations: [configuration])
        let actors = (0..<8).map { _ in TallyWriter(modelContainer: container) }
        let saves = try await withThrowingTaskGroup(of: Int.self) { group in
            for (writer, actor) in actors.enumerated() {
                group.addTask { try await actor.write(writer: writer, batches: 8, perBatch: 5) }
            }
            return try await group.reduce(0, +)
        }
        let store = try #require(container.stores.first as? LogStore)
        let syncs = store.commitSyncCount
        #expect(syncs > 0 && syncs < saves, "\(syncs) syncs for \(saves) saves")
        let stored = try Self.stored(in: container)
        #expect(stored.count == 8 * 8 * 5 + 8)
        StoreKind.close(container)
        let reopened = try Self.stored(in: try StoreKind.log.tallies(in: directory))
        #expect(reopened.keys == stored.keys)
    }
}
