import CLibPQ
import Foundation
import Stowage

/// One libpq connection, used by one thread at a time (the store hands connections out
/// from its pool). Every statement goes through `PQexecParams` with its values as bound
/// parameters in text form: no value is ever spliced into a statement's text.
package final class PostgresConnection: @unchecked Sendable {
    // @unchecked Sendable: a connection is used by one call at a time; the pool that
    // passes it between threads is behind a Mutex.
    private var handle: OpaquePointer?
    /// Whether the server's last answer said the connection is gone, or a statement could
    /// not be sent: the pool then drops it rather than hand it out again.
    private(set) var isBroken = false

    /// Connects with `conninfo` (a `postgresql://` URI or `key=value` pairs).
    /// - Throws: ``DataStoreError`` `.ioFailure` naming libpq's reason when the server
    ///   cannot be reached within `connectTimeout` seconds or refuses the connection.
    package init(_ conninfo: String, connectTimeout: Int) throws {
        // libpq processes the pairs in order and keeps the last value of a key; the
        // connection string comes last, expanded in place (`expand_dbname`), so a timeout
        // or encoding it names wins over the defaults given here.
        let keys = ["connect_timeout", "client_encoding", "dbname"]
        let values = [String(max(1, connectTimeout)), "UTF8", conninfo]
        handle = withCStrings(keys) { keyPointers in
            withCStrings(values) { valuePointers in
                var k = keyPointers.map { $0.map { UnsafePointer($0) } } + [nil]
                var v = valuePointers.map { $0.map { UnsafePointer($0) } } + [nil]
                return PQconnectdbParams(&k, &v, 1)
            }
        }
        guard let handle, PQstatus(handle) == CONNECTION_OK else {
            let reason = handle.map { Self.message(PQerrorMessage($0)) } ?? "out of memory"
            if let handle { PQfinish(handle) }
            self.handle = nil
            throw DataStoreError(.ioFailure, "cannot connect to PostgreSQL: \(reason)")
        }
        // The server's notices ("relation already exists, skipping") are not errors, and
        // libpq would print each one to standard error.
        PQsetNoticeProcessor(handle, { _, _ in }, nil)
        // Every text this side sends and reads is UTF-8, whatever the string asked for.
        guard PQsetClientEncoding(handle, "UTF8") == 0 else {
            throw DataStoreError(.ioFailure, "PostgreSQL refused the UTF8 client encoding")
        }
    }

    deinit {
        if let handle { PQfinish(handle) }
    }

    /// The statements prepared on this connection, by text: the store's statements differ
    /// only in their parameters, so each shape is parsed and planned once per connection
    /// rather than on every call.
    private var prepared: [String: String] = [:]
    /// The number in the next prepared statement's name (`s0`, `s1`, …), never reused.
    private var nextStatement = 0
    /// The most statements kept prepared; past it, statements run unprepared.
    static let preparedLimit = 512

    /// Runs one statement with `parameters` bound to `$1`, `$2`, … (`nil` is SQL `NULL`),
    /// as a prepared statement (prepared on first use). With `binary`, the result's values
    /// come in PostgreSQL's binary forms (``PostgresRows/bytes(_:_:)``) instead of text.
    /// - Throws: ``PostgresError`` with the server's SQLSTATE and message.
    @discardableResult
    package func execute(_ sql: String, _ parameters: [String?] = [], binary: Bool = false) throws -> PostgresRows {
        guard let handle else { throw PostgresError(state: "08003", message: "the connection is closed") }
        var name = prepared[sql]
        if name == nil, prepared.count < Self.preparedLimit {
            let fresh = "s\(nextStatement)"
            nextStatement += 1
            _ = try check(PQprepare(handle, fresh, sql, Int32(parameters.count), nil), handle)
            prepared[sql] = fresh
            name = fresh
        }
        let result: OpaquePointer? = withCStrings(parameters) { pointers in
            var values = pointers.map { $0.map { UnsafePointer($0) } }
            let format: Int32 = binary ? 1 : 0
            if let name { return PQexecPrepared(handle, name, Int32(parameters.count), &values, nil, nil, format) }
            return PQexecParams(handle, sql, Int32(parameters.count), nil, &values, nil, nil, format)
        }
        return try check(result, handle)
    }

    /// Sends `statements` at once, in libpq's pipeline mode, and returns their results in
    /// order: one round trip to the server for all of them, where ``execute(_:_:)`` takes
    /// one each. The first statement that fails throws its error; the ones after it are
    /// not run (and a transaction they were in is left failed, for the caller to roll back).
    ///
    /// Only for statements whose results are small (writes, counts, short look-ups): the
    /// connection blocks while it sends, so results the server could not send meanwhile
    /// must fit in the socket's buffers.
    package func pipeline(_ statements: [(sql: String, parameters: [String?])]) throws -> [PostgresRows] {
        guard let handle else { throw PostgresError(state: "08003", message: "the connection is closed") }
        guard !statements.isEmpty else { return [] }
        guard PQenterPipelineMode(handle) == 1 else {
            throw PostgresError(
                state: "", message: "libpq cannot enter pipeline mode: " + Self.message(PQerrorMessage(handle)))
        }
        defer { PQexitPipelineMode(handle) }
        // What each result that comes back answers: the prepare of a statement's text
        // (`prepares`), or statement i.
        var answers: [Int?] = []
        var prepares: [String] = []
        for (i, statement) in statements.enumerated() {
            var name = prepared[statement.sql]
            if name == nil, prepared.count < Self.preparedLimit {
                let fresh = "s\(nextStatement)"
                nextStatement += 1
                guard PQsendPrepare(handle, fresh, statement.sql, Int32(statement.parameters.count), nil) == 1 else {
                    return try abandonPipeline(handle)
                }
                prepared[statement.sql] = fresh
                prepares.append(statement.sql)
                answers.append(nil)
                name = fresh
            }
            let sent = withCStrings(statement.parameters) { pointers in
                var values = pointers.map { $0.map { UnsafePointer($0) } }
                let count = Int32(statement.parameters.count)
                if let name { return PQsendQueryPrepared(handle, name, count, &values, nil, nil, 0) }
                return PQsendQueryParams(handle, statement.sql, count, nil, &values, nil, nil, 0)
            }
            guard sent == 1 else { return try abandonPipeline(handle) }
            answers.append(i)
        }
        guard PQpipelineSync(handle) == 1 else { return try abandonPipeline(handle) }
        var results: [PostgresRows] = []
        var failure: PostgresError?
        var prepareIndex = 0
        for answer in answers {
            let prepare = answer == nil ? prepares[prepareIndex] : nil
            if answer == nil { prepareIndex += 1 }
            // Each command's results end with a null result.
            var rows: PostgresRows?
            while let result = PQgetResult(handle) {
                let status = PQresultStatus(result)
                if status == PGRES_PIPELINE_ABORTED {
                    // Not run: a prepare that did not run left no statement behind.
                    if let prepare { prepared[prepare] = nil }
                    PQclear(result)
                    continue
                }
                if status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK {
                    if answer != nil { rows = PostgresRows(result) } else { PQclear(result) }
                } else {
                    if let prepare { prepared[prepare] = nil }
                    if failure == nil { failure = error(of: result, handle) } else { PQclear(result) }
                }
            }
            if let rows { results.append(rows) }
        }
        // The sync's own result, then the end of the pipeline.
        while let result = PQgetResult(handle) {
            let status = PQresultStatus(result)
            PQclear(result)
            if status == PGRES_PIPELINE_SYNC { break }
        }
        if let failure { throw failure }
        return results
    }

    /// libpq refused to queue a statement: the connection is not usable any more.
    private func abandonPipeline(_ handle: OpaquePointer) throws -> [PostgresRows] {
        isBroken = true
        throw PostgresError(state: "08006", message: Self.message(PQerrorMessage(handle)))
    }

    /// The error a failed result reports (and frees the result).
    private func error(of result: OpaquePointer, _ handle: OpaquePointer) -> PostgresError {
        let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) } ?? ""
        let message = Self.message(PQresultErrorMessage(result))
        PQclear(result)
        // A connection the server ended (`57P01`, an administrator's or a shutdown's) may
        // still look open to libpq until its next use.
        if PQstatus(handle) != CONNECTION_OK || state.hasPrefix("08") || state.isEmpty || state.hasPrefix("57P") {
            isBroken = true
        }
        return PostgresError(state: state, message: message.isEmpty ? Self.message(PQerrorMessage(handle)) : message)
    }

    /// The result of a statement, or the error it reports.
    private func check(_ result: OpaquePointer?, _ handle: OpaquePointer) throws -> PostgresRows {
        guard let result else {
            isBroken = true
            throw PostgresError(state: "08006", message: Self.message(PQerrorMessage(handle)))
        }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else { throw error(of: result, handle) }
        return PostgresRows(result)
    }

    /// Runs statements with no parameters, separated by semicolons (a script).
    package func run(_ script: String) throws {
        guard let handle else { throw PostgresError(state: "08003", message: "the connection is closed") }
        guard let result = PQexec(handle, script) else {
            isBroken = true
            throw PostgresError(state: "08006", message: Self.message(PQerrorMessage(handle)))
        }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK || status == PGRES_EMPTY_QUERY else {
            throw error(of: result, handle)
        }
        PQclear(result)
    }

    /// Whether the connection is idle outside a transaction, as far as libpq knows.
    var isIdle: Bool {
        guard let handle else { return false }
        return PQtransactionStatus(handle) == PQTRANS_IDLE
    }

    /// Whether a transaction is open on the connection (or failed and awaits its rollback).
    var isInTransaction: Bool {
        guard let handle else { return false }
        let status = PQtransactionStatus(handle)
        return status == PQTRANS_INTRANS || status == PQTRANS_INERROR
    }

    private static func message(_ pointer: UnsafePointer<CChar>?) -> String {
        guard let pointer else { return "" }
        return String(cString: pointer).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// A result's rows, in text form.
package final class PostgresRows {
    private let result: OpaquePointer
    package let count: Int

    init(_ result: OpaquePointer) {
        self.result = result
        self.count = Int(PQntuples(result))
    }

    deinit { PQclear(result) }

    /// Whether the value at (`row`, `column`) is SQL `NULL`.
    package func isNull(_ row: Int, _ column: Int) -> Bool {
        PQgetisnull(result, Int32(row), Int32(column)) != 0
    }

    /// The value at (`row`, `column`) as text, `nil` for `NULL`.
    package func text(_ row: Int, _ column: Int) -> String? {
        guard !isNull(row, column), let value = PQgetvalue(result, Int32(row), Int32(column)) else { return nil }
        return String(cString: value)
    }

    /// The value at (`row`, `column`) as the server sent it: NUL-terminated text, or `nil`
    /// for `NULL`. Valid while the rows are.
    package func pointer(_ row: Int, _ column: Int) -> UnsafePointer<CChar>? {
        guard !isNull(row, column), let value = PQgetvalue(result, Int32(row), Int32(column)) else { return nil }
        return UnsafePointer(value)
    }

    /// The value at (`row`, `column`) as the bytes the server sent (its binary form, for a
    /// statement run with `binary`), or `nil` for `NULL`. Valid while the rows are.
    package func bytes(_ row: Int, _ column: Int) -> UnsafeRawBufferPointer? {
        guard !isNull(row, column), let value = PQgetvalue(result, Int32(row), Int32(column)) else { return nil }
        return UnsafeRawBufferPointer(start: value, count: Int(PQgetlength(result, Int32(row), Int32(column))))
    }

    /// The number of rows the statement changed (`INSERT`, `UPDATE`, `DELETE`).
    package var changed: Int { Int(String(cString: PQcmdTuples(result))) ?? 0 }
}

/// An error the server (or libpq) reported for a statement.
package struct PostgresError: Error, CustomStringConvertible {
    /// The SQLSTATE code, such as `23505` for a unique violation.
    package let state: String
    package let message: String

    package var description: String { state.isEmpty ? message : "\(message) (SQLSTATE \(state))" }
    /// A unique constraint or exclusion violation.
    var isUniqueViolation: Bool { state == "23505" }
    /// The connection failed (class 08), or libpq gave no state at all.
    var isConnectionFailure: Bool { state.hasPrefix("08") || state.isEmpty || state == "57P01" }
}

/// Calls `body` with C strings for `strings` (`nil` for each `nil`), valid only during
/// the call.
private func withCStrings<R>(_ strings: [String?], _ body: ([UnsafeMutablePointer<CChar>?]) throws -> R) rethrows
    -> R
{
    // One allocation for every string, each followed by its NUL (a `strdup` apiece was a
    // tenth of a single-row save's own time in a profile).
    var total = 0
    for string in strings { total += (string?.utf8.count ?? 0) + 1 }
    let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: total)
    defer { buffer.deallocate() }
    var pointers: [UnsafeMutablePointer<CChar>?] = []
    pointers.reserveCapacity(strings.count)
    var offset = 0
    for string in strings {
        guard var string else {
            pointers.append(nil)
            continue
        }
        let start = buffer + offset
        let count = string.withUTF8 { bytes in
            bytes.withMemoryRebound(to: CChar.self) { chars in
                if let base = chars.baseAddress { start.update(from: base, count: chars.count) }
                return chars.count
            }
        }
        start[count] = 0
        pointers.append(start)
        offset += count + 1
    }
    return try body(pointers)
}
