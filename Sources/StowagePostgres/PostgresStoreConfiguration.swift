import Foundation
import Stowage

/// Opens a ``PostgresStore``: the container's models in a PostgreSQL database, which
/// several processes on several machines may share.
///
/// ```swift
/// let configuration = PostgresStoreConfiguration(
///     name: "main", schema: schema, url: "postgresql://app@db.internal/packing")
/// let container = try ModelContainer(for: schema, configurations: [configuration])
/// ```
///
/// Stowage's own: SwiftData stores only in Core Data's SQLite.
public struct PostgresStoreConfiguration: DataStoreConfiguration {
    /// The configuration opens a ``PostgresStore``.
    public typealias Store = PostgresStore

    /// The configuration's name.
    public var name: String
    /// The schema the database holds, or `nil` for the container's.
    public var schema: Schema?
    /// A libpq connection string: a URI (`postgresql://user@host:5432/database`) or
    /// `key=value` pairs (`host=/run/postgresql dbname=packing`). Keys libpq reads from the
    /// environment (`PGHOST`, `PGUSER`, `PGPASSWORD`, …) fill in what it leaves out.
    public var url: String
    /// How long opening the store, and each new connection after it, waits for the server
    /// before it fails with `DataStoreError.ioFailure`, in seconds (libpq's
    /// `connect_timeout`; a `connect_timeout` in ``url`` wins). Default 10.
    public var connectTimeout: Int = 10
    /// The most idle connections the store keeps for later calls; calls made at once on
    /// more threads than this open more, which are closed when they are done. Default 4.
    public var idleConnections: Int = 4
    /// Whether each save adds a transaction to the database's history, which
    /// `ModelContext.fetchHistory(_:)` reads (and `deleteHistory(_:)` trims). Default
    /// `false`: keeping it costs every save that updates or deletes a read of those rows
    /// first (to find what changed), saves of a model with a uniqueness constraint a
    /// look-up round trip, and every save the commit order of all the database's
    /// history-keeping saves (`Formats/postgres.md`, "The history"). Processes that share a
    /// database and read its history should all keep it: a save by a store that does not
    /// is in no transaction. Stowage's own: SwiftData keeps history always, as the log and
    /// memory stores do; the JSON store has the same option.
    public var keepsHistory = false

    /// A configuration for the database at `url`.
    public init(name: String = "default", schema: Schema? = nil, url: String) {
        self.name = name
        self.schema = schema
        self.url = url
    }

    /// Refuses an empty connection string and a `connectTimeout` below one second, with
    /// `DataStoreError.ioFailure`, before the container opens the store.
    public func validate() throws {
        guard !url.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw DataStoreError(.ioFailure, "the PostgreSQL connection string of configuration \"\(name)\" is empty")
        }
        guard connectTimeout > 0 else {
            throw DataStoreError(.ioFailure, "connectTimeout must be at least 1 second (\(connectTimeout))")
        }
    }
}
