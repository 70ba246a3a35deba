import Foundation
import Observation

/// Counts the saves of a container's stores that concern the models and authors it is
/// scoped to, and keeps its place in each store's history.
///
/// Each relevant save adds one to ``eventCounter``, which is `Observable`: code that reads
/// it in `withObservationTracking` is told of each, and can then read the new transactions
/// with ``ModelContext/fetchHistory(_:)`` after the tokens it kept.
///
/// A save is relevant when it inserted, updated or deleted a model of one of
/// ``observedModels`` (or of a subclass of one), or any model when the list is empty; and
/// when it was saved by a context whose ``ModelContext/author`` is in `authors`, or by any
/// context when the set is empty.
///
/// Where Stowage differs from SwiftData, or says what SwiftData leaves unsaid: SwiftData
/// hears of saves through its stores' remote-change notifications, including other
/// processes'. A Stowage store is open in one process at a time, so the observer hears of
/// the saves of its container's contexts (actors included), on the thread that saved,
/// before that save returns. ``historyTokens`` then stand at the last transaction of each
/// store that saved. Models related to the observed ones are not followed unless they are
/// listed.
public final class HistoryObserver: Observable {
    /// The container whose stores the observer follows.
    public let modelContainer: ModelContainer
    /// The model types whose changes count; empty for all.
    public let observedModels: [any PersistentModel.Type]

    private let authors: Set<String>
    /// The entities whose changes count: the observed models' and their subclasses'; `nil`
    /// for all.
    private let entityNames: Set<String>?
    private let registrar = ObservationRegistrar()
    private let state: LockedState<State>
    private let queue = SaveEventQueue()
    private var link: Link?

    private struct State {
        var eventCounter = 0
        var tokens: [String: any HistoryToken] = [:]
    }

    private final class Link: SaveObserving, @unchecked Sendable {
        // `@unchecked`: the observer is reached only through `receive`, which takes its
        // own lock.
        weak var observer: HistoryObserver?
        init(_ observer: HistoryObserver) { self.observer = observer }
        func containerDidSave(_ event: SaveEvent) { observer?.receive(event) }
    }

    /// Creates an observer of `modelContainer`'s saves, scoped to `observedModels` and
    /// `authors` (each empty for all).
    ///
    /// - Parameters:
    ///   - historyTokens: where to start in each store's history, by store identifier.
    ///     `nil` starts at the current end of every store's history, so that only later
    ///     saves count. Given tokens, the transactions already saved after them are read at
    ///     once: if any is relevant, ``eventCounter`` starts at 1.
    ///   - observedModels: the models whose saves count, with their subclasses; empty for
    ///     every model.
    ///   - authors: the ``ModelContext/author``s whose saves count; empty for every author.
    ///   - modelContainer: the container whose saves are observed.
    ///   - isolation: accepted for SwiftData's signature; the observer is updated on the
    ///     thread that saved, whatever actor made it.
    /// - Throws: ``SwiftDataError`` `.unknownModelType` when an observed model is not in
    ///   the container's schema, or what reading a store's history throws.
    public convenience init(
        historyTokens: [String: any HistoryToken]? = nil, observedModels: [any PersistentModel.Type] = [],
        authors: Set<String> = [], modelContainer: ModelContainer, isolation: isolated (any Actor)? = #isolation
    ) throws {
        try self.init(
            tokens: historyTokens, observedModels: observedModels, authors: authors, container: modelContainer)
    }

    private init(
        tokens: [String: any HistoryToken]?, observedModels: [any PersistentModel.Type], authors: Set<String>,
        container: ModelContainer
    ) throws {
        self.modelContainer = container
        self.observedModels = observedModels
        self.authors = authors
        if observedModels.isEmpty {
            entityNames = nil
        } else {
            var names = Set<String>()
            for type in observedModels {
                guard let entity = container.schema.entity(forModelType: type) else {
                    throw SwiftDataError(.unknownModelType, "\(type) is not in the container's schema")
                }
                for member in container.schema.family(of: entity) { names.insert(member.name) }
            }
            entityNames = names
        }
        var start = State()
        for store in container.stores {
            if let given = tokens?[store.identifier] {
                start.tokens[store.identifier] = given
                if try Self.hasRelevantTransactions(
                    in: store, after: given, entityNames: entityNames, authors: authors)
                {
                    start.eventCounter = 1
                }
            }
            if let last = try Self.lastToken(of: store) { start.tokens[store.identifier] = last }
        }
        self.state = LockedState(start)
        let link = Link(self)
        self.link = link
        container.core.observers.add(link)
    }

    deinit {
        if let link { modelContainer.core.observers.remove(ObjectIdentifier(link)) }
    }

    /// How many relevant saves the observer has seen.
    public var eventCounter: Int {
        registrar.access(self, keyPath: \.eventCounter)
        return state.withLock { $0.eventCounter }
    }

    /// The observer's place in each store's history, by store identifier: the token of the
    /// last transaction it has seen (relevant or not). A store with no transactions yet has
    /// none.
    public var historyTokens: [String: any HistoryToken] {
        registrar.access(self, keyPath: \.eventCounter)
        return state.withLock { $0.tokens }
    }

    private func receive(_ event: SaveEvent) {
        queue.post(event) { events in apply(events) }
    }

    private func apply(_ events: [SaveEvent]) {
        let relevant = events.filter(isRelevant).count
        // Every store the saves wrote to moves to its last transaction.
        var stores = Set<String>()
        for event in events {
            for id in event.all { if let store = id.storeIdentifier { stores.insert(store) } }
        }
        var tokens: [String: any HistoryToken] = [:]
        for store in modelContainer.stores where stores.contains(store.identifier) {
            if let last = try? Self.lastToken(of: store) { tokens[store.identifier] = last }
        }
        guard relevant > 0 else {
            state.withLock { $0.tokens.merge(tokens) { _, new in new } }
            return
        }
        registrar.willSet(self, keyPath: \.eventCounter)
        state.withLock { state in
            state.eventCounter += relevant
            state.tokens.merge(tokens) { _, new in new }
        }
        registrar.didSet(self, keyPath: \.eventCounter)
    }

    private func isRelevant(_ event: SaveEvent) -> Bool {
        guard authors.isEmpty || event.author.map(authors.contains) == true else { return false }
        guard let entityNames else { return true }
        return event.resetsAll || event.all.contains { entityNames.contains($0.entityName) }
    }

    /// The token of the last transaction in `store`'s history, or `nil` when it keeps none.
    private static func lastToken(of store: any DataStore<DefaultSnapshot>) throws -> (any HistoryToken)? {
        if let reporting = store as? any HistoryEndReporting {
            return reporting.lastHistoryTransaction().map {
                DefaultHistoryToken(storeIdentifier: store.identifier, transaction: $0)
            }
        }
        if let tableStore = store as? any SnapshotTableStore {
            let last = tableStore.withTable { $0.history == nil ? 0 : $0.nextHistoryTransaction - 1 }
            return last > 0 ? DefaultHistoryToken(storeIdentifier: store.identifier, transaction: last) : nil
        }
        guard let provider = store as? any HistoryProviding else { return nil }
        return try lastProvidedToken(provider)
    }

    private static func lastProvidedToken<P: HistoryProviding>(_ provider: P) throws -> (any HistoryToken)? {
        try provider.fetchHistory(HistoryDescriptor()).last?.token as? any HistoryToken
    }

    /// Whether `store` has, after `token`, a transaction of the entities and authors given.
    private static func hasRelevantTransactions(
        in store: any DataStore<DefaultSnapshot>, after token: any HistoryToken, entityNames: Set<String>?,
        authors: Set<String>
    ) throws -> Bool {
        guard let provider = store as? any HistoryProviding else { return false }
        return try relevant(provider, after: token, entityNames: entityNames, authors: authors)
    }

    private static func relevant<P: HistoryProviding>(
        _ provider: P, after token: any HistoryToken, entityNames: Set<String>?, authors: Set<String>
    ) throws -> Bool {
        for transaction in try provider.fetchHistory(HistoryDescriptor()) {
            guard let mine = transaction.token as? DefaultHistoryToken, let given = token as? DefaultHistoryToken,
                mine.storeIdentifier == given.storeIdentifier, given < mine
            else { continue }
            if !authors.isEmpty, !(transaction.author.map(authors.contains) ?? false) { continue }
            if let entityNames,
                !transaction.changes.contains(where: { entityNames.contains($0.changedPersistentIdentifier.entityName) }
                )
            {
                continue
            }
            return true
        }
        return false
    }
}

/// A store that can say where its history ends without reading it.
protocol HistoryEndReporting {
    /// The identifier of the last transaction saved, or `nil` before the first.
    func lastHistoryTransaction() -> Int64?
}

extension LogStore: HistoryEndReporting {
    func lastHistoryTransaction() -> Int64? {
        let next = writer.withLock { $0.nextTransactionID }
        return next > 1 ? Int64(next - 1) : nil
    }
}
