import Foundation

/// One version of an app's schema, as a namespace of model classes.
public protocol VersionedSchema {
    /// The version.
    static var versionIdentifier: Schema.Version { get }
    /// The model classes in this version.
    static var models: [any PersistentModel.Type] { get }
}

/// The versions of a schema and the steps between them.
public protocol SchemaMigrationPlan {
    /// Every version, oldest first.
    static var schemas: [any VersionedSchema.Type] { get }
    /// The steps between consecutive versions.
    static var stages: [MigrationStage] { get }
}

/// One step of a migration plan.
public enum MigrationStage {
    /// A change Stowage can make on its own: added optional or defaulted properties,
    /// removed properties, renames through `originalName`.
    case lightweight(fromVersion: any VersionedSchema.Type, toVersion: any VersionedSchema.Type)
    /// A change with code of yours before and after.
    case custom(
        fromVersion: any VersionedSchema.Type, toVersion: any VersionedSchema.Type,
        willMigrate: ((ModelContext) throws -> Void)?, didMigrate: ((ModelContext) throws -> Void)?)
}
