import Foundation

extension ModelContext {
    /// The record behind `model` as it was before the current migration stage converted
    /// it, as a model of the stage's old version: what a custom stage's `didMigrate` reads
    /// to fill in what the conversion could not (a property whose type changed, one value
    /// split into two), the way Realm's migration block sees old and new objects together.
    ///
    /// Stowage's own: SwiftData's `didMigrate` sees only the new version's models. The old
    /// records are read from a copy of the store kept for the stage, one at a time, so a
    /// `didMigrate` over every record keeps memory bounded when it fetches in batches.
    ///
    /// ```swift
    /// didMigrate: { context in
    ///     for item in try context.fetch(FetchDescriptor<V2.Item>()) {
    ///         let old = try context.valuesBeforeMigration(of: item, as: V1.Item.self)
    ///         item.amount = Decimal(string: old?.amount ?? "") ?? 0
    ///     }
    ///     try context.save()
    /// }
    /// ```
    /// - Returns: The old model, or `nil` when the record did not exist before the stage
    ///   (inserted since) or `type` is not the old version's model of its entity.
    /// - Throws: ``DataStoreError`` `.unsupportedFeature` outside a custom stage's `didMigrate`.
    public func valuesBeforeMigration<Old: PersistentModel>(of model: some PersistentModel, as type: Old.Type)
        throws -> Old?
    {
        guard let previous = migrationPredecessor else {
            throw DataStoreError(
                .unsupportedFeature,
                "valuesBeforeMigration(of:as:) reads the old records only inside a custom MigrationStage's didMigrate")
        }
        let id = model.persistentModelID
        if id.isTemporary { return nil }
        return (try? previous.existingModel(for: id)) as? Old
    }
}
