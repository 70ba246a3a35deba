import Foundation
import Stowage

/// The history a store opened with ``PostgresStoreConfiguration/keepsHistory`` keeps, in
/// the `stowage_history` table (`Formats/postgres.md`, "The history"): a row per save,
/// written in the save's transaction.
extension PostgresStore: HistoryProviding, HistoryKeeping {
    /// The store's transactions are Stowage's default ones.
    public typealias HistoryType = DefaultHistoryTransaction
    /// Stowage's `DefaultHistoryTransaction`.
    public static var historyType: DefaultHistoryTransaction.Type { DefaultHistoryTransaction.self }

    /// The transactions `descriptor` selects, in its order, up to its limit: the saves of
    /// every process whose store keeps history, in the order they committed.
    /// - Throws: `DataStoreError` `.unsupportedFeature` when this store was opened without
    ///   ``PostgresStoreConfiguration/keepsHistory``.
    public func fetchHistory(_ descriptor: HistoryDescriptor<DefaultHistoryTransaction>) throws
        -> [DefaultHistoryTransaction]
    {
        try requireHistory()
        return try fetchDefaultHistory(descriptor)
    }

    /// Deletes the transactions `descriptor` selects from the history (for every process);
    /// the rows they changed stay.
    /// - Throws: `DataStoreError` `.unsupportedFeature` when this store was opened without
    ///   ``PostgresStoreConfiguration/keepsHistory``.
    public func deleteHistory(_ descriptor: HistoryDescriptor<DefaultHistoryTransaction>) throws {
        try requireHistory()
        try deleteDefaultHistory(descriptor)
    }

    private func requireHistory() throws {
        guard configuration.keepsHistory else {
            throw DataStoreError(
                .unsupportedFeature,
                "this PostgresStore keeps no history: open it with PostgresStoreConfiguration.keepsHistory")
        }
    }

    package func historyEntries() throws -> [HistoryEntry] {
        try withConnection(retryingReads: true) { connection in
            let rows = try connection.execute(
                "SELECT \"txn\", \"time\", \"author\", \"program\", \"process\", \"changes\" FROM stowage_history "
                    + "ORDER BY \"txn\"")
            return try (0..<rows.count).map { try entry(rows, $0) }
        }
    }

    package func removeHistory(_ transactions: Set<Int64>) throws {
        guard !transactions.isEmpty else { return }
        let list = PostgresValues.arrayLiteral(transactions.sorted().map { String($0) })
        try withConnection { connection in
            try connection.execute("DELETE FROM stowage_history WHERE \"txn\" = ANY($1::bigint[])", [list])
        }
    }

    /// The transaction in row `row` of a `SELECT` of the history's columns.
    private func entry(_ rows: PostgresRows, _ row: Int) throws -> HistoryEntry {
        guard let txn = rows.text(row, 0).flatMap(Int64.init), let time = rows.text(row, 1).flatMap(Int64.init),
            let program = rows.text(row, 3), let process = rows.text(row, 4).flatMap(Int64.init),
            let text = rows.text(row, 5)
        else {
            throw DataStoreError(.corruptStore, "stowage_history has a row that does not read (row \(row))")
        }
        let context = "stowage_history transaction \(txn)"
        let changes: [HistoryEntry.Change]
        do {
            guard case .array(let list) = try JSONParser.parse(Array(text.utf8)) else {
                throw DataStoreError(.corruptStore, "\(context): changes is not a JSON array")
            }
            changes = try HistoryJSON.read(list, context: context, storeIdentifier: identifier) { entity, property in
                schema.entitiesByName[entity]?.property(named: property)?.typeName
            }
        } catch let error as DataStoreError {
            throw error
        } catch let error as JSONValueCodec.Failure {
            throw DataStoreError(.corruptStore, error.message)
        } catch {
            throw DataStoreError(.corruptStore, "\(context): changes does not read: \(error)")
        }
        return HistoryEntry(
            transactionID: txn, timestamp: time, author: rows.text(row, 2).map(PostgresValues.unescapeText),
            changes: changes,
            writer: HistoryWriter(program: PostgresValues.unescapeText(program), process: process))
    }
}

/// What a save records in the history: its changes, from the rows it writes and the ones
/// it replaces.
enum PostgresHistoryRecorder {
    /// Whether the values `old` (as read back) and `new` (as the save writes it) are stored
    /// as the same: dates to the microsecond (what `timestamptz` keeps), doubles by their
    /// bits (NaN as NaN), everything else by `==`.
    static func same(_ old: SnapshotValue, _ new: SnapshotValue) -> Bool {
        switch (old, new) {
        case (.date(let a), .date(let b)):
            return (a.timeIntervalSince1970 * 1_000_000).rounded() == (b.timeIntervalSince1970 * 1_000_000).rounded()
        case (.double(let a), .double(let b)):
            return a.bitPattern == b.bitPattern || (a.isNaN && b.isNaN)
        default:
            return old == new
        }
    }

    /// The names of the properties of `entity` whose values differ between `old` and `new`,
    /// in schema order.
    static func updated(_ entity: Schema.Entity, old: [SnapshotValue], new: [SnapshotValue]) -> [String] {
        entity.properties.indices.compactMap { i in
            let a = i < old.count ? old[i] : .null
            let b = i < new.count ? new[i] : .null
            return same(a, b) ? nil : entity.properties[i].name
        }
    }

    /// The names of `entity`'s `.preserveValueOnDeletion` attributes.
    static func preserved(_ entity: Schema.Entity) -> [String] {
        entity.properties.filter { $0.attribute?.options.contains(.preserveValueOnDeletion) == true }.map(\.name)
    }

    /// The values of `names` in `values` (an entity's snapshot values).
    static func tombstone(_ entity: Schema.Entity, _ names: [String], _ values: [SnapshotValue]) -> [String:
        SnapshotValue]
    {
        var tombstone: [String: SnapshotValue] = [:]
        for name in names {
            guard let position = entity.properties.firstIndex(where: { $0.name == name }), position < values.count
            else { continue }
            tombstone[name] = values[position]
        }
        return tombstone
    }

    /// The statements that add the history's row for `changes`, saved by `author`: the
    /// advisory lock that orders the transactions by commit, then the insert.
    static func statements(_ changes: [HistoryEntry.Change], author: String?) -> [(sql: String, parameters: [String?])]
    {
        var w = JSONWriter()
        HistoryJSON.write(changes, to: &w)
        let json = String(decoding: w.finish(), as: UTF8.self)
        let writer = HistoryWriter.current
        let time = Int64((Date().timeIntervalSince1970 * 1000).rounded())
        return [
            ("SELECT pg_advisory_xact_lock(\(PostgresStore.historyLock))", []),
            (
                "INSERT INTO stowage_history (\"txn\", \"time\", \"author\", \"program\", \"process\", \"changes\") "
                    + "VALUES (nextval('stowage_history_txn'), $1::bigint, $2::text, $3::text, $4::bigint, $5::json)",
                [
                    String(time), author.map(PostgresValues.escapeText), PostgresValues.escapeText(writer.program),
                    String(writer.process), json,
                ]
            ),
        ]
    }
}
