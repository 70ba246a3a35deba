import Foundation
import Synchronization

/// A store that keeps its records in memory, for previews, tests and caches.
///
/// `ModelConfiguration(isStoredInMemoryOnly: true)` opens one. Its records live as long
/// as the store: every container gets its own, and nothing is written anywhere.
public final class MemoryStore: DataStore, DataStoreBatching {
    public let configuration: MemoryStoreConfiguration
    public let identifier: String
    public let schema: Schema
    private let state: Mutex<SnapshotTable>

    /// Opens an empty in-memory store.
    public init(_ configuration: MemoryStoreConfiguration, migrationPlan: (any SchemaMigrationPlan.Type)?) throws {
        guard let schema = configuration.schema else {
            throw DataStoreError(.unsupportedFeature, "a MemoryStoreConfiguration needs a schema")
        }
        self.configuration = configuration
        self.schema = schema
        self.identifier = "memory-" + UUID().uuidString
        self.state = Mutex(SnapshotTable(schema: schema, storeIdentifier: identifier))
    }

    public func fetch<T: PersistentModel>(_ request: DataStoreFetchRequest<T>) throws -> DataStoreFetchResult<T> {
        let snapshots = try state.withLock { try $0.fetch(request.query) }
        return DataStoreFetchResult(descriptor: request.descriptor, fetchedSnapshots: snapshots)
    }

    public func fetchCount<T: PersistentModel>(_ request: DataStoreFetchRequest<T>) throws -> Int {
        try state.withLock { try $0.count(request.query) }
    }

    public func fetchIdentifiers<T: PersistentModel>(_ request: DataStoreFetchRequest<T>) throws
        -> [PersistentIdentifier]
    {
        try state.withLock { try $0.identifiers(request.query) }
    }

    public func explain<T: PersistentModel>(_ request: DataStoreFetchRequest<T>) throws -> String {
        state.withLock { $0.plan(request.query).description }
    }

    public func snapshots(for identifiers: [PersistentIdentifier]) throws -> [PersistentIdentifier: DefaultSnapshot] {
        state.withLock { $0.snapshots(for: identifiers) }
    }

    public func save(_ request: DataStoreSaveChangesRequest) throws -> DataStoreSaveChangesResult {
        try state.withLock { table in
            let prepared = try table.prepare(request)
            table.apply(prepared)
            return DataStoreSaveChangesResult(
                storeIdentifier: identifier, remappedIdentifiers: prepared.remapped,
                snapshotsToReregister: prepared.reregister)
        }
    }

    public func delete<T: PersistentModel>(_ request: DataStoreBatchDeleteRequest<T>) throws -> [PersistentIdentifier] {
        try state.withLock { table in
            let doomed = try table.fetch(request.query)
            let save = DataStoreSaveChangesRequest(
                editingState: request.editingState, inserted: [], updated: [], deleted: doomed)
            table.apply(try table.prepare(save))
            return doomed.map(\.persistentIdentifier)
        }
    }

    public func erase() throws {
        state.withLock { $0.removeAll() }
    }
}

/// Opens a ``MemoryStore``.
public struct MemoryStoreConfiguration: DataStoreConfiguration {
    public typealias Store = MemoryStore
    public var name: String
    public var schema: Schema?

    public init(name: String = "memory", schema: Schema? = nil) {
        self.name = name
        self.schema = schema
    }

    public func makeStore(schema: Schema, migrationPlan: (any SchemaMigrationPlan.Type)?) throws -> any DataStore {
        var configuration = self
        configuration.schema = self.schema ?? schema
        return try MemoryStore(configuration, migrationPlan: migrationPlan)
    }
}
