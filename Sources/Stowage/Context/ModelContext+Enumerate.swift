import Foundation
import Synchronization

extension ModelContext {
    /// The models that match a descriptor as a lazy collection that loads them a batch at
    /// a time. Only the identifiers are fetched up front.
    /// - Throws: ``SwiftDataError/includePendingChangesWithBatchSize`` when the descriptor
    ///   includes pending changes and the context has some, as SwiftData does; and the
    ///   errors of ``fetch(_:)``.
    public func fetch<T: PersistentModel>(_ descriptor: FetchDescriptor<T>, batchSize: Int) throws
        -> FetchResultsCollection<T>
    {
        if descriptor.includePendingChanges && hasChanges {
            throw SwiftDataError(
                .includePendingChangesWithBatchSize,
                "fetch(_:batchSize:) cannot include pending changes; save first or set includePendingChanges = false")
        }
        var plain = descriptor
        plain.includePendingChanges = false
        let ids = try fetchIdentifiers(plain)
        return FetchResultsCollection(context: self, identifiers: ids, batchSize: max(1, batchSize))
    }

    /// Calls `block` for every model that matches the descriptor, loading `batchSize`
    /// models at a time and releasing each batch before the next, so memory stays flat
    /// however many models match.
    ///
    /// Models the context already had stay registered, and so does a loaded model while
    /// the block keeps it; the others are freed as the block lets them go. With `allowEscapingMutations`
    /// `false`, a block that leaves unsaved changes on a model it was handed makes the
    /// enumeration throw ``SwiftDataError/escapingMutationsInEnumeration``; with `true`,
    /// changed models stay registered until saved.
    ///
    /// Stowage's own: the models one batch loads share one observation registrar (see
    /// `ModelBackingData._firstObservation()`). An observer of one of them is told of every
    /// change to what it read, and may also be told of a change to the same property of
    /// another model of its batch. SwiftData gives each model its own registrar.
    ///
    /// Also Stowage's own: a model the block has let go, that nothing holds any more (no
    /// strong, weak or unowned reference, no pending change), may come back to the block
    /// holding a later record, instead of being freed and a new model made for that record.
    /// Only for a `@Model` class that is `final`, names no superclass, has no `deinit`, and
    /// persists every stored property (`PersistentModel._stowageRecyclable`), so that the
    /// backing data is all a model's state. No code can reach the old model to see the
    /// difference; only `ObjectIdentifier`s repeat, as they can once any object is freed.
    /// Compare ``PersistentModel/persistentModelID``s instead.
    /// - Throws: the errors of ``fetch(_:)``, and whatever `block` throws.
    public func enumerate<T: PersistentModel>(
        _ descriptor: FetchDescriptor<T>, batchSize: Int = 5000, allowEscapingMutations: Bool = false,
        block: (T) throws -> Void
    ) throws {
        var plain = descriptor
        plain.includePendingChanges = false
        let ids = try fetchIdentifiers(plain)
        let size = max(1, batchSize)
        // A model this enumeration made and its block let go, to hold the next record that
        // needs a model (see `isSpare(_:)`), when the model's class allows it.
        let recycles = T._stowageRecyclable
        var spare: T?
        var start = 0
        while start < ids.count {
            let batch = Array(ids[start..<min(ids.count, start + size)])
            start += size
            // Models this context already has, and the snapshots of the others, in order.
            let existing = registered.isEmpty ? Array(repeating: nil, count: batch.count) : batch.map { registered[$0] }
            var missing: [PersistentIdentifier] = []
            for (id, model) in zip(batch, existing) where model == nil { missing.append(id) }
            let snapshots = try loadSnapshotsInOrder(missing)
            var next = 0
            var loaded: [PersistentIdentifier] = []
            loaded.reserveCapacity(missing.count)
            // The registrations as this loop left them. Once they have changed in between,
            // the block registered models itself, and each model is looked up before it
            // is loaded for the rest of the batch. Models going away do not count.
            var known = registered.registrations
            var lookUp = false
            let changesBefore = changeCount
            // The models this batch makes share one observation registrar while the block
            // has them (`ModelBackingData._firstObservation()`); a nested enumeration's
            // batch has its own, and this one's is back when it returns.
            let outer = (link.handsOutBatch, link.batchObservation)
            (link.handsOutBatch, link.batchObservation) = (true, nil)
            defer { (link.handsOutBatch, link.batchObservation) = outer }
            // A model set aside in the last batch drops that batch's registrar.
            if let kept = spare, !kept._stowageReleaseForRefill(keeping: nil) { spare = nil }
            for (id, found) in zip(batch, existing) {
                let model: any PersistentModel
                var made = false
                if let found {
                    model = found
                } else {
                    defer { next += 1 }
                    if registered.registrations != known { lookUp = true }
                    if lookUp, let registeredMeanwhile = registered[id] {
                        // The block fetched it already: keep that model, and keep it registered.
                        model = registeredMeanwhile
                    } else {
                        guard let snapshot = snapshots[next] else { continue }
                        if let reused = spare {
                            spare = nil
                            model = try refill(reused, with: snapshot, id: id)
                        } else {
                            model = try materialize(snapshot, knownUnregistered: true, provisionally: true)
                        }
                        made = recycles
                        known = registered.registrations
                        loaded.append(id)
                    }
                }
                // From here the loop's only reference to the model, so that `isSpare(_:)` can
                // tell whether the block kept it.
                var handed = (consume model) as? T
                if let handed { try block(handed) }
                if made, spare == nil, isSpare(&handed) { spare = handed }
            }
            // A loaded model leaves the context when the block lets it go (the identity
            // map does not keep it), so only the ones the block changed need a look.
            guard !allowEscapingMutations, changeCount != changesBefore else { continue }
            let changed = Set(changedOrder).union(deletedOrder)
            if let id = loaded.first(where: { changed.contains($0) && hasPendingChanges($0) }) {
                throw SwiftDataError(
                    .escapingMutationsInEnumeration,
                    "the enumeration block changed \(id); save inside the block, or pass allowEscapingMutations: true")
            }
        }
    }
}

extension ModelContext {
    /// Whether the model in `handed`, which `enumerate` made and handed to its block, may
    /// hold the next record instead of a new model: nothing holds it but `handed` (no other
    /// strong reference, no weak one, and no unowned one but its entry in the registry,
    /// which is still the provisional one), its class is exactly `T`, and nothing holds its
    /// backing data but the model, or keeps related models prefetched for it. A model the
    /// app or the context still has (kept by the block, changed, deleted, observed by a
    /// closure that holds it) is never refilled.
    ///
    /// Stowage's own. Making and freeing a model and its backing data for every row
    /// dominated enumeration (see `Benchmarks/RESULTS.md`, "Measurements behind the code").
    /// A refilled model is a new model as far as anyone can tell: nothing can reach the old
    /// one, whose memory `malloc` could as well have handed out again.
    func isSpare<T: PersistentModel>(_ handed: inout T?) -> Bool {
        guard isKnownUniquelyReferenced(&handed), let model = handed, type(of: model) == T.self,
            _getWeakRetainCount(model) == 1, _getUnownedRetainCount(model) == 2
        else { return false }
        guard backingDataIsSpare(model.persistentBackingData) else { return false }
        // Last, with no reference to the backing data left here. The model keeps its
        // registrar only if it is this batch's: the next record may be read through it
        // without asking again (a new batch drops it, see `enumerate`).
        guard model._stowageReleaseForRefill(keeping: link.batchObservation) else { return false }
        // Nothing may find it until it is refilled: a look-up of its record by a later
        // row's block makes a new model, as it would once the model was freed.
        registered.removeProvisional()
        return true
    }

    /// Whether `data`, the backing data of a model `isSpare(_:)` looks at, is still
    /// registered here as `enumerate` made it, and no weak or unowned reference, or
    /// prefetched related model, hangs on it.
    private func backingDataIsSpare(_ data: ModelBackingData) -> Bool {
        _getWeakRetainCount(data) == 1 && _getUnownedRetainCount(data) == 1 && data.isRegistered(in: self)
            && registered.isProvisional(ObjectIdentifier(data))
            && (prefetchedByOwner.isEmpty || prefetchedByOwner[ObjectIdentifier(data)] == nil)
    }

    /// `spare` (see ``isSpare(_:)``), registered again, holding `snapshot`'s record, whose
    /// identifier `id` has no model here; or, when it cannot, a new model for the record.
    func refill<T: PersistentModel>(_ spare: T, with snapshot: DefaultSnapshot, id: PersistentIdentifier) throws
        -> any PersistentModel
    {
        let data = spare.persistentBackingData
        guard data.canRefill(with: snapshot) else {
            return try materialize(snapshot, knownUnregistered: true, provisionally: true)
        }
        data.refill(with: snapshot)
        registered.registerProvisionally(spare, data: data, for: id)
        return spare
    }
}

/// The lazy result of ``ModelContext/fetch(_:batchSize:)`` and of a ``ResultsObserver``:
/// identifiers up front, models loaded a batch at a time as they are read.
public struct FetchResultsCollection<Element: PersistentModel>: RandomAccessCollection {
    let context: ModelContext
    let storage: Storage
    let batchSize: Int
    private let cache = BatchCache()

    /// The identifiers, as a fetch returned them or as an observer keeps them in order.
    enum Storage {
        case identifiers([PersistentIdentifier])
        case entries(OrderedEntries)
    }

    init(context: ModelContext, identifiers: [PersistentIdentifier], batchSize: Int) {
        self.context = context
        self.storage = .identifiers(identifiers)
        self.batchSize = batchSize
    }

    /// A collection over an observer's entries. `previous` is the collection it replaces:
    /// its loaded models stay alive until this one loads its first batch, so that models
    /// both show are found registered in the context rather than made again (a save that
    /// moves one row leaves almost every model of a batch where it was).
    init(context: ModelContext, entries: OrderedEntries, batchSize: Int, previous: FetchResultsCollection? = nil) {
        self.context = context
        self.storage = .entries(entries)
        self.batchSize = batchSize
        if let old = previous?.cache {
            let kept: BatchCache? = old.hasLoaded.load(ordering: .acquiring) ? old : old.handOff.withLock { $0 }
            cache.handOff.withLock { $0 = kept }
        }
    }

    /// The position of the first model: 0.
    public var startIndex: Int { 0 }
    /// The number of models the fetch matched.
    public var endIndex: Int {
        switch storage {
        case .identifiers(let ids): ids.count
        case .entries(let entries): entries.count
        }
    }

    /// The identifier of the model at `position`.
    func identifier(at position: Int) -> PersistentIdentifier {
        switch storage {
        case .identifiers(let ids): ids[position]
        case .entries(let entries): entries[position].id
        }
    }

    private func identifiers(in range: Range<Int>) -> [PersistentIdentifier] {
        switch storage {
        case .identifiers(let ids): Array(ids[range])
        case .entries(let entries): entries.identifiers(in: range)
        }
    }

    /// The model at `position`, loading its batch if needed.
    /// - Complexity: O(1) within a loaded batch; O(*batchSize*) to load one.
    public subscript(position: Int) -> Element {
        let batch = position / batchSize
        if cache.batch != batch {
            let lower = batch * batchSize
            let ids = identifiers(in: lower..<Swift.min(endIndex, lower + batchSize))
            let snapshots = (try? context.loadSnapshots(ids.filter { context.lookUp($0) == nil })) ?? [:]
            cache.models = ids.map { id in
                context.lookUp(id) ?? snapshots[id].flatMap { try? context.materialize($0) }
            }
            cache.batch = batch
            if !cache.hasLoaded.load(ordering: .relaxed) {
                cache.hasLoaded.store(true, ordering: .releasing)
                // The models of the collection this one replaced may go now.
                let released = cache.handOff.withLock { kept in
                    defer { kept = nil }
                    return kept
                }
                withExtendedLifetime(released) {}
            }
        }
        let offset = position - batch * batchSize
        if let model = cache.models[offset] as? Element { return model }
        // The record was deleted after the identifiers were fetched.
        return context.model(for: identifier(at: position)) as? Element
            ?? Element(backingData: ModelBackingData(for: Element.self))
    }

    /// The loaded batch, read and written by the thread that reads the collection.
    final class BatchCache: @unchecked Sendable {
        // `@unchecked`: `batch` and `models` are touched only by the reading thread; the
        // saving thread that makes an observer's next collection reads `hasLoaded` and
        // `handOff`, which are atomic and locked.
        var batch = -1
        var models: [(any PersistentModel)?] = []
        /// Whether a batch has been loaded.
        let hasLoaded = Atomic<Bool>(false)
        /// The cache of the collection this one replaced, kept until this one loads.
        let handOff = PosixMutex<BatchCache?>(nil)
    }
}
