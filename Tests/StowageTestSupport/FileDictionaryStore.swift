import Foundation
import Stowage

/// A custom store written as an app would write one against SwiftData's `DataStore`: a
/// dictionary of snapshots kept in one file with `JSONEncoder`, which leaves filtering and
/// sorting to the context (`preferInMemoryFilter`, `preferInMemorySort`). Only the windows
/// of unfiltered, unsorted fetches are its own. The conformance suite runs on it, so that
/// the public protocol is proved by a store that is not Stowage's. Its primary keys are
/// strings, so identifiers with keys other than integers are proved by the same suite.
public final class FileDictionaryStore: DataStoreBatching, @unchecked Sendable {
    // @unchecked Sendable: every access to the file goes through `lock`.
    public typealias Configuration = FileDictionaryStoreConfiguration
    public typealias Snapshot = DefaultSnapshot

    public let configuration: FileDictionaryStoreConfiguration
    public let identifier: String
    public let schema: Schema
    private let lock = NSLock()
    private var _liveStates: Set<UUID> = []
    private var _expires: (@Sendable (DefaultSnapshot) -> Bool)?

    /// The editing states of the contexts using the store: `initializeState` adds one,
    /// `invalidateState` removes it.
    public var liveStates: Set<UUID> { lock.withLock { _liveStates } }
    /// Records that every save removes on its own (an expiry), reported to the context as
    /// the result's `deletedIdentifiers`.
    public var expires: (@Sendable (DefaultSnapshot) -> Bool)? {
        get { lock.withLock { _expires } }
        set { lock.withLock { _expires = newValue } }
    }

    public func initializeState(for editingState: EditingState) {
        lock.withLock { _ = _liveStates.insert(editingState.id) }
    }

    public func invalidateState(for editingState: EditingState) {
        lock.withLock { _ = _liveStates.remove(editingState.id) }
    }

    /// What the file holds.
    struct Contents: Codable {
        var nextKey: Int64 = 1
        var records: [PersistentIdentifier: DefaultSnapshot] = [:]
    }

    public init(_ configuration: FileDictionaryStoreConfiguration, migrationPlan: (any SchemaMigrationPlan.Type)?)
        throws
    {
        self.configuration = configuration
        self.identifier = configuration.name
        self.schema = configuration.schema ?? Schema()
    }

    private func load() throws -> Contents {
        guard FileManager.default.fileExists(atPath: configuration.fileURL.path) else { return Contents() }
        return try JSONDecoder().decode(Contents.self, from: Data(contentsOf: configuration.fileURL))
    }

    private func write(_ contents: Contents) throws {
        try JSONEncoder().encode(contents).write(to: configuration.fileURL, options: .atomic)
    }

    public func fetch<T: PersistentModel>(_ request: DataStoreFetchRequest<T>) throws
        -> DataStoreFetchResult<T, DefaultSnapshot>
    {
        if request.descriptor.predicate != nil { throw DataStoreError.preferInMemoryFilter }
        if !request.descriptor.sortBy.isEmpty { throw DataStoreError.preferInMemorySort }
        let entityName = Schema.entityName(for: T.self)
        let contents = try lock.withLock { try load() }
        var snapshots = contents.records.values.filter { $0.persistentIdentifier.entityName == entityName }
        snapshots.sort { $0.persistentIdentifier < $1.persistentIdentifier }
        let start = min(request.descriptor.fetchOffset ?? 0, snapshots.count)
        let end = request.descriptor.fetchLimit.map { min(snapshots.count, start + $0) } ?? snapshots.count
        return DataStoreFetchResult(
            descriptor: request.descriptor, fetchedSnapshots: Array(snapshots[start..<end]), relatedSnapshots: [:])
    }

    public func save(_ request: DataStoreSaveChangesRequest<DefaultSnapshot>) throws
        -> DataStoreSaveChangesResult<DefaultSnapshot>
    {
        try lock.withLock {
            var contents = try load()
            var remapped: [PersistentIdentifier: PersistentIdentifier] = [:]
            var reregister: [PersistentIdentifier: DefaultSnapshot] = [:]
            var inserted: [(PersistentIdentifier, DefaultSnapshot)] = []
            for snapshot in request.inserted {
                let name = snapshot.persistentIdentifier.entityName
                if let existing = try uniqueMatch(
                    snapshot, in: contents, pending: inserted, policy: request.uniquenessPolicy)
                {
                    remapped[snapshot.persistentIdentifier] = existing
                    continue
                }
                // String keys, as many app stores have: they travel as keyed identifiers.
                // Zero-padded, so that the file's order is the order of insertion.
                let key =
                    "\(name.lowercased())-"
                    + String(String(contents.nextKey).reversed()).padding(
                        toLength: 12, withPad: "0", startingAt: 0
                    ).reversed()
                let id = try PersistentIdentifier.identifier(for: identifier, entityName: name, primaryKey: key)
                contents.nextKey += 1
                remapped[snapshot.persistentIdentifier] = id
                inserted.append((id, snapshot))
            }
            for (id, snapshot) in inserted {
                contents.records[id] = snapshot.copy(persistentIdentifier: id, remappedIdentifiers: remapped)
            }
            // An insert that met a stored record updates it with the inserted values.
            for snapshot in request.inserted {
                guard let id = remapped[snapshot.persistentIdentifier], !inserted.contains(where: { $0.0 == id })
                else { continue }
                let updated = snapshot.copy(persistentIdentifier: id, remappedIdentifiers: remapped)
                contents.records[id] = updated
                reregister[id] = updated
            }
            for snapshot in request.updated {
                let id = snapshot.persistentIdentifier
                contents.records[id] = snapshot.copy(persistentIdentifier: id, remappedIdentifiers: remapped)
            }
            for snapshot in request.deleted { contents.records[snapshot.persistentIdentifier] = nil }
            var expired: [PersistentIdentifier] = []
            if let expires = _expires {
                expired = contents.records.values.filter(expires).map(\.persistentIdentifier)
                for id in expired { contents.records[id] = nil }
            }
            try write(contents)
            return DataStoreSaveChangesResult(
                for: identifier, remappedIdentifiers: remapped, snapshotsToReregister: reregister,
                deletedIdentifiers: expired)
        }
    }

    /// Deletes the records of the request's entity that its predicate matches, evaluated
    /// with Stowage's `QueryEvaluator` on the compiled query. Counts the batches it was
    /// asked for (``batchDeletes``), so tests can tell a batch from a delete of loaded models.
    public func delete<T: PersistentModel>(_ request: DataStoreBatchDeleteRequest<T>) throws {
        try lock.withLock {
            _batchDeletes += 1
            var contents = try load()
            var evaluator = QueryEvaluator(resolve: { contents.records[$0] })
            for (id, snapshot) in contents.records where id.entityName == request.query.entity.name {
                if let predicate = request.query.predicate,
                    try !evaluator.matches(snapshot, predicate, root: request.query.rootVariable)
                {
                    continue
                }
                contents.records[id] = nil
            }
            try write(contents)
        }
    }

    private var _batchDeletes = 0
    /// How many batch deletes the store was asked for.
    public var batchDeletes: Int { lock.withLock { _batchDeletes } }

    /// The stored (or earlier inserted) record that `snapshot` collides with on one of its
    /// entity's uniqueness constraints; with `.fail`, the collision throws instead.
    private func uniqueMatch(
        _ snapshot: DefaultSnapshot, in contents: Contents, pending: [(PersistentIdentifier, DefaultSnapshot)],
        policy: UniquenessPolicy
    ) throws -> PersistentIdentifier? {
        let name = snapshot.persistentIdentifier.entityName
        guard let entity = schema.entitiesByName[name], !entity.uniquenessConstraints.isEmpty else { return nil }
        let candidates = contents.records.values.map { ($0.persistentIdentifier, $0) } + pending
        for constraint in entity.uniquenessConstraints {
            let key = constraint.map { snapshot.value(forKey: $0, in: entity) }
            for (id, other) in candidates where id.entityName == name {
                guard constraint.map({ other.value(forKey: $0, in: entity) }) == key else { continue }
                if policy == .fail {
                    throw SwiftDataError(.uniqueConstraintViolation, "\(name) \(constraint) is taken by \(id)")
                }
                return id
            }
        }
        return nil
    }

    public func erase() throws {
        try lock.withLock { try write(Contents()) }
    }
}

/// Opens a ``FileDictionaryStore`` at a file.
public struct FileDictionaryStoreConfiguration: DataStoreConfiguration {
    public typealias Store = FileDictionaryStore

    public var name: String
    public var schema: Schema?
    public var fileURL: URL

    public init(name: String, schema: Schema? = nil, fileURL: URL) {
        self.name = name
        self.schema = schema
        self.fileURL = fileURL
    }

    public func validate() throws {
        let directory = fileURL.deletingLastPathComponent()
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory.path, isDirectory: &isDirectory), isDirectory.boolValue
        else {
            throw DataStoreError(.ioFailure, "no directory at \(directory.path) for \(fileURL.lastPathComponent)")
        }
    }
}
