import Foundation

/// The schema and the stores behind an app's models.
///
/// A container opens one store per configuration and routes each entity to the store
/// whose configuration lists it (the first store when none does). It is `Sendable`:
/// share one container, and give each actor its own ``ModelContext``.
///
/// The stores close when the container and every context made from it are gone. The
/// container keeps its ``mainContext``, which refers back to it without keeping it: the
/// two would otherwise keep each other, and the stores open (and locked), for the life of
/// the process.
public final class ModelContainer: Sendable {
    /// What contexts need of a container: its schema and its open stores. Every context
    /// keeps these, and ordinary contexts keep their container too; the main context keeps
    /// only these, so that it and its container do not keep each other alive.
    ///
    /// `@unchecked Sendable`: a custom store need not be declared `Sendable` (SwiftData's
    /// `DataStore` is not), but every context of the container calls it, from any thread;
    /// the ``DataStore`` documentation asks that it be safe to call so. Stowage's stores are
    /// `Sendable`.
    final class Core: @unchecked Sendable {
        let schema: Schema
        let configurations: [any DataStoreConfiguration]
        let migrationPlan: (any SchemaMigrationPlan.Type)?
        let stores: [any DataStore<DefaultSnapshot>]
        let storeForEntity: [String: Int]
        /// The one store, when there is one and it keeps a ``SnapshotTable``: found once, as
        /// the cast was a large part of loading one model by identifier (see
        /// `Benchmarks/RESULTS.md`, "Measurements behind the code").
        let onlyTableStore: (any SnapshotTableStore)?
        /// The live contexts, which each save hands the records it changed to
        /// (``ModelContext/processPendingChanges()``).
        let contexts = ContextDirectory()
        /// The live ``ResultsObserver``s and ``HistoryObserver``s, which each save is handed to.
        let observers = SaveObserverDirectory()

        init(
            schema: Schema, configurations: [any DataStoreConfiguration],
            migrationPlan: (any SchemaMigrationPlan.Type)?, stores: [any DataStore<DefaultSnapshot>],
            storeForEntity: [String: Int]
        ) {
            self.schema = schema
            self.configurations = configurations
            self.migrationPlan = migrationPlan
            self.stores = stores
            self.storeForEntity = storeForEntity
            self.onlyTableStore = stores.count == 1 ? stores[0] as? any SnapshotTableStore : nil
        }

        func store(for entityName: String) throws -> any DataStore<DefaultSnapshot> {
            guard let index = storeForEntity[entityName], index < stores.count else {
                throw SwiftDataError(.unknownModelType, "\(entityName) is not in the container's schema")
            }
            return stores[index]
        }
    }

    let core: Core
    /// The schema of every store.
    public var schema: Schema { core.schema }
    /// The container's ``ModelConfiguration``s, as SwiftData gives them
    /// (`container.configurations.first?.url`). A custom store's configuration is not a
    /// `ModelConfiguration`; ``dataStoreConfigurations`` lists every configuration.
    ///
    /// Where Stowage differs: SwiftData's is also settable. Here the stores are opened
    /// when the container is made, so the configurations are read-only; make a new
    /// container to use others.
    public var configurations: Set<ModelConfiguration> {
        Set(core.configurations.compactMap { $0 as? ModelConfiguration })
    }
    /// Every configuration, custom stores' too, in the order given. Stowage's own.
    public var dataStoreConfigurations: [any DataStoreConfiguration] { core.configurations }
    /// The migration plan, if any.
    public var migrationPlan: (any SchemaMigrationPlan.Type)? { core.migrationPlan }
    var stores: [any DataStore<DefaultSnapshot>] { core.stores }
    /// Read and made by ``mainContext`` on the main actor, or set when the container is made.
    nonisolated(unsafe) private var _mainContext: ModelContext?

    /// Opens a container for `schema`.
    /// - Throws: ``SwiftDataError`` `.configurationSchemaMismatch` when a configuration's
    ///   schema has models the container's lacks; ``DataStoreError`` when a store fails to open.
    public init(
        for schema: Schema, migrationPlan: (any SchemaMigrationPlan.Type)? = nil,
        configurations: [any DataStoreConfiguration]
    ) throws {
        let configurations: [any DataStoreConfiguration] =
            configurations.isEmpty ? [ModelConfiguration(schema: schema)] : configurations
        var stores: [any DataStore<DefaultSnapshot>] = []
        var routes: [String: Int] = [:]
        for (index, configuration) in configurations.enumerated() {
            if let own = configuration.schema {
                for entity in own.entities where schema.entitiesByName[entity.name] == nil {
                    throw SwiftDataError(
                        .configurationSchemaMismatch,
                        "configuration \"\(configuration.name)\" lists \(entity.name), which the container's schema lacks"
                    )
                }
                for entity in own.entities where routes[entity.name] == nil { routes[entity.name] = index }
            }
            try configuration.validate()
            stores.append(
                try configuration.makeContextStore(schema: configuration.schema ?? schema, migrationPlan: migrationPlan)
            )
        }
        for entity in schema.entities where routes[entity.name] == nil {
            routes[entity.name] = 0
        }
        self.core = Core(
            schema: schema, configurations: configurations, migrationPlan: migrationPlan, stores: stores,
            storeForEntity: routes)
    }

    /// A container for stores that are open already, whose main context is `mainContext`:
    /// what a main context gives as its ``ModelContext/container`` once the container it
    /// was made by is gone.
    init(core: Core, mainContext: ModelContext) {
        self.core = core
        self._mainContext = mainContext
    }

    /// Opens a container for `schema`.
    public convenience init(
        for schema: Schema, migrationPlan: (any SchemaMigrationPlan.Type)? = nil, configurations: ModelConfiguration...
    ) throws {
        try self.init(for: schema, migrationPlan: migrationPlan, configurations: configurations)
    }

    /// Opens a container for model types and every type reachable from them.
    public convenience init(
        for forTypes: any PersistentModel.Type..., migrationPlan: (any SchemaMigrationPlan.Type)? = nil,
        configurations: ModelConfiguration...
    ) throws {
        let schema = Self.schema(forTypes, migrationPlan)
        try self.init(for: schema, migrationPlan: migrationPlan, configurations: configurations)
    }

    /// Opens a container for model types and every type reachable from them, with any
    /// store configurations: a custom store's, as SwiftData's documentation shows it
    /// (`ModelContainer(for: Trip.self, configurations: JSONStoreConfiguration(...))`).
    public convenience init(
        for forTypes: any PersistentModel.Type..., configurations: any DataStoreConfiguration...
    ) throws {
        try self.init(for: Self.schema(forTypes, nil), configurations: configurations)
    }

    /// Opens a container for model types with any store configurations.
    public convenience init(
        for forTypes: [any PersistentModel.Type], migrationPlan: (any SchemaMigrationPlan.Type)? = nil,
        configurations: [any DataStoreConfiguration]
    ) throws {
        try self.init(
            for: Self.schema(forTypes, migrationPlan), migrationPlan: migrationPlan, configurations: configurations)
    }

    private static func schema(_ types: [any PersistentModel.Type], _ plan: (any SchemaMigrationPlan.Type)?) -> Schema {
        if let latest = plan?.schemas.last {
            let version = latest.versionIdentifier
            return Schema(types, version: version)
        }
        return Schema(types)
    }

    /// The context bound to the main actor. Its ``ModelContext/autosaveEnabled`` is `true`.
    @MainActor public var mainContext: ModelContext {
        if let existing = _mainContext { return existing }
        let context = ModelContext(mainOf: self)
        context.autosaveEnabled = true
        _mainContext = context
        return context
    }

    /// Deletes every record in every store.
    public func erase() throws {
        defer { core.observers.post(SaveEvent(resetsAll: true)) }
        for store in stores { try store.erase() }
    }

    /// Deletes every record in every store. SwiftData's older name.
    public func deleteAllData() {
        try? erase()
    }
}
