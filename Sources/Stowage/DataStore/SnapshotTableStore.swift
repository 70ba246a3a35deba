/// A store that keeps its records in a ``SnapshotTable`` behind a lock, as all of
/// Stowage's stores do: it gets every read of ``DataStore`` (fetch, count, identifiers,
/// explain, snapshots by identifier) from the table, and writes its own saves.
///
/// Stowage's own addition: SwiftData has no such layer.
public protocol SnapshotTableStore: DataStore, Sendable where Snapshot == DefaultSnapshot {
    /// Runs `body` on the table under the store's lock: for reading only.
    func withTable<R>(_ body: (SnapshotTable) throws -> R) rethrows -> R
}

extension SnapshotTableStore {
    /// The snapshots the request's descriptor selects, from the table, in its order and
    /// window.
    public func fetch<T: PersistentModel>(_ request: DataStoreFetchRequest<T>) throws -> DataStoreFetchResult<
        T, DefaultSnapshot
    > {
        let snapshots = try withTable { try $0.fetch(request.query) }
        return DataStoreFetchResult(descriptor: request.descriptor, fetchedSnapshots: snapshots)
    }

    /// The number of records the request's descriptor selects, counted from indexes where
    /// the plan allows.
    public func fetchCount<T: PersistentModel>(_ request: DataStoreFetchRequest<T>) throws -> Int {
        try withTable { try $0.count(request.query) }
    }

    /// The identifiers of the records the request's descriptor selects, in its order.
    public func fetchIdentifiers<T: PersistentModel>(_ request: DataStoreFetchRequest<T>) throws
        -> [PersistentIdentifier]
    {
        try withTable { try $0.identifiers(request.query) }
    }

    /// The plan the table would run for the request, as one line (see
    /// ``ModelContext/explain(_:)``).
    public func explain<T: PersistentModel>(_ request: DataStoreFetchRequest<T>) throws -> String {
        withTable { table in
            request.query.spansSubentities
                ? table.familyPlanDescription(request.query) : table.plan(request.query).description
        }
    }

    /// The stored snapshots of `identifiers`; an identifier with no record is left out.
    public func snapshots(for identifiers: [PersistentIdentifier]) throws -> [PersistentIdentifier: DefaultSnapshot] {
        try withTable { try $0.snapshots(for: identifiers) }
    }

    /// Every stored record of an entity, in primary-key order.
    public func allSnapshots(of entityName: String) throws -> [DefaultSnapshot] {
        try withTable { try $0.allSnapshots(of: entityName) }
    }

    /// The number of stored records.
    public var recordCount: Int { withTable { $0.count } }
}

/// A store that answers a `FetchQuery` whose `entities` span an entity's
/// subentities itself, in one read (as a `SnapshotTableStore` does): `fetch`, `fetchCount`
/// and `fetchIdentifiers` return the records of every entity the query reads, each as its
/// own entity's, in the query's order and window. A context sends such queries to any
/// other store one entity at a time and merges the answers in memory.
package protocol AnswersEntityFamilies {}
