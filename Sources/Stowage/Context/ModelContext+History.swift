import Foundation

extension ModelContext {
    /// The transactions of the container's stores that `descriptor` selects: each store's
    /// in the order it saved them (stores in the container's order), then sorted by the
    /// descriptor's `sortBy` and cut to its `fetchLimit`. The changes of a transaction
    /// name their models by ``PersistentIdentifier``; `author` is the saving context's
    /// ``author``.
    ///
    /// Stowage's stores keep every save's transaction until ``deleteHistory(_:)`` removes
    /// it, through reopening and (the log store) compaction.
    /// - Throws: what a store's history read throws, or what evaluating the predicate throws.
    public func fetchHistory<T: HistoryTransaction>(_ descriptor: HistoryDescriptor<T>) throws -> [T] {
        var unlimited = descriptor
        unlimited.fetchLimit = nil
        var all: [T] = []
        for store in container.stores {
            guard let provider = store as? any HistoryProviding else { continue }
            all += try Self.history(of: provider, unlimited)
        }
        return try HistoryReading.select(
            all,
            HistoryDescriptor(predicate: nil, sortBy: descriptor.sortBy).limited(
                to: descriptor.fetchLimit))
    }

    /// Removes the transactions `descriptor` selects from every store's history. Their
    /// records stay as they are: only the history of the changes goes.
    public func deleteHistory<T: HistoryTransaction>(_ descriptor: HistoryDescriptor<T>) throws {
        for store in container.stores {
            guard let provider = store as? any HistoryProviding else { continue }
            try Self.deleteHistory(of: provider, descriptor)
        }
    }

    private static func history<P: HistoryProviding, T>(of provider: P, _ descriptor: HistoryDescriptor<T>) throws
        -> [T]
    {
        guard let typed = descriptor as? HistoryDescriptor<P.HistoryType> else { return [] }
        return try provider.fetchHistory(typed) as? [T] ?? []
    }

    private static func deleteHistory<P: HistoryProviding, T>(of provider: P, _ descriptor: HistoryDescriptor<T>)
        throws
    {
        guard let typed = descriptor as? HistoryDescriptor<P.HistoryType> else { return }
        try provider.deleteHistory(typed)
    }
}

extension HistoryDescriptor {
    /// The descriptor with `fetchLimit` set.
    func limited(to limit: Int?) -> Self {
        var copy = self
        copy.fetchLimit = limit
        return copy
    }
}
