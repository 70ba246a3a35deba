import Foundation
import Synchronization

/// A store that keeps its records in memory, for previews, tests and caches.
///
/// `ModelConfiguration(isStoredInMemoryOnly: true)` opens one. Its records live as long
/// as the store: every container gets its own, and nothing is written anywhere.
public final class MemoryStore: SnapshotTableStore, DataStoreBatching {
    public let configuration: MemoryStoreConfiguration
    public let identifier: String
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

    public func withTable<R>(_ body: (SnapshotTable) throws -> R) rethrows -> R {
        try table.withLock { try body($0) }
    }

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

    public func delete<T: PersistentModel>(_ request: DataStoreBatchDeleteRequest<T>) throws {
        _ = try save(.batchDelete(request))
    }

    public func erase() throws {
        table.withLock { $0.removeAll() }
    }
}

/// The memory store keeps its history beside its records, for as long as the store lives.
extension MemoryStore: HistoryProviding, HistoryKeeping {
    public typealias HistoryType = DefaultHistoryTransaction
    public static var historyType: DefaultHistoryTransaction.Type { DefaultHistoryTransaction.self }

    public func fetchHistory(_ descriptor: HistoryDescriptor<DefaultHistoryTransaction>) throws
        -> [DefaultHistoryTransaction]
    {
        try fetchDefaultHistory(descriptor)
    }

    public func deleteHistory(_ descriptor: HistoryDescriptor<DefaultHistoryTransaction>) throws {
        try deleteDefaultHistory(descriptor)
    }

    func historyEntries() throws -> [HistoryEntry] { table.withLock { $0.history ?? [] } }

    func removeHistory(_ transactions: Set<Int64>) throws {
        table.withLock { $0.history?.removeAll { transactions.contains($0.transactionID) } }
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
