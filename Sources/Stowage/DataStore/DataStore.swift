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
/// Stowage's protocol differs from SwiftData's in one way: the snapshot type is always
/// ``DefaultSnapshot``, so that every store can evaluate the shared query form.
public protocol DataStore: AnyObject, Sendable {
    /// The configuration type that opens this store.
    associatedtype Configuration: DataStoreConfiguration

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
    /// - Throws: ``SwiftDataError`` `.unsupportedPredicate` or `.unknownModelType`.
    func fetch<T: PersistentModel>(_ request: DataStoreFetchRequest<T>) throws -> DataStoreFetchResult<T>

    /// How many records match a request.
    func fetchCount<T: PersistentModel>(_ request: DataStoreFetchRequest<T>) throws -> Int

    /// The identifiers of the records that match a request, in its sort order.
    func fetchIdentifiers<T: PersistentModel>(_ request: DataStoreFetchRequest<T>) throws -> [PersistentIdentifier]

    /// How the store would answer a request, as one line of text: the index it would use,
    /// the filter left over, the order and the window (see ``QueryPlan``).
    func explain<T: PersistentModel>(_ request: DataStoreFetchRequest<T>) throws -> String

    /// The snapshots for a set of identifiers; missing ones are left out.
    func snapshots(for identifiers: [PersistentIdentifier]) throws -> [PersistentIdentifier: DefaultSnapshot]

    /// Applies a save atomically.
    /// - Throws: ``SwiftDataError`` `.uniqueConstraintViolation`; ``DataStoreError`` for
    ///   storage failures. Nothing is applied when it throws.
    func save(_ request: DataStoreSaveChangesRequest) throws -> DataStoreSaveChangesResult

    /// Removes every record.
    func erase() throws
}

extension DataStore {
    /// A store without a planner reads every record and filters it.
    public func explain<T: PersistentModel>(_ request: DataStoreFetchRequest<T>) throws -> String {
        request.query.description
    }
}

/// Opens a store. ``ModelConfiguration`` is one; each store has its own too.
public protocol DataStoreConfiguration: Sendable {
    /// The store this configuration opens.
    associatedtype Store: DataStore

    /// The configuration's name.
    var name: String { get }
    /// The schema the store should hold, or `nil` for the container's.
    var schema: Schema? { get set }

    /// Opens (or creates) the store for `schema`.
    func makeStore(schema: Schema, migrationPlan: (any SchemaMigrationPlan.Type)?) throws -> any DataStore
}

/// A store that can delete many records without materialising them.
public protocol DataStoreBatching: DataStore {
    /// Deletes every record that matches the request, atomically.
    /// - Returns: The identifiers deleted.
    func delete<T: PersistentModel>(_ request: DataStoreBatchDeleteRequest<T>) throws -> [PersistentIdentifier]
}

/// Whose view of the data a request comes from.
public struct EditingState: Sendable, Hashable {
    /// An identifier for the context.
    public let id: UUID
    /// The context's author, for history.
    public let author: String?

    public init(id: UUID = UUID(), author: String? = nil) {
        self.id = id
        self.author = author
    }
}
