import Foundation

/// One version of an app's schema, as a namespace of model classes.
///
/// List every released version in a ``SchemaMigrationPlan``: a store records the version
/// it was written with, and opening finds it among the plan's `schemas` by its identifier
/// and its shape (or by its shape alone, for a store written before the app had versions).
public protocol VersionedSchema: SendableMetatype {
    /// The version.
    static var versionIdentifier: Schema.Version { get }
    /// The model classes in this version.
    static var models: [any PersistentModel.Type] { get }
}

/// The versions of a schema and the steps between them.
///
/// `ModelContainer(for:migrationPlan:configurations:)` on a log or JSON store finds the
/// store's version among ``schemas`` and runs every stage from there to the last version,
/// in order. The whole chain runs on a working copy of the store, which replaces the
/// store in one `rename` only when the last stage has finished: a failure or a crash at
/// any point leaves the store as it was, at its old version. A pair of consecutive
/// versions with no stage between them migrates as ``MigrationStage/lightweight(fromVersion:toVersion:)``.
public protocol SchemaMigrationPlan: SendableMetatype {
    /// Every version, oldest first.
    static var schemas: [any VersionedSchema.Type] { get }
    /// The steps between consecutive versions.
    static var stages: [MigrationStage] { get }
}

/// One step of a migration plan, between two consecutive versions of its schemas.
public enum MigrationStage: Sendable {
    /// A change the store converts on its own: new entities; new properties that are
    /// optional, defaulted or to-many; removed properties; renames through `originalName`;
    /// a property made optional; index and uniqueness changes (an added constraint is
    /// checked against the records). Records keep their persistent identifiers.
    case lightweight(fromVersion: any VersionedSchema.Type, toVersion: any VersionedSchema.Type)
    /// A change with code of yours around it. `willMigrate` gets a context on the old
    /// version's models (fetch, change, delete, save); the store then converts as a
    /// lightweight stage does; then `didMigrate` gets a context on the new version's
    /// models. Changes a closure leaves unsaved are saved when it returns.
    ///
    /// Stowage goes further than SwiftData in two ways: a property whose type changed is
    /// dropped and added again (it must be optional or have a default value) instead of
    /// refused, and `didMigrate` can read each record's values from before the stage with
    /// ``ModelContext/valuesBeforeMigration(of:as:)``.
    @preconcurrency case custom(
        fromVersion: any VersionedSchema.Type, toVersion: any VersionedSchema.Type,
        willMigrate: (@Sendable (ModelContext) throws -> Void)?, didMigrate: (@Sendable (ModelContext) throws -> Void)?)

    /// The stage's versions.
    var versions: (from: any VersionedSchema.Type, to: any VersionedSchema.Type) {
        switch self {
        case .lightweight(let from, let to): (from, to)
        case .custom(let from, let to, _, _): (from, to)
        }
    }
}
