import Foundation
import Stowage

/// A migration plan's stages from the database's version to the container's, when each is
/// lightweight (`Formats/postgres.md`, "A changed schema"): one conversion per stage, in
/// order, in the opening transaction.
struct PostgresPlannedConversion {
    let plan: any SchemaMigrationPlan.Type

    /// Converts the tables from `recorded` (a version of the plan) to `live` (its last).
    /// - Throws: `.schemaMismatch` when `recorded` is not a version of the plan before the
    ///   last one, or the plan is not consecutive; `.unsupportedFeature` for a custom stage
    ///   on the way; `.migrationFailed` when a stage cannot convert (the tables are then
    ///   unchanged: the transaction is rolled back).
    func convert(_ connection: PostgresConnection, from recorded: StoredSchema, to live: StoredSchema) throws {
        let versions = plan.schemas
        let described = versions.map { StoredSchema(Schema(versionedSchema: $0)) }
        guard let last = described.last, last.version == live.version, last.hasSameShape(as: live) else {
            throw DataStoreError(
                .schemaMismatch,
                "the PostgreSQL database's tables are at version \(recorded.versionText), and the container's schema "
                    + "(version \(live.versionText)) is not the migration plan's last version")
        }
        guard
            let start = described.lastIndex(where: { $0.version == recorded.version && $0.hasSameShape(as: recorded) })
                ?? described.lastIndex(where: { $0.version == recorded.version }),
            start < described.count - 1
        else {
            throw DataStoreError(
                .schemaMismatch,
                "the PostgreSQL database's tables are at version \(recorded.versionText), which is not a version "
                    + "before \(live.versionText) in the migration plan (\(described.map(\.versionText).joined(separator: ", ")))"
            )
        }
        var stages: [Int: MigrationStage] = [:]
        let position = Dictionary(
            versions.enumerated().map { (ObjectIdentifier($0.element), $0.offset) }, uniquingKeysWith: { a, _ in a })
        for stage in plan.stages {
            let from: any VersionedSchema.Type
            let to: any VersionedSchema.Type
            switch stage {
            case .lightweight(let a, let b): (from, to) = (a, b)
            case .custom(let a, let b, _, _): (from, to) = (a, b)
            }
            guard let a = position[ObjectIdentifier(from)], position[ObjectIdentifier(to)] == a + 1, stages[a] == nil
            else {
                throw DataStoreError(
                    .schemaMismatch,
                    "the migration plan's stage from \(from.versionIdentifier) to \(to.versionIdentifier) is not one "
                        + "of consecutive versions of its schemas, or not the only one from its version")
            }
            stages[a] = stage
        }
        for step in start..<(versions.count - 1) {
            let next = Schema(versionedSchema: versions[step + 1])
            let name = "the stage from \(versions[step].versionIdentifier) to \(versions[step + 1].versionIdentifier)"
            if case .custom? = stages[step] {
                throw DataStoreError(
                    .unsupportedFeature,
                    "\(name) is a custom MigrationStage, which PostgresStore does not run yet; the tables are unchanged, "
                        + "at version \(recorded.versionText)")
            }
            let tables = try PostgresTables(next)
            do {
                try PostgresLightweight(connection: connection, tables: tables, schema: next)
                    .convert(
                        from: step == start ? recorded : described[step], to: described[step + 1], acrossVersions: true)
            } catch let error as DataStoreError where error.code == .schemaMismatch {
                throw DataStoreError(
                    .migrationFailed,
                    "\(name) cannot convert the PostgreSQL database's tables: \(error.message); they are unchanged, at "
                        + "version \(recorded.versionText)", underlying: error)
            }
        }
    }
}

/// What SwiftData's lightweight migration does by itself, on a database's tables
/// (`Formats/postgres.md`, "A changed schema"): the changes Stowage's other stores convert
/// within one schema version (`SchemaConversion`), made with `CREATE`, `ALTER` and `DROP`
/// in the transaction that opens the store, under its advisory lock, so that the tables
/// change whole or not at all and processes opening at once change them once.
struct PostgresLightweight {
    let connection: PostgresConnection
    let tables: PostgresTables
    let schema: Schema

    /// Brings the tables from `recorded` (the schema `stowage_metadata` holds) to `live` (the
    /// container's), or throws `.schemaMismatch` saying why it needs a migration: another
    /// type, a new non-optional property without a default, a new uniqueness constraint the
    /// rows break, an entity the schema lacks whose table holds rows, another version.
    func convert(from recorded: StoredSchema, to live: StoredSchema, acrossVersions: Bool = false) throws {
        let conversion: SchemaConversion
        do {
            conversion = try SchemaConversion.make(
                from: recorded, to: live, schema: schema,
                options: SchemaConversion.Options(acrossVersions: acrossVersions))
        } catch {
            throw DataStoreError(.schemaMismatch, "the PostgreSQL database holds another schema: \(error.reason)")
        }
        let old = Dictionary(recorded.entities.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        for name in conversion.droppedEntities.sorted() {
            let rows = try connection.execute("SELECT count(*) FROM \(quote(name))")
            let count = rows.text(0, 0).flatMap(Int.init) ?? 0
            guard count == 0 else {
                throw DataStoreError(
                    .schemaMismatch,
                    "the PostgreSQL database holds another schema: "
                        + SchemaConversion.refusal(dropping: name, records: count))
            }
        }
        var later: [String] = []
        // New entities: their tables first, their keys, join tables and indexes once every
        // table is there.
        let added = live.entities.filter { old[$0.name] == nil }.compactMap { tables.entities[$0.name] }
        for table in added { try connection.run(table.createTable) }
        for table in added {
            later +=
                table.createForeignKeys(tables.entities) + table.createJoinTables(tables.entities)
                + table.createIndexes
        }
        for entity in live.entities {
            guard let before = old[entity.name], let table = tables.entities[entity.name],
                let sources = conversion.entities[entity.name]
            else { continue }
            later += try alter(table, from: before, to: entity, sources: sources)
        }
        for statement in later { try connection.run(statement) }
        for name in conversion.droppedEntities.sorted() {
            for property in old[name]?.properties ?? [] where property.flags & 6 == 2 {
                try connection.run("DROP TABLE IF EXISTS \(quote("\(name).\(property.name)"))")
            }
            try connection.run("DROP TABLE IF EXISTS \(quote(name)) CASCADE")
        }
    }

    /// Alters one entity's table and join tables from `before` to `after`; returns the
    /// statements that must wait until every table is there (foreign keys, join tables).
    private func alter(
        _ table: PostgresEntityTable, from before: StoredSchema.Entity, to after: StoredSchema.Entity,
        sources: [SchemaConversion.Source]
    ) throws -> [String] {
        let name = quote(table.name)
        var later: [String] = []
        var used = Set<Int>()
        for case .stored(let from) in sources { used.insert(from) }
        // Properties the schema no longer has: their columns and join tables go (with the
        // indexes and constraints on them).
        for (position, property) in before.properties.enumerated() where !used.contains(position) {
            if property.flags & 6 == 2 {
                try connection.run("DROP TABLE IF EXISTS \(quote("\(table.name).\(property.name)"))")
            } else {
                try connection.run("ALTER TABLE \(name) DROP COLUMN IF EXISTS \(quote(property.name))")
            }
        }
        var renamed: [String: String] = [:]
        for (position, source) in sources.enumerated() where position < after.properties.count {
            let property = after.properties[position]
            let isToMany = property.flags & 6 == 2
            switch source {
            case .stored(let from):
                let was = before.properties[from]
                if was.name != property.name {
                    renamed[was.name] = property.name
                    if isToMany {
                        try connection.run(
                            "ALTER TABLE \(quote("\(table.name).\(was.name)")) RENAME TO "
                                + quote("\(table.name).\(property.name)"))
                    } else {
                        try connection.run(
                            "ALTER TABLE \(name) RENAME COLUMN \(quote(was.name)) TO \(quote(property.name))")
                    }
                }
                if !isToMany, was.flags & 1 == 0, property.flags & 1 != 0 {
                    try connection.run("ALTER TABLE \(name) ALTER COLUMN \(quote(property.name)) DROP NOT NULL")
                }
            case .value(let value):
                if isToMany {
                    later += table.createJoinTables(tables.entities).filter {
                        $0.contains(quote("\(table.name).\(property.name)"))
                    }
                    continue
                }
                guard let column = table.column(named: property.name) else { continue }
                let quoted = quote(column.name)
                try connection.run("ALTER TABLE \(name) ADD COLUMN \(quoted) \(column.kind.sqlType)")
                if let text = try PostgresValues.parameter(value, column.kind, column: column.name) {
                    try connection.execute(
                        "UPDATE \(name) SET \(quoted) = \(PostgresValues.placeholder(1, column.kind))", [text])
                    // The column keeps the default, so that a program that inserts without it
                    // (an older build of the app still running) gets it too. The server quotes
                    // the value into the statement (`format`'s `%L`): no value is spliced here.
                    let literal =
                        column.kind == .timestamp ? "to_timestamp(%L::double precision)" : "%L::\(column.kind.castType)"
                    let template =
                        "ALTER TABLE \(name) ALTER COLUMN \(quoted) SET DEFAULT ".replacingOccurrences(
                            of: "%", with: "%%")
                        + literal
                    let made = try connection.execute("SELECT format($1::text, $2::text)", [template, text])
                    if let statement = made.text(0, 0) { try connection.run(statement) }
                }
                if !column.isOptional {
                    try connection.run("ALTER TABLE \(name) ALTER COLUMN \(quoted) SET NOT NULL")
                }
                if case .reference = column.kind {
                    later += table.createForeignKeys(tables.entities).filter { $0.contains("(\(quoted))") }
                }
            }
        }
        // Indexes: the ones the schema no longer has go, the new ones are made.
        let kept = Set(table.indexNames)
        for group in before.indices where !before.uniqueness.contains(group) {
            let old = PostgresEntityTable.indexName(table.name, group)
            if !kept.contains(old) { try connection.run("DROP INDEX IF EXISTS \(quote(old))") }
        }
        later += table.createIndexes
        // Uniqueness constraints, by their columns (renames applied): the ones the schema no
        // longer has go; a new one is checked by the server against the rows.
        let now = before.uniqueness.map { $0.map { renamed[$0] ?? $0 } }
        for group in now where !after.uniqueness.contains(group) {
            let found = try connection.execute(
                """
                SELECT c.conname FROM pg_constraint c WHERE c.conrelid = $1::regclass AND c.contype = 'u' \
                AND ARRAY(SELECT a.attname::text FROM unnest(c.conkey) WITH ORDINALITY AS k(n, o) \
                JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.n ORDER BY k.o) = $2::text[]
                """, [name, PostgresValues.arrayLiteral(group)])
            for row in 0..<found.count {
                guard let constraint = found.text(row, 0) else { continue }
                try connection.run("ALTER TABLE \(name) DROP CONSTRAINT \(quote(constraint))")
            }
        }
        for group in after.uniqueness where !now.contains(group) {
            do {
                try connection.run("ALTER TABLE \(name) ADD UNIQUE (\(group.map(quote).joined(separator: ", ")))")
            } catch let error as PostgresError where error.isUniqueViolation {
                throw DataStoreError(
                    .schemaMismatch,
                    "the PostgreSQL database holds another schema: \(table.name) adds the uniqueness constraint "
                        + "(\(group.joined(separator: ", "))), which its rows break")
            }
        }
        return later
    }
}
