import Foundation

/// A place where snapshots of models are kept: in memory, in a JSON document, or in a log.
///
/// A ``ModelContext`` talks to its store only through this protocol, and only in
/// snapshots. Every store in Stowage runs the same conformance suite
/// (`StowageTestSupport.StoreConformance`), and a custom store should too.
///
/// ## The contract
/// A conforming store must guarantee:
/// - **Atomic saves.** ``save(_:)`` applies all of a request's inserts, updates and
///   deletes, or none of them. If it throws, the store's contents are exactly as before.
/// - **Permanent identifiers.** Every inserted snapshot arrives with a temporary
///   identifier. The store assigns a permanent one, reports the mapping in
///   ``DataStoreSaveChangesResult/remappedIdentifiers``, and rewrites relationship values
///   in the saved snapshots that point at temporary identifiers.
/// - **Uniqueness.** For entities with uniqueness constraints, an inserted snapshot that
///   collides with a stored record (or with an earlier insert in the same request) updates
///   that record instead (an upsert), and its temporary identifier is remapped to the
///   record's; the updated record is returned in
///   ``DataStoreSaveChangesResult/snapshotsToReregister``. When the request's
///   ``DataStoreSaveChangesRequest/uniquenessPolicy`` is `.fail`, the save throws
///   ``SwiftDataError/uniqueConstraintViolation`` instead. An update that collides always
///   throws that error.
/// - **Read-your-writes.** A fetch that starts after a save returns sees that save.
/// - **Errors.** Bad requests throw ``SwiftDataError``: `.unsupportedPredicate` for a
///   predicate that cannot be evaluated, `.unknownModelType` for an entity outside the
///   schema, `.uniqueConstraintViolation` as above. Storage failures throw
///   ``DataStoreError``: `.storeLocked`, `.wrongFormat`, `.corruptStore`,
///   `.schemaMismatch`, `.ioFailure` and `.storeUnusable`.
///
/// The protocol is SwiftData's: a store names its ``Snapshot`` type, and a custom store
/// written for SwiftData (fetch returning `DataStoreFetchResult<T, Snapshot>`, save taking a
/// `DataStoreSaveChangesRequest<Snapshot>`, the editing-state hooks) compiles as it is. A
/// store may throw ``DataStoreError/preferInMemoryFilter`` or
/// ``DataStoreError/preferInMemorySort`` from ``fetch(_:)``: the context then asks again
/// without the predicate (or the sort, and the window), and filters, sorts and cuts what
/// comes back itself.
///
/// Every context of a container calls its stores, from any thread: a store must be safe
/// to call concurrently, as SwiftData's must (Stowage's own stores are `Sendable`).
///
/// Where Stowage differs: a ``ModelContainer`` opens stores whose `Snapshot` is
/// ``DefaultSnapshot`` (every store in Stowage, and the custom stores SwiftData's
/// documentation shows); another snapshot type is refused at open with
/// ``DataStoreError/unsupportedFeature``, because the context reads and writes models
/// through ``DefaultSnapshot``'s values. Stowage adds requirements with defaults that a
/// custom store need not write: ``snapshots(for:)`` (the context's look-up by identifier;
/// the default asks ``cachedSnapshots(for:editingState:)`` and then fetches) and
/// ``explain(_:)``.
public protocol DataStore<Snapshot>: AnyObject {
    /// The configuration type that opens this store.
    associatedtype Configuration: DataStoreConfiguration
    /// The form in which the store hands models to contexts and takes them back.
    associatedtype Snapshot: DataStoreSnapshot

    /// The configuration the store was opened with.
    var configuration: Configuration { get }
    /// A stable identifier for the store, part of every permanent ``PersistentIdentifier``.
    var identifier: String { get }
    /// The schema the store holds.
    var schema: Schema { get }

    /// Opens the store.
    /// - Throws: ``DataStoreError`` when the store cannot be opened.
    init(_ configuration: Configuration, migrationPlan: (any SchemaMigrationPlan.Type)?) throws

    /// The snapshots that match a request, in its sort order, after its offset and limit.
    /// - Throws: ``SwiftDataError`` `.unsupportedPredicate` or `.unknownModelType`;
    ///   ``DataStoreError/preferInMemoryFilter`` or ``DataStoreError/preferInMemorySort`` to
    ///   have the context do that part.
    func fetch<T: PersistentModel>(_ request: DataStoreFetchRequest<T>) throws -> DataStoreFetchResult<T, Snapshot>

    /// How many records match a request. The default counts ``fetch(_:)``'s snapshots.
    func fetchCount<T: PersistentModel>(_ request: DataStoreFetchRequest<T>) throws -> Int

    /// The identifiers of the records that match a request, in its sort order. The default
    /// takes them from ``fetch(_:)``'s snapshots.
    func fetchIdentifiers<T: PersistentModel>(_ request: DataStoreFetchRequest<T>) throws -> [PersistentIdentifier]

    /// How the store would answer a request, as one line of text: the index it would use,
    /// the filter left over, the order and the window (see ``QueryPlan``). Stowage's addition.
    func explain<T: PersistentModel>(_ request: DataStoreFetchRequest<T>) throws -> String

    /// The snapshots for a set of identifiers; missing ones are left out. Stowage's
    /// addition, with a default (see the protocol's discussion).
    func snapshots(for identifiers: [PersistentIdentifier]) throws -> [PersistentIdentifier: Snapshot]

    /// Applies a save atomically.
    /// - Throws: ``SwiftDataError`` `.uniqueConstraintViolation`; ``DataStoreError`` for
    ///   storage failures. Nothing is applied when it throws.
    func save(_ request: DataStoreSaveChangesRequest<Snapshot>) throws -> DataStoreSaveChangesResult<Snapshot>

    /// The snapshots the store holds in a cache shared between contexts, for these
    /// identifiers: a context asks here before it fetches. The default has no cache.
    func cachedSnapshots(for persistentIdentifiers: [PersistentIdentifier], editingState: EditingState) throws
        -> [PersistentIdentifier: Snapshot]

    /// A context with this editing state has begun to use the store. The default does nothing.
    func initializeState(for editingState: EditingState)

    /// A context with this editing state is done with the store. The default does nothing.
    func invalidateState(for editingState: EditingState)

    /// Removes every record.
    func erase() throws
}

extension DataStore {
    /// A store without a planner reads every record and filters it.
    public func explain<T: PersistentModel>(_ request: DataStoreFetchRequest<T>) throws -> String {
        request.query.description
    }

    /// The default: fetches the records and counts them.
    public func fetchCount<T: PersistentModel>(_ request: DataStoreFetchRequest<T>) throws -> Int {
        try fetch(request).fetchedSnapshots.count
    }

    /// The default: fetches the records and takes their identifiers.
    public func fetchIdentifiers<T: PersistentModel>(_ request: DataStoreFetchRequest<T>) throws
        -> [PersistentIdentifier]
    {
        try fetch(request).fetchedSnapshots.map(\.persistentIdentifier)
    }

    /// The default: no cache, so the context fetches every identifier it asks for.
    public func cachedSnapshots(for persistentIdentifiers: [PersistentIdentifier], editingState: EditingState) throws
        -> [PersistentIdentifier: Snapshot]
    { [:] }

    /// The default does nothing.
    public func initializeState(for editingState: EditingState) {}

    /// The default does nothing.
    public func invalidateState(for editingState: EditingState) {}

    /// The cached snapshots first; then, for each entity of the rest, a fetch of those
    /// identifiers (a store that prefers in-memory filtering returns all of the entity's
    /// records, and the ones asked for are kept).
    public func snapshots(for identifiers: [PersistentIdentifier]) throws -> [PersistentIdentifier: Snapshot] {
        var found = try cachedSnapshots(for: identifiers, editingState: EditingState())
        let missing = identifiers.filter { found[$0] == nil }
        guard !missing.isEmpty else { return found }
        var byEntity: [String: Set<PersistentIdentifier>] = [:]
        for id in missing { byEntity[id.entityName, default: []].insert(id) }
        for (name, ids) in byEntity {
            guard let entity = schema.entitiesByName[name] else { continue }
            for snapshot in try Self.fetchAll(entity.modelType, from: self, identifiers: ids)
            where ids.contains(snapshot.persistentIdentifier) {
                found[snapshot.persistentIdentifier] = snapshot
            }
        }
        return found
    }

    private static func fetchAll<M: PersistentModel>(
        _ type: M.Type, from store: Self, identifiers: Set<PersistentIdentifier>
    ) throws -> [Snapshot] {
        var descriptor = FetchDescriptor<M>(predicate: #Predicate { identifiers.contains($0.persistentModelID) })
        descriptor.includePendingChanges = false
        do {
            return try store.fetch(
                DataStoreFetchRequest(descriptor: descriptor, editingState: EditingState(), schema: store.schema)
            ).fetchedSnapshots
        } catch DataStoreError.preferInMemoryFilter {
            let all = FetchDescriptor<M>()
            return try store.fetch(
                DataStoreFetchRequest(descriptor: all, editingState: EditingState(), schema: store.schema)
            )
            .fetchedSnapshots
        }
    }
}

/// Opens a store. ``ModelConfiguration`` is one; each store has its own too.
///
/// Where Stowage differs: SwiftData constrains `Store` so that its `Configuration` is this
/// type; here ``ModelConfiguration`` opens a ``LogStore`` (whose own configuration is
/// ``LogStoreConfiguration``) or a ``MemoryStore``, so the constraint is left out.
public protocol DataStoreConfiguration: Hashable, Sendable {
    /// The store this configuration opens.
    associatedtype Store: DataStore

    /// The configuration's name.
    var name: String { get }
    /// The schema the store should hold, or `nil` for the container's.
    var schema: Schema? { get set }

    /// Checks the configuration before its store is opened; a container calls it first.
    /// The default accepts every configuration.
    func validate() throws

    /// Opens (or creates) the store for `schema`. Stowage's addition; the default opens
    /// `Store` with a copy of this configuration whose schema is `schema` when it had none.
    func makeStore(schema: Schema, migrationPlan: (any SchemaMigrationPlan.Type)?) throws -> any DataStore
}

extension DataStoreConfiguration {
    /// The default accepts every configuration.
    public func validate() throws {}

    /// The default opens `Store` with a copy of this configuration whose schema is
    /// `schema` when it had none.
    public func makeStore(schema: Schema, migrationPlan: (any SchemaMigrationPlan.Type)?) throws -> any DataStore {
        var configuration = self
        if configuration.schema == nil { configuration.schema = schema }
        guard let typed = configuration as? Store.Configuration else {
            throw DataStoreError(
                .unsupportedFeature,
                "the configuration \(Self.self) cannot open its store \(Store.self), whose configuration is \(Store.Configuration.self)"
            )
        }
        return try Store(typed, migrationPlan: migrationPlan)
    }
}

extension DataStoreConfiguration {
    /// Opens the store for a container: one whose snapshots are ``DefaultSnapshot``s.
    /// - Throws: ``DataStoreError/unsupportedFeature`` for a store of another snapshot type.
    func makeContextStore(schema: Schema, migrationPlan: (any SchemaMigrationPlan.Type)?) throws
        -> any DataStore<DefaultSnapshot>
    {
        let store = try makeStore(schema: schema, migrationPlan: migrationPlan)
        guard let typed = store as? any DataStore<DefaultSnapshot> else {
            throw DataStoreError(
                .unsupportedFeature,
                "the store of configuration \"\(name)\" (\(type(of: store))) uses snapshots of another type than DefaultSnapshot, which Stowage's contexts read and write"
            )
        }
        return typed
    }
}

/// A store that can delete many records without a context loading them.
///
/// ``ModelContext/delete(model:where:includeSubclasses:)`` calls ``delete(_:)`` at the next
/// save, before it sends the save's other changes: two steps, so a store of your own is
/// not asked to make them one. Stowage's own stores conform, and do more for their
/// contexts: the batch is part of the save's one atomic commit.
public protocol DataStoreBatching: DataStore {
    /// Deletes every record that matches the request, atomically. Delete rules are not the
    /// store's to apply: a context uses a batch only for entities that no relationship
    /// touches.
    func delete<T: PersistentModel>(_ request: DataStoreBatchDeleteRequest<T>) throws
}

/// A store of Stowage's outside this module whose ``DataStore/save(_:)`` takes a context's
/// deletes by predicate itself: it reads the request's `batchDeletes`, deletes what they
/// match among the records stored before the save, inside the save's one transaction, and
/// lists those records in ``DataStoreSaveChangesResult/deletedIdentifiers``. The context
/// then neither asks for their identifiers first nor calls ``DataStoreBatching/delete(_:)``.
package protocol DataStoreSavingBatchDeletes: DataStoreBatching {}

/// Whose view of the data a request comes from.
public struct EditingState: Sendable, Hashable {
    /// An identifier for the context.
    public let id: UUID
    /// The context's author, for history.
    public let author: String?

    /// The editing state of a context identified by `id`, saving as `author`.
    public init(id: UUID = UUID(), author: String? = nil) {
        self.id = id
        self.author = author
    }
}
