import Foundation
import StowagePostgres

/// The PostgreSQL server a `postgres` cell runs on, and the databases it makes there: one
/// per run and side, dropped when the run is done.
enum PostgresBench {
    /// The environment variable that carries `--postgres` to the cells' child processes.
    static let variable = "STOWAGE_BENCH_POSTGRES"

    /// The server's libpq key=value connection string, from `--postgres` or the environment.
    static var server: String? {
        ProcessInfo.processInfo.environment[variable].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// Makes an empty database `name` on the server (dropping one left by an earlier,
    /// interrupted run) and returns the connection string for it.
    static func create(_ name: String) throws -> String {
        guard let server else { throw BenchError("no PostgreSQL server: --postgres CONNINFO") }
        let admin = try PostgresConnection(server + " dbname=postgres", connectTimeout: 10)
        try admin.run("DROP DATABASE IF EXISTS \(name)")
        try admin.run("CREATE DATABASE \(name)")
        return server + " dbname=\(name)"
    }

    /// Drops database `name`, after the connections to it are closed.
    static func drop(_ name: String) {
        guard let server, let admin = try? PostgresConnection(server + " dbname=postgres", connectTimeout: 10) else {
            return
        }
        try? admin.run("DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
    }

    /// The database's size on disk: its tables, indexes and their TOAST.
    static func size(_ conninfo: String) throws -> Int64 {
        let connection = try PostgresConnection(conninfo, connectTimeout: 10)
        let rows = try connection.execute("SELECT pg_database_size(current_database())")
        return rows.text(0, 0).flatMap(Int64.init) ?? 0
    }

    /// The server's version and the settings a save's durability depends on.
    static func describe(_ conninfo: String) -> String {
        guard let connection = try? PostgresConnection(conninfo, connectTimeout: 10),
            let rows = try? connection.execute(
                "SELECT current_setting('server_version'), current_setting('fsync'), "
                    + "current_setting('synchronous_commit')")
        else { return "PostgreSQL (version unknown)" }
        return "PostgreSQL \(rows.text(0, 0) ?? "?"), fsync=\(rows.text(0, 1) ?? "?"), "
            + "synchronous_commit=\(rows.text(0, 2) ?? "?")"
    }
}
