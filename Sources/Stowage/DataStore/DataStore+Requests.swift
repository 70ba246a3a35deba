import Foundation

/// A fetch, as a context hands it to a store.
public struct DataStoreFetchRequest<T: PersistentModel>: @unchecked Sendable {
    // @unchecked Sendable: the descriptor is a value whose predicate and sort descriptors
    // are Sendable; the compiled query is immutable.

    /// The descriptor the user wrote.
    public var descriptor: FetchDescriptor<T>
    /// The context making the request.
    public var editingState: EditingState
    /// The descriptor compiled against the store's schema, ready to evaluate.
    public let query: FetchQuery

    /// Compiles `descriptor` for `schema`.
    /// - Throws: ``SwiftDataError`` `.unsupportedPredicate`, `.unsupportedSortDescriptor`
    ///   or `.unknownModelType`.
    public init(descriptor: FetchDescriptor<T>, editingState: EditingState, schema: Schema) throws {
        self.descriptor = descriptor
        self.editingState = editingState
        self.query = try FetchQuery(descriptor, schema: schema)
    }

    @usableFromInline
    init(descriptor: FetchDescriptor<T>, editingState: EditingState, query: FetchQuery) {
        self.descriptor = descriptor
        self.editingState = editingState
        self.query = query
    }
}

/// A fetch's answer.
public struct DataStoreFetchResult<ModelType: PersistentModel, SnapshotType: DataStoreSnapshot>: Sendable {
    /// The descriptor that was fetched.
    public let descriptor: FetchDescriptor<ModelType>
    /// The matching snapshots.
    public let fetchedSnapshots: [SnapshotType]
    /// Snapshots of related models the store chose to send along (prefetching).
    public let relatedSnapshots: [PersistentIdentifier: SnapshotType]

    /// SwiftData's initializer; `relatedSnapshots` may be left out (Stowage's default).
    public init(
        descriptor: FetchDescriptor<ModelType>, fetchedSnapshots: [SnapshotType],
        relatedSnapshots: [PersistentIdentifier: SnapshotType] = [:]
    ) {
        self.descriptor = descriptor
        self.fetchedSnapshots = fetchedSnapshots
        self.relatedSnapshots = relatedSnapshots
    }
}

/// What to do when an insert collides with a unique constraint.
///
/// SwiftData only upserts. Stowage adds `.fail`, which users have asked SwiftData for.
public enum UniquenessPolicy: Sendable, Hashable {
    /// Update the existing record with the inserted values (SwiftData's behaviour).
    case upsert
    /// Throw ``SwiftDataError/uniqueConstraintViolation`` and save nothing.
    case fail
}

/// A save, as a context hands it to a store: every change since the last save.
public struct DataStoreSaveChangesRequest<SnapshotType: DataStoreSnapshot>: Sendable {
    /// The context making the request.
    public let editingState: EditingState
    /// New models, with temporary identifiers.
    public let inserted: [SnapshotType]
    /// Changed models, with their full new values.
    public let updated: [SnapshotType]
    /// Deleted models, with their last values.
    public let deleted: [SnapshotType]
    /// What to do when an insert collides with a unique constraint. Stowage's addition.
    public let uniquenessPolicy: UniquenessPolicy
    /// Queries whose stored records the save also deletes, from
    /// ``ModelContext/delete(model:where:includeSubclasses:)``: Stowage's own stores resolve
    /// them inside the save, against the records as they were before it, so that the
    /// deletes are part of the one atomic commit. Only a ``SnapshotTable`` and a
    /// ``DataStoreSavingBatchDeletes`` read them; the context resolves them itself for any
    /// other store.
    package var batchDeletes: [FetchQuery] = []

    /// A save of `inserted`, `updated` and `deleted` from the context `editingState`
    /// describes, with `uniquenessPolicy` for collisions on unique values.
    public init(
        editingState: EditingState, inserted: [SnapshotType], updated: [SnapshotType],
        deleted: [SnapshotType], uniquenessPolicy: UniquenessPolicy = .upsert
    ) {
        self.editingState = editingState
        self.inserted = inserted
        self.updated = updated
        self.deleted = deleted
        self.uniquenessPolicy = uniquenessPolicy
    }
}

extension DataStoreSaveChangesRequest where SnapshotType == DefaultSnapshot {
    /// A save that changes nothing but deletes the records `request` matches.
    static func batchDelete<T>(_ request: DataStoreBatchDeleteRequest<T>) -> Self {
        var save = Self(editingState: request.editingState, inserted: [], updated: [], deleted: [])
        save.batchDeletes = [request.query]
        return save
    }
}

/// A save's answer.
public final class DataStoreSaveChangesResult<T: DataStoreSnapshot>: Sendable {
    /// The store that saved.
    public let storeIdentifier: String
    /// Temporary identifiers and the permanent ones that replace them.
    ///
    /// From a result made with ``init(for:request:insertedIdentifiers:snapshotsToReregister:deletedIdentifiers:)``
    /// the dictionary is built when read.
    public var remappedIdentifiers: [PersistentIdentifier: PersistentIdentifier] {
        if let remapped { return remapped }
        return Dictionary(
            zip(inserted, insertedIdentifiers ?? []).lazy.map { ($0.persistentIdentifier, $1) },
            uniquingKeysWith: { _, later in later })
    }
    /// The permanent identifier of each inserted snapshot, in the order of the request's
    /// `inserted`, when the store gave them so. Stowage's addition: a context that saves a
    /// million inserts reads them by position instead of hashing each identifier twice.
    public let insertedIdentifiers: [PersistentIdentifier]?
    /// Records whose stored values differ from what the context sent (upserts), keyed by
    /// permanent identifier. The context refreshes its models from these.
    public let snapshotsToReregister: [PersistentIdentifier: T]
    /// Records the store deleted beyond the request's own deletes (a rule it applied, a
    /// record it expired): the context forgets their models.
    public let deletedIdentifiers: [PersistentIdentifier]
    private let remapped: [PersistentIdentifier: PersistentIdentifier]?
    /// The request's inserted snapshots, whose identifiers `insertedIdentifiers` replace.
    private let inserted: [T]

    /// SwiftData's initializer.
    public init(
        for storeIdentifier: String, remappedIdentifiers: [PersistentIdentifier: PersistentIdentifier] = [:],
        snapshotsToReregister: [PersistentIdentifier: T] = [:], deletedIdentifiers: [PersistentIdentifier] = []
    ) {
        self.storeIdentifier = storeIdentifier
        self.remapped = remappedIdentifiers
        self.insertedIdentifiers = nil
        self.inserted = []
        self.snapshotsToReregister = snapshotsToReregister
        self.deletedIdentifiers = deletedIdentifiers
    }

    /// A result that gives the permanent identifier of each of `request`'s inserted
    /// snapshots by position: `insertedIdentifiers[i]` replaces `request.inserted[i]`'s,
    /// so it must hold one identifier for each (a context refuses a result that does not).
    /// Stowage's addition.
    public init(
        for storeIdentifier: String, request: DataStoreSaveChangesRequest<T>,
        insertedIdentifiers: [PersistentIdentifier],
        snapshotsToReregister: [PersistentIdentifier: T] = [:], deletedIdentifiers: [PersistentIdentifier] = []
    ) {
        self.storeIdentifier = storeIdentifier
        self.remapped = nil
        self.insertedIdentifiers = insertedIdentifiers
        self.inserted = request.inserted
        self.snapshotsToReregister = snapshotsToReregister
        self.deletedIdentifiers = deletedIdentifiers
    }
}

/// A batch delete: every record of `T` that matches the predicate, as a context hands it
/// to a ``DataStoreBatching`` store.
public struct DataStoreBatchDeleteRequest<T: PersistentModel>: @unchecked Sendable {
    // @unchecked Sendable: see DataStoreFetchRequest.
    /// The context making the request.
    public let editingState: EditingState
    /// Whether records of `T`'s subclasses go too.
    public let includeSubclasses: Bool
    /// The records to delete; `nil` deletes every record of `T`.
    public let predicate: Predicate<T>?
    /// The predicate compiled against the store's schema, ready to evaluate. Stowage's own.
    public let query: FetchQuery
}
