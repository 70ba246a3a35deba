import Foundation

// Hooks for Stowage's own tests.

extension ModelContext {
    /// How many saved or fetched models the identity map holds (pending inserts are not in it).
    @_spi(Testing) public var registeredModelCount: Int { registered.count }

    /// The snapshot a model would be saved as.
    @_spi(Testing) public func snapshotForTesting(_ model: some PersistentModel) throws -> DefaultSnapshot {
        try model.persistentBackingData.snapshot()
    }
}

extension ModelContainer {
    /// The container's stores.
    @_spi(Testing) public var storesForTesting: [any DataStore<DefaultSnapshot>] { stores }
}

extension PersistentIdentifier {
    /// A new temporary identifier.
    @_spi(Testing) public static func temporaryForTesting(entityName: String) -> PersistentIdentifier {
        .temporary(entityName: entityName)
    }
}
