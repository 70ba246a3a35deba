import Foundation
import Observation
import Stowage
import StowageTestSupport
import Synchronization
import Testing

@ModelActor
actor HousemateWriter {
    func add(_ name: String) throws {
        modelContext.insert(Housemate(name: name))
        try modelContext.save()
    }
}

/// `HistoryObserver`: counting relevant saves, scoped by models and authors, and keeping
/// its place in each store's history.
@Suite("HistoryObserver")
struct HistoryObserverTests {
    static let stores = StoreFactory.all.map(\.name)

    private func container(_ store: String) throws -> ModelContainer {
        let factory = try #require(StoreFactory.all.first { $0.name == store })
        return try factory.make(Schema([Errand.self, Housemate.self]))
    }

    @Test(arguments: stores)
    func countsEverySaveAfterItStarts(store: String) throws {
        let container = try container(store)
        let context = ModelContext(container)
        context.insert(Errand(title: "before", room: "r", minutes: 1))
        try context.save()
        let observer = try HistoryObserver(modelContainer: container)
        #expect(observer.eventCounter == 0, "saves before the observer do not count")
        context.insert(Errand(title: "a", room: "r", minutes: 1))
        try context.save()
        #expect(observer.eventCounter == 1)
        let other = ModelContext(container)
        other.insert(Housemate(name: "Ana"))
        try other.save()
        #expect(observer.eventCounter == 2)
        // A save with nothing to save is no transaction.
        try other.save()
        #expect(observer.eventCounter == 2)
    }

    @Test(arguments: stores)
    func observedModelsAndAuthorsScopeTheCount(store: String) throws {
        let container = try container(store)
        let errands = try HistoryObserver(observedModels: [Errand.self], modelContainer: container)
        let byApp = try HistoryObserver(authors: ["app"], modelContainer: container)
        let appErrands = try HistoryObserver(observedModels: [Errand.self], authors: ["app"], modelContainer: container)
        let app = ModelContext(container)
        app.author = "app"
        let sync = ModelContext(container)
        sync.author = "sync"
        app.insert(Housemate(name: "Ana"))
        try app.save()
        sync.insert(Errand(title: "a", room: "r", minutes: 1))
        try sync.save()
        app.insert(Errand(title: "b", room: "r", minutes: 2))
        try app.save()
        #expect(errands.eventCounter == 2)
        #expect(byApp.eventCounter == 2)
        #expect(appErrands.eventCounter == 1)
        #expect(errands.observedModels.count == 1)
    }

    @Test(arguments: stores)
    func anObserverOfAnUnknownModelThrows(store: String) throws {
        let container = try container(store)
        #expect(throws: SwiftDataError.self) {
            _ = try HistoryObserver(observedModels: [Trip.self], modelContainer: container)
        }
    }

    @Test(arguments: stores)
    func tokensAdvanceToEachStoresLastTransaction(store: String) throws {
        let container = try container(store)
        let context = ModelContext(container)
        let observer = try HistoryObserver(observedModels: [Housemate.self], modelContainer: container)
        context.insert(Errand(title: "a", room: "r", minutes: 1))
        try context.save()
        // Not relevant, but seen: the place moves past it.
        // A store that keeps no history (the JSON store by default, the custom store) has
        // no tokens.
        let history = (try? context.fetchHistory(HistoryDescriptor<DefaultHistoryTransaction>())) ?? []
        guard let last = history.last else {
            #expect(observer.historyTokens.isEmpty)
            return
        }
        #expect(observer.eventCounter == 0)
        #expect(observer.historyTokens[last.storeIdentifier] as? DefaultHistoryToken == last.token)
        // An app reads the transactions after the token it kept.
        let kept = try #require(observer.historyTokens[last.storeIdentifier] as? DefaultHistoryToken)
        context.insert(Housemate(name: "Ana"))
        try context.save()
        #expect(observer.eventCounter == 1)
        let newer = try context.fetchHistory(
            HistoryDescriptor<DefaultHistoryTransaction>(predicate: #Predicate { $0.token > kept }))
        #expect(newer.count == 1)
        #expect(observer.historyTokens[last.storeIdentifier] as? DefaultHistoryToken == newer.last?.token)
    }

    @Test(arguments: stores)
    func startingFromKeptTokensCountsWhatCameAfterThem(store: String) throws {
        let container = try container(store)
        let context = ModelContext(container)
        context.insert(Errand(title: "a", room: "r", minutes: 1))
        try context.save()
        let first = try HistoryObserver(modelContainer: container)
        let kept = first.historyTokens
        context.insert(Housemate(name: "Ana"))
        try context.save()
        let resumed = try HistoryObserver(historyTokens: kept, modelContainer: container)
        let errandsOnly = try HistoryObserver(
            historyTokens: kept, observedModels: [Errand.self], modelContainer: container)
        if kept.isEmpty {
            #expect(resumed.eventCounter == 0, "a store without history has nothing to resume")
        } else {
            #expect(resumed.eventCounter == 1, "a relevant transaction after the kept tokens")
            #expect(errandsOnly.eventCounter == 0)
        }
    }

    @Test(arguments: stores)
    func readersInObservationTrackingHearOfRelevantSaves(store: String) async throws {
        let container = try container(store)
        let observer = try HistoryObserver(observedModels: [Housemate.self], modelContainer: container)
        let heard = PosixMutex(0)
        withObservationTracking {
            _ = observer.eventCounter
        } onChange: {
            heard.withLock { $0 += 1 }
        }
        let context = ModelContext(container)
        context.insert(Errand(title: "a", room: "r", minutes: 1))
        try context.save()
        #expect(heard.withLock { $0 } == 0)
        // A @ModelActor's save counts as any context's.
        try await HousemateWriter(modelContainer: container).add("Ana")
        #expect(heard.withLock { $0 } == 1)
        #expect(observer.eventCounter == 1)
    }
}
