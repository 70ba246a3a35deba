import Foundation
@_spi(Testing) import Stowage
import StowageTestSupport
import Synchronization
import Testing

@testable import StowagePostgres

/// `PostgresStore` on a throwaway PostgreSQL cluster (`PostgresTestCluster`): the store
/// conformance suite, the differential query check, and what only a shared database
/// has: another process's view, a schema that does not match, values that would break
/// SQL spliced into text, a server that cannot be reached and a connection lost mid-save.
/// Without PostgreSQL's binaries every test returns after one printed line.
@Suite("PostgresStore")
struct PostgresStoreTests {
    /// The cluster, or `nil` after printing why there is none (once).
    static func cluster() throws -> PostgresTestCluster? {
        let cluster = try PostgresTestCluster.shared()
        if cluster == nil { Self.skipNotice() }
        return cluster
    }

    private static let noticePrinted = PosixMutex(false)
    private static func skipNotice() {
        let first = noticePrinted.withLock { printed in
            defer { printed = true }
            return !printed
        }
        if first {
            print("PostgreSQL tests skipped: \(PostgresTestCluster.unavailableReason ?? "no PostgreSQL cluster")")
        }
    }

    /// Containers over fresh databases of `cluster`.
    static func factory(_ cluster: PostgresTestCluster) -> StoreFactory {
        StoreFactory(name: "PostgresStore") { schema in
            try ModelContainer(
                for: schema,
                configurations: [
                    PostgresStoreConfiguration(name: "postgres", schema: schema, url: try cluster.freshDatabase())
                ])
        }
    }

    static func container(_ url: String, _ types: [any PersistentModel.Type] = allTestModels) throws
        -> ModelContainer
    {
        let schema = Schema(types)
        return try ModelContainer(
            for: schema, configurations: [PostgresStoreConfiguration(name: "postgres", schema: schema, url: url)])
    }

    @Test(arguments: StoreConformance.checks.map(\.0))
    func conformance(check: String) throws {
        guard let cluster = try Self.cluster() else { return }
        let run = try #require(StoreConformance.checks.first { $0.0 == check }?.1)
        try run(Self.factory(cluster))
    }

    @Test func plannedResultsEqualBruteForce() throws {
        guard let cluster = try Self.cluster() else { return }
        try DifferentialQueries.check(Self.factory(cluster))
    }

    /// A second container on the same database (as another process would open it) sees
    /// the saves, under the same identifiers. A container with fewer entities converts the
    /// tables (their empty tables go, as lightweight migration drops them); one with the
    /// schema they were converted from is then refused, not converted back.
    @Test func anotherContainerSeesTheSavesAndAnotherSchemaIsRefused() throws {
        guard let cluster = try Self.cluster() else { return }
        let url = try cluster.freshDatabase()
        let first = try Self.container(url)
        let context = ModelContext(first)
        let trip = Trip(name: "Lisbon", destination: "PT")
        let item = Item(name: "socks")
        context.insert(trip)
        trip.items.append(item)
        try context.save()
        let id = trip.persistentModelID

        let second = try Self.container(url)
        let other = ModelContext(second)
        let fetched = try #require(try other.existingModel(for: id) as? Trip)
        #expect(fetched.name == "Lisbon")
        #expect(fetched.items.map(\.name) == ["socks"])
        #expect(fetched.items.first?.trip?.persistentModelID == id)

        let fewer = ModelContext(try Self.container(url, [Trip.self, Item.self, Badge.self]))
        #expect(try fewer.fetchCount(FetchDescriptor<Trip>()) == 1)
        let error = #expect(throws: DataStoreError.self) { try Self.container(url) }
        #expect(error?.code == .schemaMismatch)
        #expect(error?.message.contains("converted from this schema") == true, "\(String(describing: error))")
    }

    /// A database that holds tables Stowage did not make, or tables of a later layout, is
    /// refused with `.wrongFormat` and left as it was.
    @Test func anotherProgramsTablesOrALaterLayoutAreRefused() throws {
        guard let cluster = try Self.cluster() else { return }
        let foreign = try cluster.freshDatabase()
        let connection = try PostgresConnection(foreign, connectTimeout: 5)
        try connection.run("CREATE TABLE \"Trip\" (id serial PRIMARY KEY, title text)")
        let error = #expect(throws: DataStoreError.self) { try Self.container(foreign) }
        #expect(error?.code == .wrongFormat)
        #expect(error?.message.contains("\"Trip\" that Stowage did not make") == true, "\(String(describing: error))")
        let left = try connection.execute("SELECT count(*) FROM pg_class WHERE relname = 'stowage_metadata'")
        #expect(left.text(0, 0) == "0")

        let later = try cluster.freshDatabase()
        _ = try Self.container(later)
        try PostgresConnection(later, connectTimeout: 5).run(
            "UPDATE stowage_metadata SET \"value\" = '4' WHERE \"key\" = 'layout'")
        let refused = #expect(throws: DataStoreError.self) { try Self.container(later) }
        #expect(refused?.code == .wrongFormat)
        #expect(refused?.message.contains("layout 4") == true, "\(String(describing: refused))")
        // Layout 3 holds a class hierarchy, which this schema does not have.
        try PostgresConnection(later, connectTimeout: 5).run(
            "UPDATE stowage_metadata SET \"value\" = '3' WHERE \"key\" = 'layout'")
        let mismatched = #expect(throws: DataStoreError.self) { try Self.container(later) }
        #expect(mismatched?.code == .schemaMismatch)
    }

    /// Strings full of quotes, backslashes, NULs and `$1`, as values and in predicates,
    /// come back exactly and find exactly their own rows.
    @Test func valuesThatLookLikeSQLRoundTripExactly() throws {
        guard let cluster = try Self.cluster() else { return }
        let container = try Self.container(try cluster.freshDatabase())
        let nasty = [
            "O'Brien", "'; DROP TABLE \"Trip\"; --", "back\\slash", "\\x00", "nul\u{0}inside", "\u{0}",
            "\u{1}0", "$1", "$1::text", "\"quoted\"", "{a,b}", "NULL", "é\u{301}", "",
        ]
        let context = ModelContext(container)
        for (i, name) in nasty.enumerated() { context.insert(Trip(name: name, destination: "d\(i)")) }
        try context.save()
        let reader = ModelContext(container)
        let all = try reader.fetch(FetchDescriptor<Trip>(sortBy: [SortDescriptor(\.destination)]))
        #expect(Set(all.map(\.name)) == Set(nasty))
        for name in nasty {
            let found = try reader.fetch(FetchDescriptor<Trip>(predicate: #Predicate { $0.name == name }))
            #expect(found.map(\.name) == [name], "\(String(reflecting: name))")
            // (`contains("")` is left out: Swift's `String.contains` and the predicate's
            // differ on the empty string, on every store.)
            guard !name.isEmpty else { continue }
            let containing = try reader.fetch(FetchDescriptor<Trip>(predicate: #Predicate { $0.name.contains(name) }))
            let expected = nasty.filter { $0.contains(name) }
            #expect(Set(containing.map(\.name)) == Set(expected), "contains \(String(reflecting: name))")
        }
        #expect(try reader.fetchCount(FetchDescriptor<Trip>()) == nasty.count)
    }

    /// `explain` says which part of a predicate went to the server and which stayed in
    /// memory, and shows PostgreSQL's plan, which uses the index of `#Index`.
    @Test func explainSaysWhereEachPartRuns() throws {
        guard let cluster = try Self.cluster() else { return }
        let container = try Self.container(try cluster.freshDatabase())
        let context = ModelContext(container)
        for i in 0..<50 {
            context.insert(Chore(seq: i, title: "t\(i)", priority: i % 7, isCompleted: i % 2 == 0, dueDate: nil))
        }
        try context.save()
        let descriptor = FetchDescriptor<Chore>(
            predicate: #Predicate { $0.priority == 3 && $0.title.localizedStandardContains("T1") })
        let plan = try context.explain(descriptor)
        #expect(plan.contains("\"priority\" = $1::bigint"), "\(plan)")
        #expect(plan.contains("in memory: WHERE"), "\(plan)")
        #expect(plan.contains("PostgreSQL's plan:"), "\(plan)")
        let found = try context.fetch(descriptor).map(\.seq).sorted()
        #expect(found == (0..<50).filter { $0 % 7 == 3 && "t\($0)".contains("t1") })
    }

    /// `delete(model:where:)` deletes on the server in one statement of the save, which
    /// answers the identifiers it took (`RETURNING`); the context marks the models it holds
    /// deleted, and the other records stay.
    @Test func aBatchDeleteRunsOnTheServer() throws {
        guard let cluster = try Self.cluster() else { return }
        let container = try Self.container(try cluster.freshDatabase())
        let context = ModelContext(container)
        for i in 0..<30 {
            context.insert(Chore(seq: i, title: "c\(i)", priority: i % 6, isCompleted: false, dueDate: nil))
        }
        try context.save()
        let held = try #require(
            try context.fetch(FetchDescriptor<Chore>(predicate: #Predicate { $0.seq == 1 })).first)
        try context.delete(model: Chore.self, where: #Predicate { $0.priority < 2 })
        try context.save()
        #expect(held.isDeleted)
        let left = try ModelContext(container).fetch(FetchDescriptor<Chore>(sortBy: [SortDescriptor(\.seq)]))
        #expect(left.map(\.seq) == (0..<30).filter { $0 % 6 >= 2 })
    }

    /// Many keys close together are read as one range, keeping only the keys asked for;
    /// an enumeration (which reads its batches so) sees every record once.
    @Test func recordsByIdentifierAsARangeReturnExactlyTheOnesAskedFor() throws {
        guard let cluster = try Self.cluster() else { return }
        let container = try Self.container(try cluster.freshDatabase())
        let context = ModelContext(container)
        let chores = (0..<200).map {
            Chore(seq: $0, title: "c\($0)", priority: $0 % 5, isCompleted: false, dueDate: nil)
        }
        chores.forEach(context.insert)
        try context.save()
        context.delete(chores[50])
        try context.save()
        let store = try #require(container.storesForTesting.first as? PostgresStore)
        let asked = chores.enumerated().filter { $0.offset % 3 != 0 && $0.offset < 150 }.map(
            \.element.persistentModelID)
        #expect(asked.count >= PostgresStore.rangeReadMinimum)
        let found = try store.snapshots(for: asked)
        let expected = Set(asked).subtracting([chores[50].persistentModelID])
        #expect(Set(found.keys) == expected)
        var seen: [Int] = []
        try ModelContext(container).enumerate(FetchDescriptor<Chore>(sortBy: [SortDescriptor(\.seq)]), batchSize: 70) {
            seen.append($0.seq)
        }
        #expect(seen == (0..<200).filter { $0 != 50 })
    }

    /// Rows come back in binary form; a date read so is the same `Double` of seconds as
    /// the server's own decimal seconds (`EXTRACT(EPOCH …)` as text) parsed, in every era
    /// PostgreSQL keeps, past 2^53 microseconds from 1970 too, and the infinities.
    @Test func binaryDatesEqualTheServersDecimalSeconds() throws {
        var generator = SeededRandom.fromEnvironment()
        var micros: [Int64] = [0, 1, -1, 999_999, -999_999, -946_684_800_000_000, .max, .min]
        // PostgreSQL's range: 4713 BC to 294276 AD.
        micros += (0..<20_000).map { _ in
            Int64.random(in: -211_813_488_000_000_000...9_224_318_015_999_999, using: &generator)
        }
        for micro in micros {
            let date = PostgresValues.date(microsecondsSince2000: micro)
            let expected: Double
            switch micro {
            case .max: expected = .infinity
            case .min: expected = -.infinity
            default:
                let since1970 = micro + 946_684_800_000_000
                let fraction = String(since1970.magnitude % 1_000_000)
                let text =
                    "\(since1970 < 0 ? "-" : "")\(since1970.magnitude / 1_000_000)."
                    + String(repeating: "0", count: 6 - fraction.count) + fraction
                expected = try #require(Double(text))
            }
            #expect(date == Date(timeIntervalSince1970: expected), "seed \(generator.seed), \(micro)")
        }

        guard let cluster = try Self.cluster() else { return }
        let url = try cluster.freshDatabase()
        let container = try Self.container(url)
        let context = ModelContext(container)
        let seconds: [Double] = [
            0, 1_234_567_890.123456, -1_234_567_890.654321, 1e10 + 0.5, -1e11 + 0.000001, 4_102_444_800.999999,
            Date.distantPast.timeIntervalSince1970, Date.distantFuture.timeIntervalSince1970, .infinity,
        ]
        for (i, s) in seconds.enumerated() {
            context.insert(Trip(name: "t\(i)", startDate: Date(timeIntervalSince1970: s)))
        }
        try context.save()
        let server = try PostgresConnection(url, connectTimeout: 10)
        let rows = try server.execute("SELECT \"name\", EXTRACT(EPOCH FROM \"startDate\")::text FROM \"Trip\"")
        var fromText: [String: Double] = [:]
        for row in 0..<rows.count {
            let name = try #require(rows.text(row, 0))
            fromText[name] = try #require(rows.text(row, 1).flatMap(Double.init))
        }
        let trips = try ModelContext(container).fetch(FetchDescriptor<Trip>())
        #expect(trips.count == seconds.count)
        for trip in trips {
            let text = try #require(fromText[trip.name])
            #expect(trip.startDate == Date(timeIntervalSince1970: text), "\(trip.name)")
        }
        #expect(fromText["t8"] == .infinity)
    }

    /// A server that is not there fails the open at once with a clear error.
    @Test func anUnreachableServerIsAClearErrorNotAHang() throws {
        guard try Self.cluster() != nil else { return }
        let started = Date()
        let error = #expect(throws: DataStoreError.self) {
            try Self.container("host=127.0.0.1 port=1 dbname=none connect_timeout=2")
        }
        #expect(error?.code == .ioFailure)
        #expect(error?.message.contains("cannot connect to PostgreSQL") == true, "\(String(describing: error))")
        #expect(Date().timeIntervalSince(started) < 10)
    }

    /// A save whose connection the server drops while the save waits fails with
    /// `.ioFailure` and leaves nothing; the next save connects again and lands.
    @Test func aConnectionLostMidSaveFailsThatSaveAndTheNextReconnects() throws {
        guard let cluster = try Self.cluster() else { return }
        let url = try cluster.freshDatabase()
        let container = try Self.container(url)
        let context = ModelContext(container)
        context.insert(Trip(name: "before"))
        try context.save()

        // Another session holds the table, so the save waits inside its transaction.
        let blocker = try PostgresConnection(url, connectTimeout: 5)
        try blocker.run("BEGIN; LOCK TABLE \"Trip\" IN EXCLUSIVE MODE")
        let outcome = PosixMutex<(any Error)?>(nil)
        let saver = Thread {
            let context = ModelContext(container)
            context.insert(Trip(name: "lost"))
            do { try context.save() } catch { outcome.withLock { $0 = error } }
        }
        saver.start()
        // Wait for the save to block on the lock, then end its session from outside.
        var terminated = 0
        for _ in 0..<200 where terminated == 0 {
            Thread.sleep(forTimeInterval: 0.05)
            let rows = try blocker.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                    + "WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid() AND datname = current_database()")
            terminated = rows.text(0, 0).flatMap(Int.init) ?? 0
        }
        #expect(terminated == 1)
        try blocker.run("ROLLBACK")
        while saver.isExecuting || !saver.isFinished { Thread.sleep(forTimeInterval: 0.01) }
        let error = try #require(outcome.withLock { $0 } as? DataStoreError)
        #expect(error.code == .ioFailure)
        #expect(error.message.contains("connection"), "\(error)")

        let next = ModelContext(container)
        next.insert(Trip(name: "after"))
        try next.save()
        let names = try ModelContext(container).fetch(FetchDescriptor<Trip>(sortBy: [SortDescriptor(\.name)])).map(
            \.name)
        #expect(names == ["after", "before"])
    }

    /// A save the server refuses (here a trigger raises) fails with a clear error and
    /// leaves nothing: a save of one statement, which runs without `BEGIN`, and a save of
    /// several, whose earlier statements are rolled back with the refused one. The next
    /// save on the same connection lands.
    @Test func aSaveTheServerRefusesLeavesNothingAndTheNextLands() throws {
        guard let cluster = try Self.cluster() else { return }
        let url = try cluster.freshDatabase()
        let container = try Self.container(url)
        try ModelContext(container).save()  // the tables exist once a context has opened the store
        let admin = try PostgresConnection(url, connectTimeout: 5)
        try admin.run(
            """
            CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN RAISE EXCEPTION 'refused by the test'; END $$;
            CREATE TRIGGER refuse BEFORE INSERT ON "Trip" FOR EACH ROW
            WHEN (NEW."name" = 'refused') EXECUTE FUNCTION refuse();
            CREATE TRIGGER refuse BEFORE INSERT ON "Item" FOR EACH ROW
            WHEN (NEW."name" = 'refused') EXECUTE FUNCTION refuse();
            """)
        let context = ModelContext(container)
        func refusal(_ save: () throws -> Void) -> String? {
            do {
                try save()
                return nil
            } catch let error as DataStoreError {
                return error.code == .ioFailure ? error.message : "\(error.code): \(error.message)"
            } catch {
                return "\(error)"
            }
        }

        context.insert(Trip(name: "refused"))
        let one = refusal { try context.save() }
        #expect(one?.contains("refused by the test") == true, "\(String(describing: one))")
        context.rollback()

        context.insert(Trip(name: "kept back"))
        context.insert(Item(name: "refused"))
        let several = refusal { try context.save() }
        #expect(several?.contains("refused by the test") == true, "\(String(describing: several))")
        context.rollback()

        context.insert(Trip(name: "after"))
        try context.save()
        let rows = try admin.execute("SELECT \"name\" FROM \"Trip\" ORDER BY \"name\"")
        #expect((0..<rows.count).map { rows.text($0, 0) } == ["after"])
        #expect(try admin.execute("SELECT count(*) FROM \"Item\"").text(0, 0) == "0")
        // The store's connection is not left inside a transaction: another session sees it idle.
        let open = try admin.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                + "AND pid <> pg_backend_pid() AND state LIKE 'idle in transaction%'")
        #expect(open.text(0, 0) == "0")
    }
}

/// Four processes saving into one database at once (`PostgresChild`), racing on a unique
/// email: every save is acknowledged, and every acknowledged row is there exactly once.
@Suite("PostgresStore across processes", .serialized)
struct PostgresProcessTests {
    static var child: URL {
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        return executable.deletingLastPathComponent().appendingPathComponent("PostgresChild")
    }

    @Test func fourProcessesSaveAtOnceAndEveryAcknowledgedRowIsThereOnce() throws {
        guard let cluster = try PostgresStoreTests.cluster() else { return }
        let url = try cluster.freshDatabase()
        let saves = 60
        // Each child opens the empty database itself: the tables are made once, whoever is first.
        let processes = try (0..<4).map { worker -> (Process, Pipe) in
            let process = Process()
            process.executableURL = Self.child
            process.arguments = [url, String(worker), String(saves)]
            let pipe = Pipe()
            process.standardOutput = pipe
            try process.run()
            return (process, pipe)
        }
        var lines: [String] = []
        for (process, pipe) in processes {
            let output = pipe.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            #expect(process.terminationStatus == 0)
            lines += String(decoding: output, as: UTF8.self).split(separator: "\n").map(String.init)
        }
        let failures = lines.filter { !$0.hasPrefix("ack ") }
        #expect(failures.isEmpty, "\(failures.prefix(5))")
        let acknowledged = lines.filter { $0.hasPrefix("ack ") }.flatMap { $0.split(separator: " ").dropFirst() }
        #expect(acknowledged.count == 4 * saves * 2)

        let container = try PostgresStoreTests.container(url, [Person.self])
        let emails = try ModelContext(container).fetch(FetchDescriptor<Person>()).map(\.email)
        let counts = Dictionary(emails.map { ($0, 1) }, uniquingKeysWith: +)
        #expect(counts.values.allSatisfy { $0 == 1 })
        #expect(Set(emails) == Set(acknowledged.map(String.init)))
        #expect(emails.count == saves + 4 * saves)
    }
}

/// The uniqueness rules every store keeps (`UniquenessChecks`), on PostgreSQL, where the
/// store resolves them against the tables and the database's own constraints back them.
@Suite("PostgresStore uniqueness")
struct PostgresUniquenessTests {
    @Test(arguments: UniquenessChecks.checks.map(\.0))
    func postgresKeepsTheRules(check: String) throws {
        guard let cluster = try PostgresStoreTests.cluster() else { return }
        let run = try #require(UniquenessChecks.checks.first { $0.0 == check }?.1)
        try run(PostgresStoreTests.factory(cluster))
    }
}

/// A model whose one uniqueness constraint the server resolves in the `INSERT` itself
/// (`ON CONFLICT … DO UPDATE`), without a look-up first.
@Model
final class Ticket {
    @Attribute(.unique) var code: String
    var title: String

    init(code: String, title: String) {
        self.code = code
        self.title = title
    }
}

/// A model that may refer to itself: a save of one of them alone can refer to its own
/// unsaved self.
@Model
final class Link {
    var name: String
    var next: Link?

    init(name: String) {
        self.name = name
    }
}

@Suite("PostgresStore upserts in the INSERT")
struct PostgresConflictUpsertTests {
    static func container() throws -> ModelContainer? {
        guard let cluster = try PostgresStoreTests.cluster() else { return nil }
        return try PostgresStoreTests.container(try cluster.freshDatabase(), [Ticket.self])
    }

    /// The insert that meets a stored row takes the row's identifier, and a context that
    /// holds the row's model sees the new values.
    @Test func anInsertThatMeetsAStoredRowBecomesIt() throws {
        guard let container = try Self.container() else { return }
        let context = ModelContext(container)
        let first = Ticket(code: "A-1", title: "first")
        context.insert(first)
        context.insert(Ticket(code: "B-2", title: "other"))
        try context.save()
        let again = Ticket(code: "A-1", title: "second")
        context.insert(again)
        context.insert(Ticket(code: "C-3", title: "new"))
        try context.save()
        #expect(again.persistentModelID == first.persistentModelID)
        #expect(first.title == "second")
        let stored = try ModelContext(container).fetch(FetchDescriptor<Ticket>(sortBy: [SortDescriptor(\.code)]))
        #expect(stored.map(\.code) == ["A-1", "B-2", "C-3"])
        #expect(stored.map(\.title) == ["second", "other", "new"])
        #expect(stored.first?.persistentModelID == first.persistentModelID)

        // From another context that holds nothing: the same.
        let other = ModelContext(container)
        let third = Ticket(code: "B-2", title: "third")
        other.insert(third)
        try other.save()
        #expect(third.persistentModelID == stored[1].persistentModelID)
        #expect(try ModelContext(container).fetchCount(FetchDescriptor<Ticket>()) == 3)
    }

    /// A fetch whose predicate pins a unique column to a value matches at most one row, so
    /// its `SELECT` has no `ORDER BY` (PostgreSQL would sort the one row); one that pins a
    /// column without a constraint, or pins the unique column to `nil`, keeps the order.
    @Test func aFetchByAUniqueValueLeavesOutTheOrder() throws {
        guard let container = try Self.container() else { return }
        let context = ModelContext(container)
        for (code, title) in [("A", "same"), ("B", "same"), ("C", "other")] {
            context.insert(Ticket(code: code, title: title))
        }
        try context.save()
        let reader = ModelContext(container)
        let code = "B"
        var byCode = FetchDescriptor<Ticket>(
            predicate: #Predicate { $0.code == code && $0.title != "x" }, sortBy: [SortDescriptor(\.title)])
        byCode.fetchLimit = 5
        let pinned = try reader.explain(byCode)
        #expect(pinned.contains("\"code\" = $1::text"), "\(pinned)")
        #expect(!pinned.contains("ORDER BY"), "\(pinned)")
        #expect(try reader.fetch(byCode).map(\.code) == ["B"])
        let flipped = FetchDescriptor<Ticket>(predicate: #Predicate { "C" == $0.code })
        #expect(!(try reader.explain(flipped)).contains("ORDER BY"))
        #expect(try reader.fetch(flipped).map(\.title) == ["other"])

        let byTitle = FetchDescriptor<Ticket>(predicate: #Predicate { $0.title == "same" })
        let unpinned = try reader.explain(byTitle)
        #expect(unpinned.contains("ORDER BY \"pk\""), "\(unpinned)")
        #expect(try reader.fetch(byTitle).map(\.code) == ["A", "B"])
        // An inequality pins nothing.
        let notCode = FetchDescriptor<Ticket>(predicate: #Predicate { $0.code != code })
        #expect((try reader.explain(notCode)).contains("ORDER BY"))
        #expect(try reader.fetch(notCode).map(\.code) == ["A", "C"])
    }

    /// A save of one model goes as its one statement when it can (`PostgresSave.writeOne`),
    /// and through the general path when it cannot: each way stores what the model holds,
    /// and a refused save leaves the stored row and the pending change as they were.
    @Test func aSaveOfOneModelStoresItEachWay() throws {
        guard let cluster = try PostgresStoreTests.cluster() else { return }
        let container = try PostgresStoreTests.container(try cluster.freshDatabase(), [Ticket.self, Link.self])
        let context = ModelContext(container)
        func stored() throws -> [String] {
            try ModelContext(container).fetch(FetchDescriptor<Ticket>(sortBy: [SortDescriptor(\.code)])).map {
                "\($0.code)=\($0.title)"
            }
        }
        // A new row, then a change to it, each alone.
        let a = Ticket(code: "A", title: "quote ' and $1")
        context.insert(a)
        try context.save()
        #expect(!a.persistentModelID.isTemporary)
        #expect(try stored() == ["A=quote ' and $1"])
        a.title = "changed"
        try context.save()
        #expect(try stored() == ["A=changed"])

        // A change to a value another row holds: refused, the stored rows and the pending
        // change stay.
        context.insert(Ticket(code: "B", title: "b"))
        try context.save()
        a.code = "B"
        #expect(throws: SwiftDataError.uniqueConstraintViolation) { try context.save() }
        #expect(try stored() == ["A=changed", "B=b"])
        #expect(context.hasChanges)
        context.rollback()

        // With `.fail`, a new row that meets a stored one is looked up first and refused.
        let strict = ModelContext(container)
        strict.uniquenessPolicy = .fail
        strict.insert(Ticket(code: "A", title: "again"))
        #expect(throws: SwiftDataError.uniqueConstraintViolation) { try strict.save() }
        #expect(try stored() == ["A=changed", "B=b"])
        #expect(strict.hasChanges)

        // A model that refers to its unsaved self: its key is known only in the save.
        let loop = Link(name: "loop")
        loop.next = loop
        context.insert(loop)
        try context.save()
        let reader = ModelContext(container)
        let read = try #require(try reader.fetch(FetchDescriptor<Link>()).first)
        #expect(read.next?.persistentModelID == loop.persistentModelID)
        #expect(read.next?.name == "loop")
    }

    @Test func duplicatesInOneSaveBecomeOneRecord() throws {
        guard let container = try Self.container() else { return }
        let context = ModelContext(container)
        let a = Ticket(code: "D", title: "a")
        let b = Ticket(code: "D", title: "b")
        context.insert(a)
        context.insert(b)
        try context.save()
        #expect(a.persistentModelID == b.persistentModelID)
        #expect(try ModelContext(container).fetch(FetchDescriptor<Ticket>()).map(\.title) == ["b"])
    }
}

@Suite("PostgresStore deletes by predicate")
struct PostgresBatchDeleteTests {
    @Test(arguments: BatchDeleteChecks.checks.map(\.0))
    func check(_ check: String) throws {
        guard let cluster = try PostgresStoreTests.cluster() else { return }
        let run = try #require(BatchDeleteChecks.checks.first { $0.0 == check }?.1)
        try run(PostgresStoreTests.factory(cluster))
    }
}
