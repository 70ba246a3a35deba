import Foundation
import StowagePostgres

/// The PostgreSQL peer: the same work through libpq directly, as an app that writes its
/// SQL by hand would do it: prepared statements with text parameters (the wrapper
/// `StowagePostgres` uses, which prepares each statement once per connection), one row per
/// statement, the same transactions as the Stowage side, the same table types as
/// `PostgresStore` makes (`uuid`, `timestamptz`, `double precision`, `text`) and the same
/// indexes, and every row read back into a Swift struct.
final class LibPQPeer: TripPeer {
    private let connection: PostgresConnection

    /// Connects to `conninfo` and, unless `reopen`, creates the table.
    init(conninfo: String, reopen: Bool = false) throws {
        connection = try PostgresConnection(conninfo, connectTimeout: 10)
        if reopen { return }
        try connection.run(
            "CREATE TABLE trip (pk bigint PRIMARY KEY, id uuid NOT NULL UNIQUE, destination text COLLATE \"C\" NOT NULL, "
                + "startDate timestamptz NOT NULL, budget double precision NOT NULL, flag boolean NOT NULL, "
                + "note text COLLATE \"C\" NOT NULL)")
        try connection.run("CREATE INDEX trip_destination ON trip(destination)")
        try connection.run("CREATE INDEX trip_startDate ON trip(startDate)")
    }

    func close() {}

    static let columns = "pk, id, destination, EXTRACT(EPOCH FROM startDate), budget, flag, note"

    private static func seconds(_ date: Date) -> String { "\(date.timeIntervalSince1970)" }

    private func rows(_ result: PostgresRows) throws -> [TripRow] {
        try (0..<result.count).map { row in
            guard let pk = result.text(row, 0).flatMap(Int64.init), let id = result.text(row, 1).flatMap(UUID.init),
                let destination = result.text(row, 2), let seconds = result.text(row, 3).flatMap(Double.init),
                let budget = result.text(row, 4).flatMap(Double.init), let flag = result.text(row, 5),
                let note = result.text(row, 6)
            else { throw BenchError("libpq: a row did not read back") }
            return TripRow(
                pk: pk, id: id, destination: destination, startDate: Date(timeIntervalSince1970: seconds),
                budget: budget, flag: flag == "t", note: note)
        }
    }

    private func parameters(_ row: TripRow) -> [String?] {
        [
            String(row.pk), row.id.uuidString, row.destination, Self.seconds(row.startDate), "\(row.budget)",
            row.flag ? "t" : "f", row.note,
        ]
    }

    static let insertSQL =
        "INSERT INTO trip (pk, id, destination, startDate, budget, flag, note) VALUES "
        + "($1::bigint, $2::uuid, $3::text, to_timestamp($4::double precision), $5::double precision, $6::boolean, $7::text)"

    func insert(_ rows: [TripRow]) throws {
        try connection.run("BEGIN")
        for row in rows { try connection.execute(Self.insertSQL, parameters(row)) }
        try connection.run("COMMIT")
    }

    func insertOne(_ row: TripRow) throws {
        try connection.execute(Self.insertSQL, parameters(row))
    }

    func fetch(id: UUID) throws -> TripRow? {
        try rows(connection.execute("SELECT \(Self.columns) FROM trip WHERE id = $1::uuid", [id.uuidString])).first
    }

    func fetch(destination: String) throws -> [TripRow] {
        try rows(connection.execute("SELECT \(Self.columns) FROM trip WHERE destination = $1::text", [destination]))
    }

    func fetch(after date: Date, limit: Int) throws -> [TripRow] {
        try rows(
            connection.execute(
                "SELECT \(Self.columns) FROM trip WHERE startDate > to_timestamp($1::double precision) "
                    + "ORDER BY startDate LIMIT $2::bigint", [Self.seconds(date), String(limit)]))
    }

    func enumerateAll(_ body: (TripRow) -> Void) throws {
        for row in try rows(connection.execute("SELECT \(Self.columns) FROM trip")) { body(row) }
    }

    func countUnindexed(budgetAbove: Double) throws -> Int {
        let result = try connection.execute(
            "SELECT count(*) FROM trip WHERE budget > $1::double precision AND flag = false", ["\(budgetAbove)"])
        return result.text(0, 0).flatMap(Int.init) ?? 0
    }

    private func setBudget(pk: Int64, _ budget: Double) throws {
        let result = try connection.execute(
            "UPDATE trip SET budget = $1::double precision WHERE pk = $2::bigint", ["\(budget)", String(pk)])
        guard result.changed == 1 else { throw BenchError("libpq: update of \(pk) changed \(result.changed) rows") }
    }

    func updateBudgets(_ rows: [TripRow], batch: Int) throws {
        var start = 0
        while start < rows.count {
            try connection.run("BEGIN")
            for row in rows[start..<min(start + batch, rows.count)] { try setBudget(pk: row.pk, row.budget + 1) }
            try connection.run("COMMIT")
            start += batch
        }
    }

    func fetchAndUpdateBudgets(_ changes: [(UUID, Double)], batch: Int) throws {
        var start = 0
        while start < changes.count {
            try connection.run("BEGIN")
            for (id, budget) in changes[start..<min(start + batch, changes.count)] {
                guard let row = try fetch(id: id) else { throw BenchError("libpq: no row \(id)") }
                try setBudget(pk: row.pk, budget)
            }
            try connection.run("COMMIT")
            start += batch
        }
    }

    func steps(_ ids: [UUID], commitEvery: Int?) throws {
        try connection.run("BEGIN")
        for (i, id) in ids.enumerated() {
            guard let row = try fetch(id: id) else { throw BenchError("libpq: no row \(id)") }
            try setBudget(pk: row.pk, row.budget + 1)
            if let commitEvery, (i + 1) % commitEvery == 0 {
                try connection.run("COMMIT")
                try connection.run("BEGIN")
            }
        }
        try connection.run("COMMIT")
    }

    func importLookingUp(_ rows: [TripRow]) throws {
        try connection.run("BEGIN")
        for row in rows where try fetch(id: row.id) == nil { try insertOne(row) }
        try connection.run("COMMIT")
    }

    func move(pk: Int64, to date: Date, thenReadSortedShowing shown: Int) throws -> (Int, Double) {
        let result = try connection.execute(
            "UPDATE trip SET startDate = to_timestamp($1::double precision) WHERE pk = $2::bigint",
            [Self.seconds(date), String(pk)])
        guard result.changed == 1 else { throw BenchError("libpq: move of \(pk) changed \(result.changed) rows") }
        let keys = try connection.execute("SELECT pk FROM trip ORDER BY startDate")
        let top = try rows(
            connection.execute("SELECT \(Self.columns) FROM trip ORDER BY startDate LIMIT $1::bigint", [String(shown)]))
        return (keys.count, top.reduce(0.0) { $0 + $1.startDate.timeIntervalSinceReferenceDate })
    }

    func delete(destinations: [String]) throws -> Int {
        let list = "{" + destinations.map { "\"\($0)\"" }.joined(separator: ",") + "}"
        return try connection.execute("DELETE FROM trip WHERE destination = ANY($1::text[])", [list]).changed
    }

    func count() throws -> Int {
        try connection.execute("SELECT count(*) FROM trip").text(0, 0).flatMap(Int.init) ?? 0
    }

    func bytesOnDisk() throws -> Int64 {
        try connection.execute("SELECT pg_database_size(current_database())").text(0, 0).flatMap(Int64.init) ?? 0
    }
}
