import Foundation

/// How the records of a store whose schema differs from the container's become records of
/// the container's schema, where the difference needs no migration plan
/// (`Formats/log.md`, "Opening and recovery"): what SwiftData calls a lightweight
/// migration, inferred from the two schemas.
///
/// Allowed, within one schema version: new entities; new properties that are optional,
/// to-many relationships, or attributes with a default value; removed properties (their
/// values are dropped); a property renamed with `originalName`; a property made optional;
/// a `Data` attribute moved into or out of external storage; and any change of indexes and
/// uniqueness constraints (an added constraint is checked against the records); an entity
/// the schema lacks, when the store holds none of its records. Anything else, including
/// such an entity with records (they would be lost), needs a migration and is refused.
package struct SchemaConversion: Sendable {
    /// Where one value of a converted record comes from.
    package enum Source: Sendable {
        /// The stored record's value at this position.
        case stored(Int)
        /// This value, for a property the store does not have.
        case value(SnapshotValue)
    }

    /// For each entity the store has, where each of its values (in the container's
    /// schema's order) comes from.
    package var entities: [String: [Source]] = [:]
    /// Entities the store has and the schema lacks. A store may drop one only when it holds
    /// none of its records (a custom stage's `willMigrate` may have deleted them):
    /// ``refusal(dropping:records:)`` says why otherwise.
    package var droppedEntities: Set<String> = []

    /// Why a store that holds `records` of the dropped entity `name` cannot convert.
    package static func refusal(dropping name: String, records: Int) -> String {
        "the store has \(records) \(name) records, which the schema lacks; they would be lost"
    }

    /// What a conversion may do beyond the changes it infers within one schema version.
    package struct Options: Sendable, Equatable {
        /// Convert across a change of schema version: a migration plan's stage allows it
        /// (``MigrationStage``); without one, a new version is refused.
        var acrossVersions = false
        /// Treat a property whose type or kind changed as removed and added again (the new one
        /// optional or defaulted): a custom stage's `didMigrate` fills it in, reading the old
        /// values through ``ModelContext/valuesBeforeMigration(of:as:)``.
        var replacesChangedProperties = false

        package init(acrossVersions: Bool = false, replacesChangedProperties: Bool = false) {
            self.acrossVersions = acrossVersions
            self.replacesChangedProperties = replacesChangedProperties
        }
    }

    /// The conversion from `stored` to `live` (the container's `schema`, described), or
    /// why there is none.
    package static func make(
        from stored: StoredSchema, to live: StoredSchema, schema: Schema, options: Options = Options()
    )
        throws(Refusal) -> SchemaConversion
    {
        guard stored.version == live.version || options.acrossVersions else {
            throw Refusal(
                "the schema version changed from \(stored.versionText) to \(live.versionText), and Stowage "
                    + "converts without a migration plan only within one version; pass a SchemaMigrationPlan "
                    + "whose schemas include both")
        }
        let wanted = Dictionary(live.entities.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        var conversion = SchemaConversion()
        for old in stored.entities {
            guard let new = wanted[old.name], let entity = schema.entitiesByName[old.name] else {
                // Dropped: the store refuses it if it holds any record of it (``droppedEntities``).
                conversion.droppedEntities.insert(old.name)
                continue
            }
            var sources: [Source] = []
            var used = Set<Int>()
            for (position, property) in new.properties.enumerated() {
                let metadata = position < entity.properties.count ? entity.properties[position] : nil
                let original = metadata?.originalName
                if let from = old.properties.firstIndex(where: { $0.name == property.name })
                    ?? original.flatMap({ name in old.properties.firstIndex(where: { $0.name == name }) }),
                    !used.contains(from)
                {
                    let was = old.properties[from]
                    // Bit 0: optional (may be added); bit 3: external storage (either way).
                    let sameKind =
                        was.typeName == property.typeName && was.destination == property.destination
                        && was.flags & ~9 == property.flags & ~9 && (was.flags & 1 == 0 || property.flags & 1 != 0)
                    if sameKind {
                        used.insert(from)
                        sources.append(.stored(from))
                        continue
                    }
                    // Changed in type or kind: a custom stage may drop it and add it again
                    // (below), its didMigrate filling it in from the old values.
                    guard options.replacesChangedProperties else {
                        throw Refusal(
                            "\(old.name).\(property.name) is \(was.summary) in the store and \(property.summary) "
                                + "in the schema; a custom MigrationStage can replace it")
                    }
                }
                // A property the store does not have.
                if property.flags & 2 != 0 {
                    guard property.flags & 4 == 0 || property.flags & 1 != 0 else {
                        throw Refusal("\(old.name).\(property.name) is a new to-one relationship that is not optional")
                    }
                    sources.append(.value(property.flags & 4 != 0 ? .null : .array([])))
                } else if property.flags & 1 != 0 {
                    sources.append(.value(.null))
                } else if let metadata, let defaultValue = metadata.defaultValue {
                    guard let value = try? metadata.encode(defaultValue) else {
                        throw Refusal("\(old.name).\(property.name)'s default value cannot be stored")
                    }
                    sources.append(.value(value))
                } else {
                    throw Refusal("\(old.name).\(property.name) is new, not optional, and has no default value")
                }
            }
            conversion.entities[old.name] = sources
        }
        return conversion
    }

    /// A conversion worked out beforehand for a store whose schema is `from`: a migration
    /// plan's chain of lightweight stages (``MigrationRunner/lightweightChain(containerSchema:)``).
    /// Opening a store whose schema is another ignores it.
    struct Planned: Sendable {
        var from: StoredSchema
        var conversion: SchemaConversion
        /// The stages it makes, named for errors: "the stage from 1.0.0 to 2.0.0", "the
        /// stages from 1.0.0 to 2.0.0 and 2.0.0 to 3.0.0".
        var name: String

        /// `error`, thrown by an open that made this conversion, as the migration's failure.
        func failure(_ error: any Error, path: String) -> any Error {
            guard let error = error as? DataStoreError, error.code == .schemaMismatch else { return error }
            return DataStoreError(
                .migrationFailed,
                "\(name) cannot convert \(path): \(error.message); the store is unchanged, at version "
                    + from.versionText,
                underlying: error)
        }
    }

    /// Why the schemas need a migration.
    package struct Refusal: Error {
        package let reason: String
        init(_ reason: String) { self.reason = reason }
    }

    /// A record of `entity` as the container's schema has it.
    func convert(_ snapshot: DefaultSnapshot, of entity: String) -> DefaultSnapshot {
        guard let sources = entities[entity] else { return snapshot }
        let values = sources.map { source -> SnapshotValue in
            switch source {
            case .stored(let position): position < snapshot.values.count ? snapshot.values[position] : .null
            case .value(let value): value
            }
        }
        return DefaultSnapshot(persistentIdentifier: snapshot.persistentIdentifier, values: values)
    }
}

/// Records held by location in a store of the old layout, converted as they are read: the
/// source of the table a converting open builds (the log store from format version 4), so
/// that building its indexes and the rewrite read one record at a time instead of holding
/// every converted record in memory.
final class ConvertingSnapshotSource: SnapshotSource {
    let base: any SnapshotSource
    let conversion: SchemaConversion

    init(_ base: any SnapshotSource, _ conversion: SchemaConversion) {
        self.base = base
        self.conversion = conversion
    }

    func snapshot(entity: String, key: Int64, at location: RowLocation) throws -> DefaultSnapshot {
        conversion.convert(try base.snapshot(entity: entity, key: key, at: location), of: entity)
    }

    func snapshotWithoutExternalValues(entity: String, key: Int64, at location: RowLocation) throws
        -> DefaultSnapshot
    {
        conversion.convert(try base.snapshotWithoutExternalValues(entity: entity, key: key, at: location), of: entity)
    }
}
