import Foundation
import Stowage

/// One save, as one SQL transaction (a save of one row: its one statement, see
/// ``writeOne()``): keys for the inserts from the `stowage_pk` sequence
/// (``PostgresStore/keys(_:on:)``), the inserts that meet a uniqueness constraint resolved
/// (upsert, or `.fail`), then per entity one `DELETE`, one `UPDATE` and one `INSERT`, each
/// with its rows as array parameters spread by `unnest`, the join tables of the to-many
/// relationships, and `COMMIT`. The statements go in at most two round trips (libpq's
/// pipeline mode): the look-ups of the unique values, when the inserts have any, then every
/// write with the commit. A save that comes to one statement sends it alone, without
/// `BEGIN` and `COMMIT` (see ``write()``).
struct PostgresSave {
    let store: PostgresStore
    let request: DataStoreSaveChangesRequest<DefaultSnapshot>
    let connection: PostgresConnection
    /// The writes, sent together once they are all known.
    private var writes: [(sql: String, parameters: [String?])] = []
    /// Whether `BEGIN` has gone (with the look-ups).
    private var begun = false
    /// The `DELETE … RETURNING "pk"` of each of the request's deletes by predicate, with its
    /// entity; sent first, with the look-ups when there are any, else with the writes.
    private var batchDeletes: [(entity: String, sql: String, parameters: [String?])] = []
    /// What the batch deletes took, once they have run.
    private var batchDeleted: [PersistentIdentifier] = []
    /// With a history: the preserved values of what the batch deletes took.
    private var batchTombstones: [PersistentIdentifier: [String: SnapshotValue]] = [:]
    /// Whether the save adds a transaction to the history.
    private var keepsHistory: Bool { store.configuration.keepsHistory }
    /// Whether a save that is one upsert of one row tries a plain `INSERT` first (see
    /// ``writeOne()``); not when the save runs again because that insert met a stored row.
    private let insertsPlainlyFirst: Bool

    init(
        store: PostgresStore, request: DataStoreSaveChangesRequest<DefaultSnapshot>, connection: PostgresConnection,
        insertsPlainlyFirst: Bool = true
    ) {
        self.store = store
        self.request = request
        self.connection = connection
        self.insertsPlainlyFirst = insertsPlainlyFirst
    }

    /// The database reported a uniqueness violation on an insert the look-up had cleared
    /// (another process inserted the same value meanwhile), or on a single row's plain
    /// `INSERT` tried before its upsert. The save is run again.
    struct Raced: Error {
        let error: PostgresError
    }

    mutating func run() throws -> DataStoreSaveChangesResult<DefaultSnapshot> {
        do {
            return try writeOne() ?? write()
        } catch let error as PostgresError {
            rollBack()
            if error.isUniqueViolation, !request.inserted.isEmpty { throw Raced(error: error) }
            throw PostgresStore.storeError(error, doing: "a save")
        } catch {
            rollBack()
            throw error
        }
    }

    /// Ends the failed save's transaction: none is left after a statement sent alone, and
    /// then no round trip is spent (a connection in any other state is sent `ROLLBACK`,
    /// which also finds out whether it still works).
    private func rollBack() {
        if !connection.isIdle { try? connection.run("ROLLBACK") }
    }

    private var storeID: String { store.identifier }

    private func permanent(_ entity: String, _ key: Int64) -> PersistentIdentifier {
        store.permanent(entity, key)
    }

    /// A save of one new row or one changed row, sent as its one statement alone (in the
    /// server's own transaction for it), or `nil` for any other save, which ``write()``
    /// runs. It skips the general path's grouping by entity, look-up planning and copies of
    /// the snapshot: `stowage-bench --save-latency` measured single-row saves at 0.86× of
    /// libpq's with it and 0.82× without (4 runs each).
    ///
    /// Only a row of an entity without to-many relationships, that refers to no unsaved
    /// model, in a store without a history; a new row only when its entity has no
    /// uniqueness constraint, or upserts in SQL and this is the first attempt: then it goes
    /// as a plain `INSERT` rather than the upsert (`ON CONFLICT … DO UPDATE … RETURNING`
    /// costs the server about 30 µs of a 300 µs single-row save, measured with pgbench, and
    /// a new row rarely meets a stored one). When it does, the insert fails alone, leaving
    /// nothing, and the save runs again through ``write()`` as the upsert (`Raced`): one
    /// more round trip, and the server logs the violation.
    private mutating func writeOne() throws -> DataStoreSaveChangesResult<DefaultSnapshot>? {
        guard !keepsHistory, request.deleted.isEmpty, request.batchDeletes.isEmpty,
            request.inserted.count + request.updated.count == 1
        else { return nil }
        let inserting = !request.inserted.isEmpty
        let snapshot = inserting ? request.inserted[0] : request.updated[0]
        let id = snapshot.persistentIdentifier
        let table = try store.table(id.entityName)
        guard table.toMany.isEmpty, !Self.refersToUnsaved(snapshot) else { return nil }
        if inserting {
            let plain =
                try table.uniqueness.isEmpty || (insertsPlainlyFirst && upsertsInSQL(table, [snapshot], referenced: []))
            guard plain else { return nil }
            guard let key = try store.keys(1, on: connection).first else {
                throw DataStoreError(.ioFailure, "the stowage_pk sequence gave too few keys")
            }
            try connection.pipeline([(table.insertOne, try rowParameters(table, key, snapshot))])
            return DataStoreSaveChangesResult(
                for: storeID, request: request, insertedIdentifiers: [permanent(id.entityName, key)])
        }
        guard id.storeIdentifier == storeID, !table.columns.isEmpty else { return nil }
        guard let key = id.primaryKey else {
            throw DataStoreError(.unsupportedFeature, "\(id) has no integer key")
        }
        try connection.pipeline([(table.updateOne, try rowParameters(table, key, snapshot))])
        return DataStoreSaveChangesResult(for: storeID)
    }

    /// Whether `snapshot`'s values refer to a model that is not saved (whose key the save
    /// must first give it).
    private static func refersToUnsaved(_ snapshot: DefaultSnapshot) -> Bool {
        func visit(_ value: SnapshotValue) -> Bool {
            switch value {
            case .identifier(let id): id.isTemporary
            case .array(let items): items.contains(where: visit)
            case .object(let fields): fields.values.contains(where: visit)
            default: false
            }
        }
        return snapshot.values.contains(where: visit)
    }

    /// One row's parameters for ``PostgresEntityTable/insertOne`` or
    /// ``PostgresEntityTable/updateOne``: its key, then its values.
    private func rowParameters(_ table: PostgresEntityTable, _ key: Int64, _ snapshot: DefaultSnapshot) throws
        -> [String?]
    {
        var parameters: [String?] = [String(key)]
        parameters.reserveCapacity(table.columns.count + 1)
        for column in table.columns { parameters.append(try Self.parameter(table, column, of: snapshot)) }
        return parameters
    }

    /// `column`'s value in `snapshot` as a parameter's text (`nil` for SQL `NULL`).
    /// - Throws: `.unsupportedFeature` for a reference to a model that is not saved.
    private static func parameter(
        _ table: PostgresEntityTable, _ column: PostgresEntityTable.Column, of snapshot: DefaultSnapshot
    ) throws -> String? {
        let value = column.index < snapshot.values.count ? snapshot.values[column.index] : .null
        if case .identifier(let id) = value, id.isTemporary {
            throw DataStoreError(
                .unsupportedFeature, "\(table.name).\(column.name) refers to a model that is not saved: \(id)")
        }
        return try PostgresValues.parameter(value, column.kind, column: column.name)
    }

    private mutating func write() throws -> DataStoreSaveChangesResult<DefaultSnapshot> {
        for snapshot in request.inserted + request.updated + request.deleted {
            _ = try store.table(snapshot.persistentIdentifier.entityName)
        }
        batchDeletes = try request.batchDeletes.map(batchDelete)
        var keys = try store.keys(request.inserted.count, on: connection)[...]
        var remapped: [PersistentIdentifier: PersistentIdentifier] = [:]
        /// New rows, in the request's order, by identifier (a later insert with the same
        /// unique values replaces an earlier one's values).
        var newOrder: [PersistentIdentifier] = []
        var newRows: [PersistentIdentifier: DefaultSnapshot] = [:]
        /// Stored rows an insert met on a uniqueness constraint, with the inserted values.
        var upserts: [PersistentIdentifier: DefaultSnapshot] = [:]
        var upsertOrder: [PersistentIdentifier] = []
        /// New rows whose values a later insert with the same unique values replaced.
        var merged: Set<PersistentIdentifier> = []

        let insertsByEntity = Dictionary(grouping: request.inserted.indices) {
            request.inserted[$0].persistentIdentifier.entityName
        }
        let entities = insertsByEntity.sorted(by: { $0.key < $1.key })
        let referenced = Self.temporaryReferences(request)
        // A history needs to know which inserts met stored rows before it is written: the
        // look-up finds them first.
        let upsertingInSQL = Set(
            try entities.filter { name, indices in
                guard !keepsHistory else { return false }
                return
                    try upsertsInSQL(
                        try store.table(name), indices.map { request.inserted[$0] }, referenced: referenced)
            }.map(\.key))
        let stored = try storedMatches(
            entities.map { name, indices in
                (try store.table(name), upsertingInSQL.contains(name) ? [] : indices.map { request.inserted[$0] })
            })
        // The save's new rows by their unique values (a hierarchy's entities share the
        // constraints of their table).
        var seen: [[String?]: PersistentIdentifier] = [:]
        let hierarchyInserts = insertsByEntity.keys.contains { (try? store.table($0))?.isDiscriminated == true }
        for (number, (name, indices)) in entities.enumerated() {
            let table = try store.table(name)
            let stored = stored[number]
            for (position, index) in indices.enumerated() {
                let snapshot = request.inserted[index]
                // Another insert of the save with the same unique values is looked for
                // only when there is another insert of the entity (or of a hierarchy).
                let tuples = indices.count > 1 || hierarchyInserts ? try uniqueTuples(table, snapshot) : []
                let target = stored[position] ?? tuples.lazy.compactMap { seen[$0] }.first
                // A constraint of a class hierarchy covers its every entity: a model that
                // meets another entity's on it fails the save (as on the other stores),
                // whatever the policy; within one entity it upserts.
                if let target, target.entityName != name {
                    throw SwiftDataError(
                        .uniqueConstraintViolation,
                        "\(name): a \(target.entityName) already has the values of \(table.uniqueness) "
                            + "(the constraint covers every class of the hierarchy that has it)")
                }
                if let target {
                    if request.uniquenessPolicy == .fail {
                        throw SwiftDataError(
                            .uniqueConstraintViolation,
                            "\(name) \(table.uniqueness) is taken by \(target) (uniquenessPolicy is .fail)")
                    }
                    remapped[snapshot.persistentIdentifier] = target
                    if newRows[target] != nil {
                        newRows[target] = snapshot
                        merged.insert(target)
                    } else {
                        if upserts[target] == nil { upsertOrder.append(target) }
                        upserts[target] = snapshot
                    }
                    continue
                }
                guard let key = keys.popFirst() else {
                    throw DataStoreError(.ioFailure, "the stowage_pk sequence gave too few keys")
                }
                let id = permanent(name, key)
                remapped[snapshot.persistentIdentifier] = id
                newOrder.append(id)
                newRows[id] = snapshot
                for tuple in tuples { seen[tuple] = id }
            }
        }

        func final(_ id: PersistentIdentifier, _ snapshot: DefaultSnapshot) -> DefaultSnapshot {
            snapshot.copy(persistentIdentifier: id, remappedIdentifiers: remapped)
        }
        let inserted = newOrder.compactMap { id in newRows[id].map { final(id, $0) } }
        let upserted = upsertOrder.compactMap { id in upserts[id].map { final(id, $0) } }
        let updated = request.updated.map { final($0.persistentIdentifier, $0) } + upserted

        let history = keepsHistory ? try historyChanges(inserted: inserted, updated: updated) : []

        try deleteRows(request.deleted.map(\.persistentIdentifier))
        try updateRows(updated)
        let returning = try insertRows(inserted, upsertingInSQL: upsertingInSQL)
        try writeJoinTables(inserted, replacing: false)
        try writeJoinTables(updated, replacing: true)
        if !history.isEmpty {
            writes += PostgresHistoryRecorder.statements(history, author: request.editingState.author)
        }
        // Batch deletes not sent with the look-ups go first, so that they see the rows
        // stored before the save, not its own inserts.
        let unsent = batchDeletes.map { (sql: $0.sql, parameters: $0.parameters) }
        // A save of one statement (a single-row insert or update, without a history) runs
        // it alone, in the server's own transaction for it: as atomic, and without the
        // `BEGIN` and `COMMIT` (about 15-20 µs of the server's per save, measured with
        // pgbench).
        let alone = !begun && unsent.isEmpty && writes.count == 1
        let opening = begun || alone ? 0 : 1
        let results = try connection.pipeline(
            alone ? writes : (begun ? [] : [("BEGIN", [])]) + unsent + writes + [("COMMIT", [])])
        try collectBatchDeleted(results.dropFirst(opening).prefix(unsent.count))
        // Where the writes' results begin.
        let first = opening + unsent.count

        var reregister: [PersistentIdentifier: DefaultSnapshot] = [:]
        for snapshot in upserted { reregister[snapshot.persistentIdentifier] = snapshot }
        // An earlier insert whose values a later one with the same unique values replaced.
        for snapshot in inserted where merged.contains(snapshot.persistentIdentifier) {
            reregister[snapshot.persistentIdentifier] = snapshot
        }
        // Inserts the server turned into updates of stored rows (`ON CONFLICT`): the row
        // that answered is the stored one, under its own key.
        for insert in returning where first + insert.statement < results.count {
            let rows = results[first + insert.statement]
            var answered: [String: Int64] = [:]
            for row in 0..<rows.count {
                guard let key = rows.text(row, 0).flatMap(Int64.init), let value = rows.text(row, 1) else { continue }
                answered[value] = key
            }
            for (id, value) in insert.values {
                guard let key = answered[value], key != id.primaryKey, let snapshot = newRows[id] else { continue }
                let stored = permanent(id.entityName, key)
                for (temporary, target) in remapped where target == id { remapped[temporary] = stored }
                reregister[stored] = snapshot.copy(persistentIdentifier: stored, remappedIdentifiers: remapped)
            }
        }
        return DataStoreSaveChangesResult(
            for: storeID, remappedIdentifiers: remapped, snapshotsToReregister: reregister,
            deletedIdentifiers: batchDeleted)
    }

    /// The statement that deletes what `query` matches, returning the keys it took: its
    /// predicate in `WHERE` when SQL can say all of it; otherwise the keys of the rows that
    /// match, found by a fetch before the save's transaction begins.
    private func batchDelete(_ query: FetchQuery) throws -> (entity: String, sql: String, parameters: [String?]) {
        let table = try store.table(query.entity.name)
        var query = query
        query.sort = []
        query.limit = nil
        query.offset = 0
        let plan = PostgresQueryPlan(query, table: table, store: storeID)
        let delete = "DELETE FROM \(quote(table.sqlName))"
        // A hierarchy's row tells its own entity.
        let returning =
            " RETURNING "
            + (["\"pk\""] + (table.isDiscriminated ? ["\"@entity\""] : [])
            + tombstoneColumns(table).map(Self.textExpression)).joined(separator: ", ")
        guard plan.residual != nil else {
            return (table.name, delete + plan.whereClause + returning, plan.statement.parameters)
        }
        let keys = try store.snapshots(query).compactMap(\.persistentIdentifier.primaryKey).map { String($0) }
        return (
            table.name, delete + " WHERE \"pk\" = ANY($1::bigint[])" + returning, [PostgresValues.arrayLiteral(keys)]
        )
    }

    /// With a history, the columns of `table`'s `.preserveValueOnDeletion` attributes.
    private func tombstoneColumns(_ table: PostgresEntityTable) -> [PostgresEntityTable.Column] {
        guard keepsHistory, let entity = store.schema.entitiesByName[table.name] else { return [] }
        return PostgresHistoryRecorder.preserved(entity).compactMap { table.column(named: $0) }
    }

    /// How a statement whose results come as text returns `column`, for
    /// ``PostgresValues/value(_:_:store:)``: a date as its seconds since 1970.
    static func textExpression(_ column: PostgresEntityTable.Column) -> String {
        column.kind == .timestamp ? "EXTRACT(EPOCH FROM \(quote(column.name)))" : quote(column.name)
    }

    /// Reads the keys the batch deletes returned (`results`, in their order) into
    /// `batchDeleted`, and marks them sent.
    private mutating func collectBatchDeleted(_ results: ArraySlice<PostgresRows>) throws {
        guard !batchDeletes.isEmpty else { return }
        guard results.count == batchDeletes.count else {
            throw DataStoreError(.ioFailure, "the server answered \(results.count) of \(batchDeletes.count) deletes")
        }
        for (batch, rows) in zip(batchDeletes, results) {
            let table = try store.table(batch.entity)
            let preserved = tombstoneColumns(table)
            let first = table.isDiscriminated ? 2 : 1
            for row in 0..<rows.count {
                guard let key = rows.text(row, 0).flatMap(Int64.init) else { continue }
                let id = permanent(table.isDiscriminated ? rows.text(row, 1) ?? batch.entity : batch.entity, key)
                batchDeleted.append(id)
                guard !preserved.isEmpty else { continue }
                var tombstone: [String: SnapshotValue] = [:]
                for (i, column) in preserved.enumerated() {
                    tombstone[column.property] = try PostgresValues.value(
                        rows.text(row, i + first), column.kind, store: storeID)
                }
                batchTombstones[id] = tombstone
            }
        }
        batchDeletes = []
    }

    /// Whether `inserts` (of `table`) can meet stored rows in the `INSERT` itself, as
    /// `ON CONFLICT … DO UPDATE`, saving the round trip of a look-up first: when the entity
    /// has one uniqueness constraint, on one column whose text the server gives back as it
    /// was sent, no to-many relationship to carry over, the save upserts, and nothing in
    /// the save refers to these inserts (the key a row gets is known only once it is in).
    private func upsertsInSQL(
        _ table: PostgresEntityTable, _ inserts: [DefaultSnapshot], referenced: Set<PersistentIdentifier>
    ) throws -> Bool {
        guard request.uniquenessPolicy == .upsert, table.toMany.isEmpty, let upsert = table.upsertRows,
            !table.columns[upsert.column].isOptional,
            [.text, .uuid, .bigint, .integer, .smallint].contains(table.columns[upsert.column].kind)
        else { return false }
        return !inserts.contains { referenced.contains($0.persistentIdentifier) }
    }

    /// The temporary identifiers the request's snapshots refer to in their values.
    static func temporaryReferences(_ request: DataStoreSaveChangesRequest<DefaultSnapshot>)
        -> Set<PersistentIdentifier>
    {
        var found: Set<PersistentIdentifier> = []
        func visit(_ value: SnapshotValue) {
            switch value {
            case .identifier(let id) where id.isTemporary: found.insert(id)
            case .array(let items): items.forEach(visit)
            case .object(let fields): fields.values.forEach(visit)
            default: break
            }
        }
        for snapshot in request.inserted + request.updated { snapshot.values.forEach(visit) }
        return found
    }

    /// The parameter texts of each of `snapshot`'s uniqueness constraints that it fills
    /// (a constraint with a `nil` value never collides, as in SQL).
    private func uniqueTuples(_ table: PostgresEntityTable, _ snapshot: DefaultSnapshot) throws -> [[String?]] {
        try table.uniqueness.compactMap { constraint -> [String?]? in
            // The table and the constraint's columns: the same for every entity of a
            // hierarchy that has the constraint.
            let columns = constraint.compactMap { table.column(named: $0) }
            guard columns.count == constraint.count else { return nil }
            var tuple: [String?] = [([table.sqlName] + columns.map(\.name)).joined(separator: "\u{0}")]
            for column in columns {
                let value = column.index < snapshot.values.count ? snapshot.values[column.index] : .null
                guard let text = try PostgresValues.parameter(value, column.kind, column: column.name) else {
                    return nil
                }
                tuple.append(text)
            }
            return tuple
        }
    }

    /// For each entity's inserts (by position), the stored row each meets on a uniqueness
    /// constraint, if any: one query per constraint, joining the table with the inserts'
    /// values, all sent with `BEGIN` in one round trip. In a hierarchy's table the row
    /// found may be of another entity that shares the constraint (its identifier says so),
    /// among the rows of the family of the entity that declares the constraint.
    private mutating func storedMatches(_ entities: [(PostgresEntityTable, [DefaultSnapshot])]) throws
        -> [[Int: PersistentIdentifier]]
    {
        var queries: [(sql: String, parameters: [String?])] = []
        var owners: [Int] = []
        for (number, (table, inserts)) in entities.enumerated() where !inserts.isEmpty {
            for constraint in table.uniqueness {
                let columns = constraint.compactMap { table.column(named: $0) }
                guard columns.count == constraint.count, !columns.isEmpty else { continue }
                // Which entities' rows hold the constraint: the family of the entity that
                // declares it (every entity of the hierarchy for the root's).
                var sharing: [String]? = nil
                if table.isDiscriminated {
                    var declaring = table
                    for name in table.hierarchy.reversed() {
                        guard let other = try? store.table(name), other.family.contains(table.name),
                            other.uniqueness.contains(constraint), other.family.count > declaring.family.count
                        else { continue }
                        declaring = other
                    }
                    if declaring.family.count < table.hierarchy.count { sharing = declaring.family }
                }
                var arrays = [[String?]](repeating: [], count: columns.count)
                for snapshot in inserts {
                    for (i, column) in columns.enumerated() {
                        let value = column.index < snapshot.values.count ? snapshot.values[column.index] : .null
                        arrays[i].append(try PostgresValues.parameter(value, column.kind, column: column.name))
                    }
                }
                var statement = PostgresStatement()
                let entity = table.isDiscriminated ? ", t.\"@entity\"" : ""
                let restriction = sharing.map { names in
                    " AND t.\"@entity\" = ANY(\(statement.bind(PostgresValues.arrayLiteral(names), as: "text[]")))"
                }
                if columns.count == 1, columns[0].kind != .timestamp {
                    // One column: `= ANY`, which the server answers from the constraint's
                    // index with a plan it keeps, where the join is planned on every call.
                    let column = columns[0]
                    let list = statement.bind(
                        PostgresValues.arrayLiteral(arrays[0]), as: PostgresEntityTable.arrayType(column.kind))
                    queries.append(
                        (
                            "SELECT t.\"pk\", array_position(\(list), t.\(quote(column.name)))\(entity) "
                                + "FROM \(quote(table.sqlName)) AS t "
                                + "WHERE t.\(quote(column.name)) = ANY(\(list))\(restriction ?? "")",
                            statement.parameters
                        ))
                    owners.append(number)
                    continue
                }
                let spread = columns.enumerated().map { i, column in
                    statement.bind(
                        PostgresValues.arrayLiteral(arrays[i]), as: PostgresEntityTable.arrayType(column.kind))
                }
                let aliases = columns.indices.map { "c\($0)" }
                let on = columns.enumerated().map { i, column in
                    "t.\(quote(column.name)) = \(PostgresEntityTable.fromArray("u.c\(i)", column.kind))"
                }
                queries.append(
                    (
                        """
                        SELECT t."pk", u.ord\(entity) FROM \(quote(table.sqlName)) AS t \
                        JOIN unnest(\(spread.joined(separator: ", "))) \
                        WITH ORDINALITY AS u(\(aliases.joined(separator: ", ")), ord) ON \(on.joined(separator: " AND "))\
                        \(restriction ?? "")
                        """, statement.parameters
                    ))
                owners.append(number)
            }
        }
        var found = [[Int: PersistentIdentifier]](repeating: [:], count: entities.count)
        guard !queries.isEmpty else { return found }
        // A row the save deletes frees its values for the save's inserts.
        let deleted = Set(request.deleted.map(\.persistentIdentifier))
        // The batch deletes go before the look-ups, so that a row they take does not count
        // as stored.
        let batches = batchDeletes.map { (sql: $0.sql, parameters: $0.parameters) }
        let answers = try connection.pipeline([("BEGIN", [])] + batches + queries)
        begun = true
        try collectBatchDeleted(answers.dropFirst().prefix(batches.count))
        let results = answers.dropFirst(1 + batches.count)
        for (owner, rows) in zip(owners, results) {
            let table = entities[owner].0
            for row in 0..<rows.count {
                guard let key = rows.text(row, 0).flatMap(Int64.init), let ord = rows.text(row, 1).flatMap(Int.init)
                else { continue }
                let id = permanent(table.isDiscriminated ? rows.text(row, 2) ?? table.name : table.name, key)
                if found[owner][ord - 1] == nil, !deleted.contains(id) { found[owner][ord - 1] = id }
            }
        }
        return found
    }

    /// The save's changes for the history (`Formats/postgres.md`, "The history"): its
    /// inserts, its updates with the properties whose stored values they change, and its
    /// deletes with their preserved values, from the rows as they are before the save,
    /// read `FOR UPDATE` in its transaction (which this begins, with the batch deletes, if
    /// the look-ups have not).
    private mutating func historyChanges(inserted: [DefaultSnapshot], updated: [DefaultSnapshot]) throws
        -> [HistoryEntry.Change]
    {
        let updates = updated.filter { $0.persistentIdentifier.storeIdentifier == storeID }
        let deletes = request.deleted.map(\.persistentIdentifier).filter {
            $0.storeIdentifier == storeID && $0.primaryKey != nil
        }
        var wanted: [String: [Int64]] = [:]
        for snapshot in updates {
            if let key = snapshot.persistentIdentifier.primaryKey {
                wanted[snapshot.persistentIdentifier.entityName, default: []].append(key)
            }
        }
        for id in deletes {
            guard let entity = store.schema.entitiesByName[id.entityName], let key = id.primaryKey,
                !PostgresHistoryRecorder.preserved(entity).isEmpty
            else { continue }
            wanted[id.entityName, default: []].append(key)
        }
        if !begun, !wanted.isEmpty || !batchDeletes.isEmpty {
            let batches = batchDeletes.map { (sql: $0.sql, parameters: $0.parameters) }
            let answers = try connection.pipeline([("BEGIN", [])] + batches)
            begun = true
            try collectBatchDeleted(answers.dropFirst().prefix(batches.count))
        }
        var old: [PersistentIdentifier: DefaultSnapshot] = [:]
        for (name, keys) in wanted.sorted(by: { $0.key < $1.key }) {
            let table = try store.table(name)
            let sql =
                "SELECT \(table.selectList) FROM \(quote(table.sqlName)) WHERE \"pk\" = ANY($1::bigint[]) "
                + "ORDER BY \"pk\" FOR UPDATE"
            for snapshot in try store.read(
                table, sql, [PostgresValues.arrayLiteral(keys.map { String($0) })], on: connection)
            {
                old[snapshot.persistentIdentifier] = snapshot
            }
        }
        var changes: [HistoryEntry.Change] = []
        for snapshot in inserted {
            guard let key = snapshot.persistentIdentifier.primaryKey else { continue }
            changes.append(
                HistoryEntry.Change(kind: .insert, entity: snapshot.persistentIdentifier.entityName, key: key))
        }
        for snapshot in updates {
            let id = snapshot.persistentIdentifier
            guard let key = id.primaryKey, let entity = store.schema.entitiesByName[id.entityName] else { continue }
            // A row that is not there (another process deleted it) had every value changed.
            let names =
                old[id].map { PostgresHistoryRecorder.updated(entity, old: $0.values, new: snapshot.values) }
                ?? entity.properties.map(\.name)
            changes.append(HistoryEntry.Change(kind: .update, entity: id.entityName, key: key, updated: names))
        }
        for id in deletes {
            guard let key = id.primaryKey, let entity = store.schema.entitiesByName[id.entityName] else { continue }
            let tombstone = old[id].map {
                PostgresHistoryRecorder.tombstone(entity, PostgresHistoryRecorder.preserved(entity), $0.values)
            }
            changes.append(
                HistoryEntry.Change(kind: .delete, entity: id.entityName, key: key, tombstone: tombstone ?? [:]))
        }
        for id in batchDeleted {
            guard let key = id.primaryKey else { continue }
            changes.append(
                HistoryEntry.Change(
                    kind: .delete, entity: id.entityName, key: key, tombstone: batchTombstones[id] ?? [:]))
        }
        return changes
    }

    private mutating func deleteRows(_ identifiers: [PersistentIdentifier]) throws {
        // A hierarchy's entities share their root's table.
        let byEntity = Dictionary(grouping: identifiers.filter { $0.storeIdentifier == storeID }) {
            store.tables.entities[$0.entityName]?.sqlName ?? $0.entityName
        }
        for (name, ids) in byEntity.sorted(by: { $0.key < $1.key }) {
            let keys = ids.compactMap(\.primaryKey).map { String($0) }
            writes.append(
                ("DELETE FROM \(quote(name)) WHERE \"pk\" = ANY($1::bigint[])", [PostgresValues.arrayLiteral(keys)]))
        }
    }

    /// The row values of `snapshots` (one table's), column by column, as array parameters.
    private func columnArrays(_ table: PostgresEntityTable, _ snapshots: [DefaultSnapshot]) throws -> [[String?]] {
        var arrays = [[String?]](repeating: [], count: table.columns.count + 1)
        for snapshot in snapshots {
            guard let key = snapshot.persistentIdentifier.primaryKey else {
                throw DataStoreError(.unsupportedFeature, "\(snapshot.persistentIdentifier) has no integer key")
            }
            arrays[0].append(String(key))
            for (i, column) in table.columns.enumerated() {
                arrays[i + 1].append(try Self.parameter(table, column, of: snapshot))
            }
        }
        return arrays
    }

    /// An `INSERT` whose rows meet stored ones in the statement, and what to read back:
    /// the statement's position among the writes, and each new row's unique value as text.
    struct Returning {
        let statement: Int
        let values: [(PersistentIdentifier, String)]
    }

    private mutating func insertRows(_ snapshots: [DefaultSnapshot], upsertingInSQL: Set<String>) throws
        -> [Returning]
    {
        var returning: [Returning] = []
        let byEntity = Dictionary(grouping: snapshots, by: \.persistentIdentifier.entityName)
        for (name, rows) in byEntity.sorted(by: { $0.key < $1.key }) {
            let table = try store.table(name)
            let arrays = try columnArrays(table, rows)
            let one = rows.count == 1
            let parameters = one ? arrays.map { $0[0] } : arrays.map { PostgresValues.arrayLiteral($0) }
            if upsertingInSQL.contains(name), let upsert = table.upsertRows {
                returning.append(
                    Returning(
                        statement: writes.count,
                        values: zip(rows, arrays[upsert.column + 1]).compactMap { row, text in
                            text.map { (row.persistentIdentifier, $0) }
                        }))
                writes.append((one ? table.upsertOne ?? upsert.sql : upsert.sql, parameters))
            } else {
                writes.append((one ? table.insertOne : table.insertRows, parameters))
            }
        }
        return returning
    }

    private mutating func updateRows(_ snapshots: [DefaultSnapshot]) throws {
        let byEntity = Dictionary(grouping: snapshots.filter { $0.persistentIdentifier.storeIdentifier == storeID }) {
            $0.persistentIdentifier.entityName
        }
        for (name, rows) in byEntity.sorted(by: { $0.key < $1.key }) {
            let table = try store.table(name)
            guard !table.columns.isEmpty else { continue }
            let arrays = try columnArrays(table, rows)
            writes.append(
                rows.count == 1
                    ? (table.updateOne, arrays.map { $0[0] })
                    : (table.updateRows, arrays.map { PostgresValues.arrayLiteral($0) }))
        }
    }

    /// Writes the to-many relationships of `snapshots`: their rows in each join table, in
    /// the relationship's order (after removing the old ones, when `replacing`).
    private mutating func writeJoinTables(_ snapshots: [DefaultSnapshot], replacing: Bool) throws {
        let byEntity = Dictionary(grouping: snapshots.filter { $0.persistentIdentifier.storeIdentifier == storeID }) {
            $0.persistentIdentifier.entityName
        }
        for (name, rows) in byEntity.sorted(by: { $0.key < $1.key }) {
            let table = try store.table(name)
            for relationship in table.toMany {
                var owners: [String?] = []
                var positions: [String?] = []
                var targets: [String?] = []
                for snapshot in rows {
                    guard let owner = snapshot.persistentIdentifier.primaryKey else { continue }
                    guard case .array(let items) = snapshot.values[relationship.index] else { continue }
                    for (position, item) in items.enumerated() {
                        guard case .identifier(let id) = item, !id.isTemporary, let key = id.primaryKey else {
                            throw DataStoreError(
                                .unsupportedFeature,
                                "\(name).\(relationship.name) holds \(item), which is not a saved model of this store")
                        }
                        owners.append(String(owner))
                        positions.append(String(position))
                        targets.append(String(key))
                    }
                }
                if replacing {
                    let keys = rows.compactMap(\.persistentIdentifier.primaryKey).map { String($0) }
                    writes.append(
                        (
                            "DELETE FROM \(quote(relationship.table)) WHERE \"owner\" = ANY($1::bigint[])",
                            [PostgresValues.arrayLiteral(keys)]
                        ))
                }
                guard !owners.isEmpty else { continue }
                writes.append(
                    (
                        "INSERT INTO \(quote(relationship.table)) (\"owner\", \"position\", \"target\") "
                            + "SELECT * FROM unnest($1::bigint[], $2::integer[], $3::bigint[])",
                        [
                            PostgresValues.arrayLiteral(owners), PostgresValues.arrayLiteral(positions),
                            PostgresValues.arrayLiteral(targets),
                        ]
                    ))
            }
        }
    }

}
