import Foundation

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
    /// ``ModelBackingData/_firstObservation()``). An observer of one of them is told of every
    /// change to what it read, and may also be told of a change to the same property of
    /// another model of its batch. SwiftData gives each model its own registrar.
    /// - Throws: the errors of ``fetch(_:)``, and whatever `block` throws.
    public func enumerate<T: PersistentModel>(
        _ descriptor: FetchDescriptor<T>, batchSize: Int = 5000, allowEscapingMutations: Bool = false,
        block: (T) throws -> Void
    ) throws {
        var plain = descriptor
        plain.includePendingChanges = false
        let ids = try fetchIdentifiers(plain)
        let size = max(1, batchSize)
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
            for (id, found) in zip(batch, existing) {
                let model: any PersistentModel
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
                        model = try materialize(snapshot, knownUnregistered: true, provisionally: true)
                        known = registered.registrations
                        loaded.append(id)
                    }
                }
                if let typed = model as? T { try block(typed) }
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

/// The lazy result of ``ModelContext/fetch(_:batchSize:)``: identifiers up front, models
/// loaded a batch at a time as they are read.
public struct FetchResultsCollection<Element: PersistentModel>: RandomAccessCollection {
    let context: ModelContext
    let identifiers: [PersistentIdentifier]
    let batchSize: Int
    private let cache = BatchCache()

    init(context: ModelContext, identifiers: [PersistentIdentifier], batchSize: Int) {
        self.context = context
        self.identifiers = identifiers
        self.batchSize = batchSize
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { identifiers.count }

    /// The model at `position`, loading its batch if needed.
    /// - Complexity: O(1) within a loaded batch; O(*batchSize*) to load one.
    public subscript(position: Int) -> Element {
        let batch = position / batchSize
        if cache.batch != batch {
            let lower = batch * batchSize
            let ids = Array(identifiers[lower..<Swift.min(identifiers.count, lower + batchSize)])
            let snapshots = (try? context.loadSnapshots(ids.filter { context.lookUp($0) == nil })) ?? [:]
            cache.models = ids.map { id in
                context.lookUp(id) ?? snapshots[id].flatMap { try? context.materialize($0) }
            }
            cache.batch = batch
        }
        let offset = position - batch * batchSize
        if let model = cache.models[offset] as? Element { return model }
        // The record was deleted after the identifiers were fetched.
        return context.model(for: identifiers[position]) as? Element
            ?? Element(backingData: ModelBackingData(for: Element.self))
    }

    final class BatchCache {
        var batch = -1
        var models: [(any PersistentModel)?] = []
    }
}
