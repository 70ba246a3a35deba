import CSQLite
import Foundation

/// What a peer does, phase by phase: SQLite (``SQLitePeer``) or libpq (``LibPQPeer``).
protocol TripPeer: AnyObject {
    func close()
    func insert(_ rows: [TripRow]) throws
    func insertOne(_ row: TripRow) throws
    func fetch(id: UUID) throws -> TripRow?
    func fetch(destination: String) throws -> [TripRow]
    func fetch(after date: Date, limit: Int) throws -> [TripRow]
    func enumerateAll(_ body: (TripRow) -> Void) throws
    func countUnindexed(budgetAbove: Double) throws -> Int
    func updateBudgets(_ rows: [TripRow], batch: Int) throws
    func fetchAndUpdateBudgets(_ changes: [(UUID, Double)], batch: Int) throws
    func steps(_ ids: [UUID], commitEvery: Int?) throws
    func importLookingUp(_ rows: [TripRow]) throws
    func move(pk: Int64, to date: Date, thenReadSortedShowing shown: Int) throws -> (Int, Double)
    func delete(destinations: [String]) throws -> Int
    func count() throws -> Int
    func bytesOnDisk() throws -> Int64
}

/// The peer: SQLite through its C API, in WAL mode, with prepared statements, the same
/// indexes, and every row read back into a Swift struct.
final class SQLitePeer: TripPeer {
    enum Failure: Error, CustomStringConvertible {
        case sqlite(String)
        var description: String {
            switch self {
            case .sqlite(let m): "SQLite: \(m)"
            }
        }
    }

    private var db: OpaquePointer?
    let path: String
    private var statements: [String: OpaquePointer] = [:]

    /// Creates the table in a new database at `path`, or, with `reopen`, opens the one there.
    /// `path` `:memory:` is an in-memory database (no journal pragmas); otherwise the
    /// database runs in WAL mode with `synchronous`. Either way the page cache may grow to
    /// `cacheMiB` (0: SQLite's default, 2 MiB).
    init(path: String, synchronous: String?, cacheMiB: Int, reopen: Bool = false) throws {
        self.path = path
        let inMemory = path == ":memory:"
        if !reopen && !inMemory {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        }
        guard sqlite3_open(path, &db) == SQLITE_OK else { throw Failure.sqlite("cannot open \(path)") }
        if !inMemory {
            try exec("PRAGMA journal_mode=WAL")
            try exec("PRAGMA synchronous=\(synchronous ?? "FULL")")
        }
        // An in-memory database keeps every page whatever the limit, but past the limit its
        // page cache looks for pages to recycle on every new page, so it gets the limit too.
        if cacheMiB > 0 { try exec("PRAGMA cache_size=-\(cacheMiB * 1024)") }
        if reopen { return }
        try exec(
            "CREATE TABLE trip (pk INTEGER PRIMARY KEY, id BLOB NOT NULL UNIQUE, destination TEXT NOT NULL, "
                + "startDate REAL NOT NULL, budget REAL NOT NULL, flag INTEGER NOT NULL, note TEXT NOT NULL)")
        try exec("CREATE INDEX trip_destination ON trip(destination)")
        try exec("CREATE INDEX trip_startDate ON trip(startDate)")
    }

    deinit { close() }

    /// Finalises the statements and closes the connection (which checkpoints the WAL).
    func close() {
        for statement in statements.values { sqlite3_finalize(statement) }
        statements = [:]
        if db != nil { sqlite3_close(db) }
        db = nil
    }

    func exec(_ sql: String) throws {
        var message: UnsafeMutablePointer<CChar>?
        guard sqlite3_exec(db, sql, nil, nil, &message) == SQLITE_OK else {
            let text = message.map { String(cString: $0) } ?? "?"
            sqlite3_free(message)
            throw Failure.sqlite("\(sql): \(text)")
        }
    }

    func statement(_ sql: String) throws -> OpaquePointer {
        if let existing = statements[sql] {
            sqlite3_reset(existing)
            sqlite3_clear_bindings(existing)
            return existing
        }
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK, let statement else {
            throw Failure.sqlite("prepare \(sql): \(String(cString: sqlite3_errmsg(db)))")
        }
        statements[sql] = statement
        return statement
    }

    static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    func bind(_ statement: OpaquePointer, _ index: Int32, _ id: UUID) {
        var uuid = id.uuid
        withUnsafeBytes(of: &uuid) { raw in
            _ = sqlite3_bind_blob(statement, index, raw.baseAddress, 16, Self.transient)
        }
    }

    func insert(_ rows: [TripRow]) throws {
        try exec("BEGIN")
        let s = try statement(
            "INSERT INTO trip (pk, id, destination, startDate, budget, flag, note) VALUES (?, ?, ?, ?, ?, ?, ?)")
        for row in rows {
            sqlite3_reset(s)
            sqlite3_bind_int64(s, 1, row.pk)
            bind(s, 2, row.id)
            sqlite3_bind_text(s, 3, row.destination, -1, Self.transient)
            sqlite3_bind_double(s, 4, row.startDate.timeIntervalSinceReferenceDate)
            sqlite3_bind_double(s, 5, row.budget)
            sqlite3_bind_int(s, 6, row.flag ? 1 : 0)
            sqlite3_bind_text(s, 7, row.note, -1, Self.transient)
            guard sqlite3_step(s) == SQLITE_DONE else {
                throw Failure.sqlite("insert failed: \(String(cString: sqlite3_errmsg(db)))")
            }
        }
        try exec("COMMIT")
    }

    private func read(_ s: OpaquePointer) -> TripRow {
        var uuid: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        if let blob = sqlite3_column_blob(s, 1), sqlite3_column_bytes(s, 1) == 16 {
            withUnsafeMutableBytes(of: &uuid) { $0.copyMemory(from: UnsafeRawBufferPointer(start: blob, count: 16)) }
        }
        return TripRow(
            pk: sqlite3_column_int64(s, 0), id: UUID(uuid: uuid),
            destination: String(cString: sqlite3_column_text(s, 2)),
            startDate: Date(timeIntervalSinceReferenceDate: sqlite3_column_double(s, 3)),
            budget: sqlite3_column_double(s, 4), flag: sqlite3_column_int(s, 5) != 0,
            note: String(cString: sqlite3_column_text(s, 6)))
    }

    static let columns = "pk, id, destination, startDate, budget, flag, note"

    func rows(_ s: OpaquePointer) -> [TripRow] {
        var result: [TripRow] = []
        while sqlite3_step(s) == SQLITE_ROW { result.append(read(s)) }
        return result
    }

    func fetch(id: UUID) throws -> TripRow? {
        let s = try statement("SELECT \(Self.columns) FROM trip WHERE id = ?")
        bind(s, 1, id)
        return rows(s).first
    }

    func fetch(destination: String) throws -> [TripRow] {
        let s = try statement("SELECT \(Self.columns) FROM trip WHERE destination = ?")
        sqlite3_bind_text(s, 1, destination, -1, Self.transient)
        return rows(s)
    }

    func fetch(after date: Date, limit: Int) throws -> [TripRow] {
        let s = try statement("SELECT \(Self.columns) FROM trip WHERE startDate > ? ORDER BY startDate LIMIT ?")
        sqlite3_bind_double(s, 1, date.timeIntervalSinceReferenceDate)
        sqlite3_bind_int(s, 2, Int32(limit))
        return rows(s)
    }

    /// Steps through every row, reading each into a `TripRow` and handing it to `body`.
    func enumerateAll(_ body: (TripRow) -> Void) throws {
        let s = try statement("SELECT \(Self.columns) FROM trip")
        while true {
            let status = sqlite3_step(s)
            if status == SQLITE_DONE { break }
            guard status == SQLITE_ROW else { throw Failure.sqlite("enumerate failed: \(status)") }
            body(read(s))
        }
    }

    func countUnindexed(budgetAbove: Double) throws -> Int {
        let s = try statement("SELECT count(*) FROM trip WHERE budget > ? AND flag = 0")
        sqlite3_bind_double(s, 1, budgetAbove)
        guard sqlite3_step(s) == SQLITE_ROW else { throw Failure.sqlite("count failed") }
        return Int(sqlite3_column_int64(s, 0))
    }

    /// `UPDATE … SET budget WHERE pk`, one transaction per `batch` rows.
    func updateBudgets(_ rows: [TripRow], batch: Int) throws {
        var start = 0
        while start < rows.count {
            try exec("BEGIN")
            let s = try statement("UPDATE trip SET budget = ? WHERE pk = ?")
            for row in rows[start..<min(start + batch, rows.count)] {
                sqlite3_reset(s)
                sqlite3_bind_double(s, 1, row.budget + 1)
                sqlite3_bind_int64(s, 2, row.pk)
                guard sqlite3_step(s) == SQLITE_DONE, sqlite3_changes(db) == 1 else {
                    throw Failure.sqlite("update failed")
                }
            }
            try exec("COMMIT")
            start += batch
        }
    }

    /// For each `(id, budget)`: selects the row by its id, then updates its budget by its
    /// key, one transaction per `batch` rows: fetch, change, save.
    func fetchAndUpdateBudgets(_ changes: [(UUID, Double)], batch: Int) throws {
        var start = 0
        while start < changes.count {
            try exec("BEGIN")
            for (id, budget) in changes[start..<min(start + batch, changes.count)] {
                guard let row = try fetch(id: id) else { throw Failure.sqlite("no row \(id)") }
                try setBudget(pk: row.pk, budget)
            }
            try exec("COMMIT")
            start += batch
        }
    }

    /// For each id: selects the row, then raises its budget by 1; committing once at the
    /// end, or every `commitEvery` steps.
    func steps(_ ids: [UUID], commitEvery: Int?) throws {
        try exec("BEGIN")
        for (i, id) in ids.enumerated() {
            guard let row = try fetch(id: id) else { throw Failure.sqlite("no row \(id)") }
            try setBudget(pk: row.pk, row.budget + 1)
            if let commitEvery, (i + 1) % commitEvery == 0 {
                try exec("COMMIT")
                try exec("BEGIN")
            }
        }
        try exec("COMMIT")
    }

    private func setBudget(pk: Int64, _ budget: Double) throws {
        let s = try statement("UPDATE trip SET budget = ? WHERE pk = ?")
        sqlite3_bind_double(s, 1, budget)
        sqlite3_bind_int64(s, 2, pk)
        guard sqlite3_step(s) == SQLITE_DONE, sqlite3_changes(db) == 1 else { throw Failure.sqlite("update failed") }
    }

    /// Inserts each row its id does not find, in one transaction.
    func importLookingUp(_ rows: [TripRow]) throws {
        try exec("BEGIN")
        for row in rows where try fetch(id: row.id) == nil { try insertOne(row) }
        try exec("COMMIT")
    }

    /// One row: in a transaction of its own (autocommit), or in the caller's.
    func insertOne(_ row: TripRow) throws {
        let s = try statement(
            "INSERT INTO trip (pk, id, destination, startDate, budget, flag, note) VALUES (?, ?, ?, ?, ?, ?, ?)")
        sqlite3_bind_int64(s, 1, row.pk)
        bind(s, 2, row.id)
        sqlite3_bind_text(s, 3, row.destination, -1, Self.transient)
        sqlite3_bind_double(s, 4, row.startDate.timeIntervalSinceReferenceDate)
        sqlite3_bind_double(s, 5, row.budget)
        sqlite3_bind_int(s, 6, row.flag ? 1 : 0)
        sqlite3_bind_text(s, 7, row.note, -1, Self.transient)
        guard sqlite3_step(s) == SQLITE_DONE else { throw Failure.sqlite("insert failed") }
    }

    /// Moves row `pk` to `date` (autocommit), then queries the keys of every row by start
    /// date (from the index alone) and the first `shown` rows whole: what an app that keeps
    /// a sorted list and shows its top runs after each save. Returns the rows and the sum
    /// of the shown rows' dates.
    func move(pk: Int64, to date: Date, thenReadSortedShowing shown: Int) throws -> (Int, Double) {
        let update = try statement("UPDATE trip SET startDate = ? WHERE pk = ?")
        sqlite3_bind_double(update, 1, date.timeIntervalSinceReferenceDate)
        sqlite3_bind_int64(update, 2, pk)
        guard sqlite3_step(update) == SQLITE_DONE, sqlite3_changes(db) == 1 else {
            throw Failure.sqlite("move failed")
        }
        let keysQuery = try statement("SELECT pk FROM trip ORDER BY startDate")
        var keys: [Int64] = []
        while true {
            let status = sqlite3_step(keysQuery)
            if status == SQLITE_DONE { break }
            guard status == SQLITE_ROW else { throw Failure.sqlite("sorted query failed: \(status)") }
            keys.append(sqlite3_column_int64(keysQuery, 0))
        }
        let top = try statement("SELECT \(Self.columns) FROM trip ORDER BY startDate LIMIT ?")
        sqlite3_bind_int(top, 1, Int32(shown))
        let sum = rows(top).reduce(0.0) { $0 + $1.startDate.timeIntervalSinceReferenceDate }
        return (keys.count, sum)
    }

    /// `DELETE … WHERE destination IN (…)`; returns the rows deleted.
    func delete(destinations: [String]) throws -> Int {
        let marks = Array(repeating: "?", count: destinations.count).joined(separator: ", ")
        let s = try statement("DELETE FROM trip WHERE destination IN (\(marks))")
        for (i, destination) in destinations.enumerated() {
            sqlite3_bind_text(s, Int32(i + 1), destination, -1, Self.transient)
        }
        guard sqlite3_step(s) == SQLITE_DONE else { throw Failure.sqlite("delete failed") }
        return Int(sqlite3_changes(db))
    }

    func count() throws -> Int {
        let s = try statement("SELECT count(*) FROM trip")
        guard sqlite3_step(s) == SQLITE_ROW else { throw Failure.sqlite("count failed") }
        return Int(sqlite3_column_int64(s, 0))
    }

    /// The database and its WAL after a truncating checkpoint, in bytes.
    func bytesOnDisk() throws -> Int64 {
        for statement in statements.values { sqlite3_reset(statement) }
        try exec("PRAGMA wal_checkpoint(TRUNCATE)")
        var total: Int64 = 0
        for suffix in ["", "-wal"] {
            let attributes = try? FileManager.default.attributesOfItem(atPath: path + suffix)
            total += (attributes?[.size] as? NSNumber)?.int64Value ?? 0
        }
        return total
    }
}
