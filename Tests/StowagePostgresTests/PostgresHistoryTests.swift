import Foundation
import Stowage
import StowageTestSupport
import Testing

@testable import StowagePostgres

/// A note whose title outlives it in the history, with a unique code (so that inserts can
/// upsert) and a date kept to more than the microsecond.
@Model final class PostgresHistoryNote {
    @Attribute(.unique) var code: String
    @Attribute(.preserveValueOnDeletion) var title: String
    var body: String
    var stars: Int
    var when: Date

    init(code: String, title: String, body: String, stars: Int = 0, when: Date = Date()) {
        self.code = code
        self.title = title
        self.body = body
        self.stars = stars
        self.when = when
    }
}

/// `PostgresStoreConfiguration.keepsHistory`: the `stowage_history` table
/// (`Formats/postgres.md`, "The history") as `fetchHistory` reads it, from one process and
/// from another, with tokens, upserts, batch deletes, `deleteHistory`, concurrent savers and
/// a layout 1 database opened.
@Suite("PostgresStore history")
struct PostgresHistoryTests {
    static var all: HistoryDescriptor<DefaultHistoryTransaction> { HistoryDescriptor() }

    static func container(_ url: String, keepsHistory: Bool = true) throws -> ModelContainer {
        let schema = Schema([PostgresHistoryNote.self])
        var configuration = PostgresStoreConfiguration(name: "postgres", schema: schema, url: url)
        configuration.keepsHistory = keepsHistory
        return try ModelContainer(for: schema, configurations: [configuration])
    }

    /// The note's properties by key path.
    static var names: [AnyKeyPath: String] {
        [
            \PostgresHistoryNote.code: "code", \PostgresHistoryNote.title: "title", \PostgresHistoryNote.body: "body",
            \PostgresHistoryNote.stars: "stars", \PostgresHistoryNote.when: "when",
        ]
    }

    /// Each transaction as one line: author, then each change with what an app reads of it.
    static func lines(_ transactions: [DefaultHistoryTransaction]) -> [String] {
        transactions.map { transaction in
            let changes = transaction.changes.map { change -> String in
                switch change {
                case .insert(let insert):
                    return "insert \(insert.changedPersistentIdentifier.primaryKey ?? -1)"
                case .update(let update):
                    let names = (update as? DefaultHistoryUpdate<PostgresHistoryNote>)?.updatedAttributes.map {
                        Self.names[$0 as AnyKeyPath] ?? "\($0)"
                    }
                    return "update \(update.changedPersistentIdentifier.primaryKey ?? -1) \(names ?? ["?"])"
                case .delete(let delete):
                    let typed = delete as? DefaultHistoryDelete<PostgresHistoryNote>
                    let title = typed?.tombstone[\.title] as? String
                    let body = typed?.tombstone[\.body] as? String
                    return
                        "delete \(delete.changedPersistentIdentifier.primaryKey ?? -1) \(title ?? "-") \(body ?? "-")"
                @unknown default:
                    return "unknown"
                }
            }
            return "\(transaction.author ?? "-"): " + changes.joined(separator: "; ")
        }
    }

    /// Three saves by two authors read back whole from this store and from another
    /// process's (a second container on the database); a token from the first then finds
    /// exactly the transaction the other saved after it.
    @Test func savesAreTransactionsForEveryProcessInCommitOrder() throws {
        guard let cluster = try PostgresStoreTests.cluster() else { return }
        let url = try cluster.freshDatabase()
        let context = ModelContext(try Self.container(url))
        context.author = "importer"
        // A date to the nanosecond: the database keeps the microsecond, and an update that
        // leaves it alone must not count it as changed.
        let kept = PostgresHistoryNote(
            code: "k", title: "Kept", body: "first", when: Date(timeIntervalSince1970: 1_700_000_000.123_456_789))
        let gone = PostgresHistoryNote(code: "g", title: "Gone", body: "soon", stars: 2)
        context.insert(kept)
        context.insert(gone)
        try context.save()
        context.author = "editor"
        kept.body = "second"
        try context.save()
        context.delete(gone)
        try context.save()
        let k = try #require(kept.persistentModelID.primaryKey)
        let g = try #require(gone.persistentModelID.primaryKey)

        let history = try context.fetchHistory(Self.all)
        #expect(
            Self.lines(history) == [
                "importer: insert \(k); insert \(g)",
                "editor: update \(k) [\"body\"]",
                "editor: delete \(g) Gone -",
            ])
        #expect(history.allSatisfy { $0.bundleIdentifier == ProcessInfo.processInfo.processName })
        #expect(history.allSatisfy { $0.processIdentifier == String(ProcessInfo.processInfo.processIdentifier) })
        #expect(history.map(\.transactionIdentifier) == history.map(\.transactionIdentifier).sorted())
        #expect(zip(history, history.dropFirst()).allSatisfy { $0.token < $1.token })
        #expect(history.allSatisfy { abs($0.timestamp.timeIntervalSinceNow) < 600 })

        let other = ModelContext(try Self.container(url))
        #expect(Self.lines(try other.fetchHistory(Self.all)) == Self.lines(history))
        other.author = "other"
        other.insert(PostgresHistoryNote(code: "o", title: "Other", body: "from elsewhere"))
        try other.save()
        let token = try #require(history.last).token
        var later = HistoryDescriptor<DefaultHistoryTransaction>()
        later.predicate = #Predicate { $0.token > token }
        let after = try context.fetchHistory(later)
        #expect(after.map(\.author) == ["other"])
        #expect(after.first?.changes.count == 1)
    }

    /// An insert that meets a stored row on the unique code is an update of that row,
    /// naming only what changed; a delete by predicate is a delete with its preserved
    /// values; `deleteHistory` removes transactions for every process.
    @Test func upsertsBatchDeletesAndDeleteHistory() throws {
        guard let cluster = try PostgresStoreTests.cluster() else { return }
        let url = try cluster.freshDatabase()
        let container = try Self.container(url)
        let first = ModelContext(container)
        let when = Date(timeIntervalSince1970: 1_700_000_000)
        let note = PostgresHistoryNote(code: "a", title: "A", body: "one", when: when)
        first.insert(note)
        try first.save()
        let key = try #require(note.persistentModelID.primaryKey)

        let second = ModelContext(container)
        second.insert(PostgresHistoryNote(code: "a", title: "A", body: "two", stars: 5, when: when))
        try second.save()
        try second.delete(model: PostgresHistoryNote.self, where: #Predicate { $0.code == "a" })
        try second.save()

        let history = try first.fetchHistory(Self.all)
        #expect(
            Self.lines(history) == [
                "-: insert \(key)",
                "-: update \(key) [\"body\", \"stars\"]",
                "-: delete \(key) A -",
            ])
        // Deleted from another process's store, gone for this one too.
        let other = ModelContext(try Self.container(url))
        var firstTwo = HistoryDescriptor<DefaultHistoryTransaction>()
        firstTwo.fetchLimit = 2
        try other.deleteHistory(firstTwo)
        #expect(Self.lines(try first.fetchHistory(Self.all)) == [Self.lines(history)[2]])
        #expect(try first.fetchCount(FetchDescriptor<PostgresHistoryNote>()) == 0)
    }

    /// A store opened without the option writes no transactions and refuses to read them;
    /// one opened with it on the same database reads only the saves of stores that keep it.
    @Test func aStoreWithoutHistoryWritesNoneAndReadsNone() throws {
        guard let cluster = try PostgresStoreTests.cluster() else { return }
        let url = try cluster.freshDatabase()
        let plain = ModelContext(try Self.container(url, keepsHistory: false))
        plain.insert(PostgresHistoryNote(code: "p", title: "Plain", body: "no history"))
        try plain.save()
        let error = #expect(throws: DataStoreError.self) { try plain.fetchHistory(Self.all) }
        #expect(error?.code == .unsupportedFeature)
        let keeping = ModelContext(try Self.container(url))
        #expect(try keeping.fetchHistory(Self.all).isEmpty)
        keeping.insert(PostgresHistoryNote(code: "h", title: "Kept", body: "history"))
        try keeping.save()
        #expect(try keeping.fetchHistory(Self.all).count == 1)
    }

    /// Four threads, each with its own container (as processes would be), save at once:
    /// every save is one transaction, the identifiers are distinct and each insert is in
    /// exactly one.
    @Test func concurrentSaversEachGetOneTransaction() throws {
        guard let cluster = try PostgresStoreTests.cluster() else { return }
        let url = try cluster.freshDatabase()
        let containers = try (0..<4).map { _ in try Self.container(url) }
        let failures = PosixMutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { worker in
            let context = ModelContext(containers[worker])
            context.author = "worker \(worker)"
            do {
                for i in 0..<25 {
                    context.insert(PostgresHistoryNote(code: "\(worker)-\(i)", title: "t", body: "b"))
                    try context.save()
                }
            } catch {
                failures.withLock { $0.append("\(worker): \(error)") }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty)
        let history = try ModelContext(containers[0]).fetchHistory(Self.all)
        #expect(history.count == 100)
        #expect(Set(history.map(\.transactionIdentifier)).count == 100)
        let inserted = history.flatMap(\.changes).compactMap { change -> Int64? in
            guard case .insert(let insert) = change else { return nil }
            return insert.changedPersistentIdentifier.primaryKey
        }
        #expect(inserted.count == 100 && Set(inserted).count == 100)
        for worker in 0..<4 {
            #expect(history.filter { $0.author == "worker \(worker)" }.count == 25)
        }
    }

    /// A database of layout 1 (before the history) opens: its history table is made and
    /// its layout becomes 2, and its saves from then on are transactions.
    @Test func aLayout1DatabaseGainsItsHistory() throws {
        guard let cluster = try PostgresStoreTests.cluster() else { return }
        let url = try cluster.freshDatabase()
        let old = ModelContext(try Self.container(url, keepsHistory: false))
        old.insert(PostgresHistoryNote(code: "before", title: "Before", body: "layout 1"))
        try old.save()
        // What layout 1 had: no history table, no sequence.
        let connection = try PostgresConnection(url, connectTimeout: 5)
        try connection.run("DROP TABLE stowage_history")
        try connection.run("DROP SEQUENCE stowage_history_txn")
        try connection.run("UPDATE stowage_metadata SET \"value\" = '1' WHERE \"key\" = 'layout'")

        let context = ModelContext(try Self.container(url))
        let layout = try connection.execute("SELECT \"value\" FROM stowage_metadata WHERE \"key\" = 'layout'")
        #expect(layout.text(0, 0) == "2")
        #expect(try context.fetchHistory(Self.all).isEmpty)
        #expect(try context.fetchCount(FetchDescriptor<PostgresHistoryNote>()) == 1)
        context.insert(PostgresHistoryNote(code: "after", title: "After", body: "layout 2"))
        try context.save()
        #expect(try context.fetchHistory(Self.all).count == 1)
    }

    /// A history row whose changes do not read is `corruptStore`, naming the transaction.
    @Test func aDamagedHistoryRowIsReported() throws {
        guard let cluster = try PostgresStoreTests.cluster() else { return }
        let url = try cluster.freshDatabase()
        let context = ModelContext(try Self.container(url))
        context.insert(PostgresHistoryNote(code: "x", title: "X", body: "x"))
        try context.save()
        let connection = try PostgresConnection(url, connectTimeout: 5)
        try connection.run("UPDATE stowage_history SET \"changes\" = '[{\"entity\": 5}]'")
        let error = #expect(throws: DataStoreError.self) { try context.fetchHistory(Self.all) }
        #expect(error?.code == .corruptStore)
        #expect(error?.message.contains("stowage_history transaction") == true, "\(String(describing: error))")
    }
}
