import Foundation
import Synchronization

/// A store that keeps its records in memory, for previews, tests and caches.
///
/// `ModelConfiguration(isStoredInMemoryOnly: true)` opens one. Its records live as long
/// as the store: every container gets its own, and nothing is written anywhere.
public final class MemoryStore: SnapshotTableStore, DataStoreBatching {
    /// The configuration the store was opened with.
    public let configuration: MemoryStoreConfiguration
    /// The store's identifier, new for every store (`memory-` and a UUID): its identifiers
    /// and history tokens mean nothing to another store.
    public let identifier: String
    /// The models the store holds.
    public let schema: Schema
    let table: PosixMutex<SnapshotTable>

    /// Opens an empty in-memory store.
    public init(_ configuration: MemoryStoreConfiguration, migrationPlan: (any SchemaMigrationPlan.Type)?) throws {
        guard let schema = configuration.schema else {
            throw DataStoreError(.unsupportedFeature, "a MemoryStoreConfiguration needs a schema")
        }
        self.configuration = configuration
        self.schema = schema
        self.identifier = "memory-" + UUID().uuidString
        var table = SnapshotTable(schema: schema, storeIdentifier: identifier)
        table.history = []
        self.table = PosixMutex(table)
    }

    /// Runs `body` on the store's records under its lock, for reading only.
    public func withTable<R>(_ body: (SnapshotTable) throws -> R) rethrows -> R {
        try table.withLock { try body($0) }
    }

    /// Applies a save's inserts, updates and deletes all at once, or throws and changes
    /// nothing, and records it in the history.
    public func save(_ request: DataStoreSaveChangesRequest<DefaultSnapshot>) throws -> DataStoreSaveChangesResult<
        DefaultSnapshot
    > {
        try table.withLock { table in
            let prepared = try table.prepare(request)
            table.apply(prepared)
            table.recordHistory(prepared, author: request.editingState.author)
            return prepared.result(storeIdentifier: identifier, request: request)
        }
    }

    /// Deletes the records a request's predicate matches, as one save.
    public func delete<T: PersistentModel>(_ request: DataStoreBatchDeleteRequest<T>) throws {
        _ = try save(.batchDelete(request))
    }

    /// Removes every record.
    public func erase() throws {
        table.withLock { $0.removeAll() }
    }
}

/// The memory store keeps its history beside its records, for as long as the store lives.
extension MemoryStore: HistoryProviding, HistoryKeeping {
    /// The memory store's transactions are Stowage's default ones.
    public typealias HistoryType = DefaultHistoryTransaction
    /// ``DefaultHistoryTransaction``.
    public static var historyType: DefaultHistoryTransaction.Type { DefaultHistoryTransaction.self }

    /// The transactions `descriptor` selects, in its order, up to its limit.
    public func fetchHistory(_ descriptor: HistoryDescriptor<DefaultHistoryTransaction>) throws
        -> [DefaultHistoryTransaction]
    {
        try fetchDefaultHistory(descriptor)
    }

    /// Removes the transactions `descriptor` selects from the history.
    public func deleteHistory(_ descriptor: HistoryDescriptor<DefaultHistoryTransaction>) throws {
        try deleteDefaultHistory(descriptor)
    }

    package func historyEntries() throws -> [HistoryEntry] { table.withLock { $0.history ?? [] } }

    package func removeHistory(_ transactions: Set<Int64>) throws {
        table.withLock { $0.history?.removeAll { transactions.contains($0.transactionID) } }
    }
}

/// Opens a ``MemoryStore``.
public struct MemoryStoreConfiguration: DataStoreConfiguration {
    /// The configuration opens a ``MemoryStore``.
    public typealias Store = MemoryStore
    /// The configuration's name.
    public var name: String
    /// The models the store holds, or `nil` for the container's.
    public var schema: Schema?

    /// A configuration named `name` for `schema`'s models (the container's when `nil`).
    public init(name: String = "memory", schema: Schema? = nil) {
        self.name = name
        self.schema = schema
    }

    /// Opens a new, empty ``MemoryStore`` for this configuration's schema, or `schema` when
    /// it has none.
    public func makeStore(schema: Schema, migrationPlan: (any SchemaMigrationPlan.Type)?) throws -> any DataStore {
        var configuration = self
        configuration.schema = self.schema ?? schema
        return try MemoryStore(configuration, migrationPlan: migrationPlan)
    }
}
