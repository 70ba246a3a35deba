import Foundation
import Stowage
import Synchronization

/// A store in a PostgreSQL database, through libpq: the same `@Model` classes and
/// `#Predicate` queries as Stowage's other stores, on a database several processes and
/// machines share. Open it with a ``PostgresStoreConfiguration``.
///
/// - **Tables.** One per entity (one per class hierarchy, named as its root, with an
///   `"@entity"` column naming each row's entity), with a column per attribute in a faithful type (`uuid`,
///   `timestamptz`, `numeric`, `bytea`; `jsonb` for arrays, dictionaries and `Codable`
///   values), foreign keys for to-one relationships, a join table per to-many
///   relationship, `CREATE INDEX` for `#Index` and `UNIQUE` for `#Unique` and `.unique`
///   (`PostgresTables`). The first open creates them, under an advisory lock, so that
///   processes opening at once create them once; later opens compare the schema recorded
///   in the `stowage_metadata` table with the container's.
/// - **Saves.** One SQL transaction per save, each entity's inserts, updates and deletes one
///   statement apiece (rows travel as array parameters spread by `unnest`). Unique upserts
///   and `.fail` as on every store; a save that meets a row another process inserted at
///   the same moment is run again, and then upserts or fails as it should.
/// - **Fetches.** The predicate's parts SQL can say exactly become `WHERE` with bound
///   parameters (never values in the text), with `ORDER BY`, `LIMIT`, `OFFSET` and
///   `count(*)`; the rest is tested in memory (`explain` says which went where, and shows
///   PostgreSQL's plan).
/// - **Connections.** A pool of connections (``PostgresStoreConfiguration/idleConnections``).
///   A connection that fails is dropped: the call it served throws `DataStoreError`
///   `.ioFailure`, and the next call connects again.
///
/// - **History.** With ``PostgresStoreConfiguration/keepsHistory``, each save adds a
///   transaction to the `stowage_history` table in its own SQL transaction, numbered in
///   commit order, which every process's `fetchHistory` reads.
///
/// Where it differs from the other stores: dates are kept to the microsecond (PostgreSQL's
/// `timestamptz`); text is compared as bytes; a changed schema is converted within one
/// version (as lightweight migration does, with `ALTER TABLE` in the opening transaction),
/// and a migration plan's lightweight stages run the same way, but not yet for a schema with
/// a class hierarchy (opening throws `.schemaMismatch`), and custom migration stages are not
/// supported yet (opening throws `.unsupportedFeature`); models of a hierarchy fetched
/// without a sort, or that tie on one, come back in key order, not each entity's together;
/// history
/// is kept only when asked for. Stowage's own: SwiftData has no PostgreSQL store.
public final class PostgresStore: DataStoreBatching, @unchecked Sendable {
    // @unchecked Sendable: the only mutable state is the pool, behind its Mutex; each
    // connection is used by one call at a time.
    /// The store is opened by a ``PostgresStoreConfiguration``.
    public typealias Configuration = PostgresStoreConfiguration
    /// The store reads and writes Stowage's `DefaultSnapshot`s.
    public typealias Snapshot = DefaultSnapshot

    /// The configuration the store was opened with.
    public let configuration: PostgresStoreConfiguration
    /// The database's own identifier, made when its tables were created and kept in
    /// `stowage_metadata`, so that identifiers agree between processes.
    public let identifier: String
    /// The models the database holds.
    public let schema: Schema
    let tables: PostgresTables
    /// Each entity's identifier with key 0, made once: ``permanent(_:_:)`` gives it other
    /// keys without interning the entity's and the store's names again (a lock and two
    /// string hashes, a visible part of a point fetch).
    private let prototypes: [String: PersistentIdentifier]
    private let pool = PosixMutex<[PostgresConnection]>([])
    /// Primary keys taken from the `stowage_pk` sequence and not used yet, in order.
    private let spareKeys = PosixMutex<[Int64]>([])
    /// How many keys a save takes from the sequence at least: most saves then take none.
    static let keyBlock = 256

    /// The version of `Formats/postgres.md` the tables follow: 3 for a schema with a class
    /// hierarchy (one table per hierarchy), else 2, so that builds before layout 3 still
    /// open the databases they could.
    static let layout = "2"
    static let hierarchyLayout = "3"

    /// A key for `pg_advisory_xact_lock` while a save writes its history row, held until it
    /// commits, so that transaction identifiers increase in commit order.
    static let historyLock: Int64 = creationLock + 3

    /// A key for `pg_advisory_xact_lock` while the tables are made ("stowage").
    static let creationLock: Int64 = 0x73_74_6f_77_61_67_65

    /// Connects to the database and makes the tables if there are none (under an advisory
    /// lock, so that processes opening an empty database at once make them once), or
    /// checks that the tables there are this schema's, converting them within one schema
    /// version as lightweight migration does, or through `migrationPlan`'s lightweight stages
    /// (`Formats/postgres.md`, "A changed schema").
    /// - Throws: `DataStoreError` `.ioFailure` when the server cannot be reached,
    ///   `.schemaMismatch` when the database holds another schema that needs a migration, `.wrongFormat` for tables
    ///   Stowage did not make or of a later layout, `.unsupportedFeature` for a custom
    ///   migration stage to run, `.migrationFailed` for a
    ///   plan's stage that cannot convert the tables.
    public init(_ configuration: PostgresStoreConfiguration, migrationPlan: (any SchemaMigrationPlan.Type)?) throws {
        try configuration.validate()
        self.configuration = configuration
        let schema = configuration.schema ?? Schema()
        self.schema = schema
        tables = try PostgresTables(schema)
        let connection = try PostgresConnection(configuration.url, connectTimeout: configuration.connectTimeout)
        let identifier = try Self.prepare(connection, tables: tables, schema: schema, migrationPlan: migrationPlan)
        self.identifier = identifier
        prototypes = tables.entities.mapValues { table in
            .permanent(entityName: table.name, storeIdentifier: identifier, primaryKey: 0)
        }
        pool.withLock { $0.append(connection) }
    }

    /// The identifier of the row with `key` in `entity`'s table.
    func permanent(_ entity: String, _ key: Int64) -> PersistentIdentifier {
        guard let prototype = prototypes[entity] else {
            return .permanent(entityName: entity, storeIdentifier: identifier, primaryKey: key)
        }
        return prototype.withPrimaryKey(key)
    }

    /// Creates the tables if they are not there, or checks that they are this schema's;
    /// returns the database's identifier.
    private static func prepare(
        _ connection: PostgresConnection, tables: PostgresTables, schema: Schema,
        migrationPlan: (any SchemaMigrationPlan.Type)?
    ) throws -> String {
        do {
            try connection.run("BEGIN")
            try connection.execute("SELECT pg_advisory_xact_lock(\(creationLock))")
            try connection.run(
                "CREATE TABLE IF NOT EXISTS stowage_metadata (\"key\" text PRIMARY KEY, \"value\" text NOT NULL)")
            let rows = try connection.execute(
                "SELECT \"key\", \"value\" FROM stowage_metadata WHERE \"key\" IN ('identifier', 'schema', 'layout')")
            var stored: [String: String] = [:]
            for row in 0..<rows.count {
                if let key = rows.text(row, 0) { stored[key] = rows.text(row, 1) }
            }
            let live = PostgresSchemaRecord(schema)
            let identifier: String
            let layout = tables.hasHierarchy ? Self.hierarchyLayout : Self.layout
            if let found = stored["layout"], found != layout {
                guard found == "1" || found == Self.layout || found == Self.hierarchyLayout else {
                    throw DataStoreError(
                        .wrongFormat,
                        "the PostgreSQL database's tables are of layout \(found), this Stowage reads layouts 1 to "
                            + "\(Self.hierarchyLayout) (Formats/postgres.md)")
                }
                // A hierarchy's entities share a table (layout 3); converting the tables of
                // separate entities into one, or back, is not done yet.
                guard found != Self.hierarchyLayout, !tables.hasHierarchy else {
                    throw DataStoreError(
                        .schemaMismatch,
                        tables.hasHierarchy
                            ? "the PostgreSQL database's tables (layout \(found)) have no class hierarchy, and the "
                                + "container's schema has one: converting tables into a hierarchy's table is not "
                                + "done yet for class hierarchies"
                            : "the PostgreSQL database's tables (layout 3) hold a class hierarchy, and the container's "
                                + "schema has none: converting a hierarchy's table is not done yet for class hierarchies"
                    )
                }
            }
            if stored["layout"] == "1" {
                // Layout 1 had no history: its table is added, and the layout moves on.
                for statement in PostgresTables.historyScript { try connection.run(statement) }
                try connection.execute(
                    "UPDATE stowage_metadata SET \"value\" = $1 WHERE \"key\" = 'layout'", [Self.layout])
            }
            if let existing = stored["identifier"], let text = stored["schema"] {
                guard let recorded = PostgresSchemaRecord(json: text) else {
                    throw DataStoreError(
                        .wrongFormat, "the database's stowage_metadata holds a schema Stowage cannot read")
                }
                if let difference = recorded.difference(from: live) {
                    if recorded.hasHierarchy || live.hasHierarchy {
                        throw DataStoreError(
                            .schemaMismatch,
                            "the PostgreSQL database holds another schema (\(difference)); PostgresStore converts "
                                + "a changed schema, but not yet for class hierarchies")
                    }
                    try convert(
                        connection, from: recorded, text: text, to: live, tables: tables, schema: schema,
                        plan: recorded.version == live.version ? nil : migrationPlan)
                }
                if tables.hasHierarchy { try addEntityIndexes(connection, tables) }
                identifier = existing
            } else {
                // Tables of these names that Stowage did not make (no metadata says so) are
                // another program's: refuse them rather than write rows they do not fit.
                let names = tables.tableNames
                let existing = try connection.execute(
                    "SELECT relname FROM pg_class WHERE relkind IN ('r', 'p', 'v') "
                        + "AND relnamespace = current_schema()::regnamespace AND relname = ANY($1::text[])",
                    [PostgresValues.arrayLiteral(names)])
                if let foreign = existing.text(0, 0) {
                    throw DataStoreError(
                        .wrongFormat,
                        "the PostgreSQL database has a table \"\(foreign)\" that Stowage did not make "
                            + "(no stowage_metadata); open another database or schema")
                }
                for statement in tables.creationScript { try connection.run(statement) }
                identifier = "postgres-" + UUID().uuidString.lowercased()
                try connection.execute(
                    "INSERT INTO stowage_metadata (\"key\", \"value\") VALUES ('identifier', $1), ('schema', $2), "
                        + "('layout', $3)",
                    [identifier, live.json, layout])
            }
            try connection.run("COMMIT")
            return identifier
        } catch let error as PostgresError {
            try? connection.run("ROLLBACK")
            throw Self.storeError(error, doing: "preparing the tables")
        } catch {
            try? connection.run("ROLLBACK")
            throw error
        }
    }

    /// Makes the `"@entity"` index of each hierarchy's table that lacks it: a layout-3
    /// database made before the index was (`Formats/postgres.md`, "A table per class
    /// hierarchy"). A look-up first, so that an open that finds them all takes no lock on
    /// the tables.
    private static func addEntityIndexes(_ connection: PostgresConnection, _ tables: PostgresTables) throws {
        let hierarchies = tables.hierarchies.values.sorted { $0.root < $1.root }
        let missing = try connection.execute(
            "SELECT name FROM unnest($1::text[]) AS name WHERE to_regclass(quote_ident(name)) IS NULL",
            [PostgresValues.arrayLiteral(hierarchies.map(\.entityIndex))])
        let names = Set((0..<missing.count).compactMap { missing.text($0, 0) })
        for hierarchy in hierarchies where names.contains(hierarchy.entityIndex) {
            try connection.run(hierarchy.createEntityIndex)
        }
    }

    /// Converts the tables from the `recorded` schema (whose JSON is `text`) to `live`
    /// within one version, in the open's transaction (`Formats/postgres.md`, "A changed
    /// schema"), and records the change; refuses a schema the tables were converted from.
    private static func convert(
        _ connection: PostgresConnection, from recorded: PostgresSchemaRecord, text: String,
        to live: PostgresSchemaRecord, tables: PostgresTables, schema: Schema, plan: (any SchemaMigrationPlan.Type)?
    ) throws {
        let rows = try connection.execute("SELECT \"value\" FROM stowage_metadata WHERE \"key\" = 'replaced'")
        var replaced: [String] = []
        if let list = rows.text(0, 0) {
            guard let decoded = try? JSONDecoder().decode([String].self, from: Data(list.utf8)) else {
                throw DataStoreError(
                    .wrongFormat, "the database's stowage_metadata holds a replaced list Stowage cannot read")
            }
            replaced = decoded
        }
        // Within one version (no plan's version order to go by), a schema the tables were
        // converted from is an older build's.
        if plan == nil, replaced.contains(PostgresSchemaRecord.hash(live.json)) {
            throw DataStoreError(
                .schemaMismatch,
                "the PostgreSQL database's tables were converted from this schema to another one (by a later build "
                    + "of the app?); converting them back would drop that build's columns. To go back on purpose, "
                    + "delete the 'replaced' row of stowage_metadata")
        }
        if let plan {
            try PostgresPlannedConversion(plan: plan).convert(connection, from: recorded.stored, to: live.stored)
        } else {
            try PostgresLightweight(connection: connection, tables: tables, schema: schema)
                .convert(from: recorded.stored, to: live.stored)
        }
        let hash = PostgresSchemaRecord.hash(text)
        if !replaced.contains(hash) { replaced.append(hash) }
        let list = String(decoding: (try? JSONEncoder().encode(replaced)) ?? Data("[]".utf8), as: UTF8.self)
        try connection.execute(
            "INSERT INTO stowage_metadata (\"key\", \"value\") VALUES ('schema', $1), ('replaced', $2) "
                + "ON CONFLICT (\"key\") DO UPDATE SET \"value\" = excluded.\"value\"",
            [live.json, list])
    }

    // MARK: Connections

    /// Runs `body` on a connection from the pool (or a new one). A connection that failed
    /// is dropped, and so is every idle one, which may have failed with it (a restarted
    /// server); a read that failed that way on a pooled connection is tried once more on a
    /// new connection.
    @discardableResult
    func withConnection<R>(retryingReads: Bool = false, _ body: (PostgresConnection) throws -> R) throws -> R {
        let pooled = pool.withLock { $0.popLast() }
        let connection =
            try pooled ?? PostgresConnection(configuration.url, connectTimeout: configuration.connectTimeout)
        do {
            let result = try body(connection)
            give(back: connection)
            return result
        } catch let error as PostgresError {
            give(back: connection)
            guard connection.isBroken else { throw Self.storeError(error, doing: "a statement") }
            pool.withLock { $0.removeAll() }
            guard retryingReads, pooled != nil else { throw Self.storeError(error, doing: "a statement") }
            return try withConnection(retryingReads: false, body)
        } catch {
            give(back: connection)
            throw error
        }
    }

    private func give(back connection: PostgresConnection) {
        if connection.isInTransaction { try? connection.run("ROLLBACK") }
        guard !connection.isBroken, !connection.isInTransaction else { return }
        pool.withLock { if $0.count < configuration.idleConnections { $0.append(connection) } }
    }

    static func storeError(_ error: PostgresError, doing what: String) -> any Error {
        if error.isUniqueViolation { return SwiftDataError(.uniqueConstraintViolation, error.message) }
        if error.isConnectionFailure {
            return DataStoreError(.ioFailure, "the connection to PostgreSQL failed during \(what): \(error)")
        }
        return DataStoreError(.ioFailure, "PostgreSQL refused \(what): \(error)")
    }

    /// `count` new primary keys, in increasing order: from the ones this store took from
    /// the `stowage_pk` sequence before, and when they run out, a block of at least
    /// ``keyBlock`` more (one statement). Keys another process takes meanwhile are other
    /// numbers; a failed save's keys are not used again.
    func keys(_ count: Int, on connection: PostgresConnection) throws -> [Int64] {
        guard count > 0 else { return [] }
        if let taken = spareKeys.withLock({ spare -> [Int64]? in
            guard spare.count >= count else { return nil }
            defer { spare.removeFirst(count) }
            return Array(spare.prefix(count))
        }) {
            return taken
        }
        let rows = try connection.execute(
            "SELECT nextval('stowage_pk') FROM generate_series(1, $1::integer)", [String(max(count, Self.keyBlock))])
        let fresh = (0..<rows.count).compactMap { rows.text($0, 0).flatMap(Int64.init) }
        guard fresh.count >= count else {
            throw DataStoreError(.ioFailure, "the stowage_pk sequence gave too few keys")
        }
        // The spare keys are smaller than the fresh ones: they go first, and the fresh
        // ones left over become the spares.
        return spareKeys.withLock { spare in
            let fromSpare = min(count, spare.count)
            let taken = Array(spare.prefix(fromSpare) + fresh.prefix(count - fromSpare))
            spare = Array(spare.dropFirst(fromSpare) + fresh.dropFirst(count - fromSpare))
            return taken
        }
    }

    func table(_ name: String) throws -> PostgresEntityTable {
        guard let table = tables.entities[name] else {
            throw SwiftDataError(.unknownModelType, "\(name) is not in the store's schema")
        }
        return table
    }

    // MARK: Reading

    /// The rows the request's descriptor selects: what SQL can say of the predicate, sort and
    /// window runs on the server, the rest in memory on the rows that come back.
    public func fetch<T: PersistentModel>(_ request: DataStoreFetchRequest<T>) throws
        -> DataStoreFetchResult<T, DefaultSnapshot>
    {
        DataStoreFetchResult(descriptor: request.descriptor, fetchedSnapshots: try snapshots(request.query))
    }

    /// The snapshots `query` selects, in its order and window.
    func snapshots(_ query: FetchQuery) throws -> [DefaultSnapshot] {
        let table = try table(query.entity.name)
        let plan = PostgresQueryPlan(query, table: table, store: identifier)
        guard plan.orderBy != nil || query.sort.isEmpty else { throw DataStoreError.preferInMemorySort }
        var rows = try withConnection(retryingReads: true) { connection in
            try read(table, plan.select(table.selectList, from: table), plan.statement.parameters, on: connection)
        }
        if let residual = plan.residual {
            var evaluator = QueryEvaluator(resolve: { [unowned self] id in try self.snapshots(for: [id])[id] })
            rows = try rows.filter { try evaluator.matches($0, residual, root: plan.root) }
            let start = min(plan.offset, rows.count)
            let end = plan.limit.map { min(rows.count, start + $0) } ?? rows.count
            rows = Array(rows[start..<end])
        }
        return rows
    }

    /// Runs a `SELECT` of `table.selectList` and makes snapshots of its rows, with their
    /// to-many relationships read from the join tables. A row of a hierarchy's table
    /// becomes a snapshot of its own entity (its `"@entity"`).
    func read(
        _ table: PostgresEntityTable, _ sql: String, _ parameters: [String?], on connection: PostgresConnection
    ) throws -> [DefaultSnapshot] {
        let result = try connection.execute(sql, parameters, binary: true)
        /// Each entity's table and template identifiers, found once.
        struct Shape {
            let table: PostgresEntityTable
            let entity: PersistentIdentifier
            let references: [PersistentIdentifier?]
        }
        var shapes: [String: Shape] = [:]
        func shape(_ name: String) throws -> Shape {
            if let known = shapes[name] { return known }
            guard let rowTable = tables.entities[name], rowTable.sqlName == table.sqlName else {
                throw DataStoreError(
                    .corruptStore, "\(table.sqlName) has a row of \(name), which is not an entity of its hierarchy")
            }
            let made = Shape(
                table: rowTable,
                entity: permanent(rowTable.name, 0),
                references: rowTable.columns.map { column -> PersistentIdentifier? in
                    guard case .reference(let destination) = column.kind else { return nil }
                    return permanent(destination, 0)
                })
            shapes[name] = made
            return made
        }
        var keys: [Int64] = []
        keys.reserveCapacity(result.count)
        var values: [[SnapshotValue]] = []
        values.reserveCapacity(result.count)
        // A table outside a hierarchy has one shape for every row.
        let fixedShape = table.isDiscriminated ? nil : try shape(table.name)
        var rowShapes: [Shape] = []
        if fixedShape == nil { rowShapes.reserveCapacity(result.count) }
        for row in 0..<result.count {
            guard let key = result.bytes(row, 0).flatMap(PostgresValues.integer) else {
                throw DataStoreError(.corruptStore, "\(table.sqlName) has a row without a primary key")
            }
            let rowShape: Shape
            if let fixedShape {
                rowShape = fixedShape
            } else {
                guard let name = result.text(row, 1) else {
                    throw DataStoreError(.corruptStore, "\(table.sqlName) has a row without an entity")
                }
                rowShape = try shape(name)
                rowShapes.append(rowShape)
            }
            let rowTable = rowShape.table
            var record = [SnapshotValue](repeating: .null, count: rowTable.propertyCount)
            for (i, column) in rowTable.columns.enumerated() {
                guard let bytes = result.bytes(row, rowTable.positions[i]) else { continue }
                var reference = rowShape.references[i]
                if let position = rowTable.entityPositions[i], let entity = result.text(row, position) {
                    reference = permanent(entity, 0)
                }
                record[column.index] = try PostgresValues.value(
                    binary: bytes, column.kind, reference: reference, store: identifier)
            }
            for relationship in rowTable.toMany { record[relationship.index] = .array([]) }
            keys.append(key)
            values.append(record)
        }
        // The rows of each join table: a relationship a hierarchy's entities inherit has
        // one, read once for all of them.
        var joins: [String: (relationship: PostgresEntityTable.ToMany, rows: [Int])] = [:]
        if let fixedShape, !keys.isEmpty {
            for relationship in fixedShape.table.toMany {
                joins[relationship.table] = (relationship, Array(keys.indices))
            }
        }
        for (i, rowShape) in rowShapes.enumerated() {
            for relationship in rowShape.table.toMany {
                joins[relationship.table, default: (relationship, [])].rows.append(i)
            }
        }
        for (joinTable, join) in joins.sorted(by: { $0.key < $1.key }) {
            let relationship = join.relationship
            let position = Dictionary(join.rows.map { (keys[$0], $0) }, uniquingKeysWith: { a, _ in a })
            let list = PostgresValues.arrayLiteral(join.rows.map { String(keys[$0]) })
            // A target of a hierarchy's entities: its row tells its entity.
            let targetRoot = tables.entities[relationship.destination].flatMap { $0.isDiscriminated ? $0.sqlName : nil }
            let sql =
                targetRoot.map {
                    "SELECT j.\"owner\", j.\"target\", r.\"@entity\" FROM \(quote(joinTable)) AS j "
                        + "JOIN \(quote($0)) AS r ON r.\"pk\" = j.\"target\" WHERE j.\"owner\" = ANY($1::bigint[]) "
                        + "ORDER BY j.\"owner\", j.\"position\""
                }
                ?? "SELECT \"owner\", \"target\" FROM \(quote(joinTable)) WHERE \"owner\" = ANY($1::bigint[]) "
                + "ORDER BY \"owner\", \"position\""
            let targets = try connection.execute(sql, [list])
            var lists: [Int64: [SnapshotValue]] = [:]
            // Outside a hierarchy every target is of the destination: one prototype for all.
            let destination = permanent(relationship.destination, 0)
            for row in 0..<targets.count {
                guard let owner = targets.text(row, 0).flatMap(Int64.init),
                    let target = targets.text(row, 1).flatMap(Int64.init)
                else { continue }
                let id =
                    targetRoot == nil
                    ? destination.withPrimaryKey(target)
                    : permanent(targets.text(row, 2) ?? relationship.destination, target)
                lists[owner, default: []].append(.identifier(id))
            }
            for (owner, items) in lists {
                if let i = position[owner] { values[i][relationship.index] = .array(items) }
            }
        }
        if let fixedShape {
            return zip(keys, values).map { key, record in
                DefaultSnapshot(persistentIdentifier: fixedShape.entity.withPrimaryKey(key), values: record)
            }
        }
        return zip(rowShapes, zip(keys, values)).map { rowShape, row in
            DefaultSnapshot(persistentIdentifier: rowShape.entity.withPrimaryKey(row.0), values: row.1)
        }
    }

    /// The number of rows the request's descriptor selects: `count(*)` on the server when SQL
    /// can say the whole predicate, else a fetch counted in memory.
    public func fetchCount<T: PersistentModel>(_ request: DataStoreFetchRequest<T>) throws -> Int {
        let query = request.query
        let table = try table(query.entity.name)
        let plan = PostgresQueryPlan(query, table: table, store: identifier)
        guard plan.residual == nil else { return try snapshots(unsorted(query)).count }
        let total = try withConnection(retryingReads: true) { connection in
            let rows = try connection.execute(
                "SELECT count(*) FROM \(quote(table.sqlName))\(plan.whereClause)", plan.statement.parameters)
            return rows.text(0, 0).flatMap(Int.init) ?? 0
        }
        let afterOffset = max(0, total - query.offset)
        return query.limit.map { min($0, afterOffset) } ?? afterOffset
    }

    /// The identifiers of the rows the request's descriptor selects, in its order: only the
    /// keys come back when the server can apply the whole descriptor.
    public func fetchIdentifiers<T: PersistentModel>(_ request: DataStoreFetchRequest<T>) throws
        -> [PersistentIdentifier]
    {
        let query = request.query
        let table = try table(query.entity.name)
        let plan = PostgresQueryPlan(query, table: table, store: identifier)
        guard plan.residual == nil, plan.orderBy != nil || query.sort.isEmpty else {
            return try snapshots(query).map(\.persistentIdentifier)
        }
        return try withConnection(retryingReads: true) { connection in
            // A hierarchy's row carries its own entity.
            let columns = table.isDiscriminated ? "\"pk\", \"@entity\"" : "\"pk\""
            let rows = try connection.execute(plan.select(columns, from: table), plan.statement.parameters)
            return (0..<rows.count).compactMap { row in
                rows.text(row, 0).flatMap(Int64.init).map {
                    permanent(table.isDiscriminated ? rows.text(row, 1) ?? table.name : table.name, $0)
                }
            }
        }
    }

    /// `query` without its sort (a count does not need one).
    private func unsorted(_ query: FetchQuery) -> FetchQuery {
        var query = query
        query.sort = []
        return query
    }

    /// The records of `identifiers`, one statement per table (a hierarchy's entities share
    /// one, and each row comes back as its own entity's): `pk = ANY($1)`, or, for many
    /// keys that lie close together (an enumeration's batch, in key order), the range they
    /// span, read in one index range scan, keeping only the keys asked for.
    public func snapshots(for identifiers: [PersistentIdentifier]) throws -> [PersistentIdentifier: DefaultSnapshot] {
        var byEntity: [String: [Int64]] = [:]
        for id in identifiers where id.storeIdentifier == identifier {
            guard let key = id.primaryKey, let table = tables.entities[id.entityName] else { continue }
            // A hierarchy's entities are read together, through its root's table.
            byEntity[table.isDiscriminated ? table.sqlName : id.entityName, default: []].append(key)
        }
        guard !byEntity.isEmpty else { return [:] }
        return try withConnection(retryingReads: true) { connection in
            var found: [PersistentIdentifier: DefaultSnapshot] = [:]
            for (name, keys) in byEntity {
                guard let table = tables.entities[name], let low = keys.min(), let high = keys.max() else { continue }
                let select = "SELECT \(table.selectList) FROM \(quote(table.sqlName)) WHERE "
                if keys.count >= Self.rangeReadMinimum, !table.isDiscriminated, table.toMany.isEmpty,
                    high - low < 2 * Int64(keys.count)
                {
                    let wanted = Set(keys)
                    let sql = select + "\"pk\" BETWEEN $1::bigint AND $2::bigint"
                    for snapshot in try read(table, sql, [String(low), String(high)], on: connection)
                    where snapshot.persistentIdentifier.primaryKey.map(wanted.contains) == true {
                        found[snapshot.persistentIdentifier] = snapshot
                    }
                } else {
                    let sql = select + "\"pk\" = ANY($1::bigint[])"
                    let list = PostgresValues.arrayLiteral(keys.map { String($0) })
                    for snapshot in try read(table, sql, [list], on: connection) {
                        found[snapshot.persistentIdentifier] = snapshot
                    }
                }
            }
            return found
        }
    }

    /// The fewest keys ``snapshots(for:)`` reads as a range.
    static let rangeReadMinimum = 64

    /// Which part of the request went to SQL and which stays in memory, then the server's
    /// own `EXPLAIN`, its lines joined by ` / `.
    public func explain<T: PersistentModel>(_ request: DataStoreFetchRequest<T>) throws -> String {
        let table = try table(request.query.entity.name)
        let plan = PostgresQueryPlan(request.query, table: table, store: identifier)
        let server = try withConnection(retryingReads: true) { connection in
            let rows = try connection.execute(
                "EXPLAIN " + plan.select(table.selectList, from: table, ordered: plan.orderBy != nil),
                plan.statement.parameters)
            return (0..<rows.count).compactMap { rows.text($0, 0) }.map {
                $0.trimmingCharacters(in: .whitespaces)
            }
        }
        return plan.description(table) + "; PostgreSQL's plan: " + server.joined(separator: " / ")
    }

    // MARK: Writing

    /// Runs a save as one SQL transaction; it commits whole or throws. A save that meets a
    /// row another process inserted after its look-up of unique values runs again, up to
    /// three times, as does a single new row's plain `INSERT` that meets a stored row (run
    /// again as the upsert).
    public func save(_ request: DataStoreSaveChangesRequest<DefaultSnapshot>) throws
        -> DataStoreSaveChangesResult<DefaultSnapshot>
    {
        // A save that met a row another process inserted between its look-up and its
        // insert runs again: the look-up then finds the row, and upserts or fails.
        var attempt = 0
        while true {
            attempt += 1
            do {
                return try withConnection { connection in
                    var save = PostgresSave(
                        store: self, request: request, connection: connection, insertsPlainlyFirst: attempt == 1)
                    return try save.run()
                }
            } catch let raced as PostgresSave.Raced {
                if attempt < 3 { continue }
                throw SwiftDataError(.uniqueConstraintViolation, raced.error.message)
            }
        }
    }

    /// Deletes what `request` matches, in one statement when SQL can say all of its
    /// predicate. A context's deletes by predicate do not come here: its save runs them in
    /// the save's own transaction (see `PostgresSave`), as `DELETE … RETURNING`.
    public func delete<T: PersistentModel>(_ request: DataStoreBatchDeleteRequest<T>) throws {
        let table = try table(request.query.entity.name)
        var query = unsorted(request.query)
        query.limit = nil
        query.offset = 0
        let plan = PostgresQueryPlan(query, table: table, store: identifier)
        if plan.residual == nil {
            try withConnection { connection in
                try connection.execute(
                    "DELETE FROM \(quote(table.sqlName))\(plan.whereClause)", plan.statement.parameters)
            }
            return
        }
        let keys = try snapshots(query).compactMap { $0.persistentIdentifier.primaryKey }.map { String($0) }
        try withConnection { connection in
            try connection.execute(
                "DELETE FROM \(quote(table.sqlName)) WHERE \"pk\" = ANY($1::bigint[])",
                [PostgresValues.arrayLiteral(keys)])
        }
    }

    /// Empties every table of the schema's entities and to-many relationships
    /// (`TRUNCATE`); the tables stay.
    public func erase() throws {
        let names = Set(
            tables.entities.values.map { quote($0.sqlName) }
                + tables.entities.values.flatMap { $0.toMany.map { quote($0.table) } })
        guard !names.isEmpty else { return }
        try withConnection { connection in
            try connection.run("TRUNCATE \(names.sorted().joined(separator: ", "))")
        }
    }
}

extension PostgresStore: DataStoreSavingBatchDeletes {}

/// A fetch of an entity with subentities is one statement on the hierarchy's table.
extension PostgresStore: AnswersEntityFamilies {}
