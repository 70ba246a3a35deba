import Foundation
import Stowage
import StowageTestSupport
import Synchronization
import Testing

/// The seeds' `@ModelActor` handlers (`Seed000Actors.swift`, `Seed002BackgroundImport.swift`),
/// called the way the seeds call them, on every store.
@Suite("The seeds' model actors")
struct SeedActorTests {
    typealias Kind = StoreKind

    static func container(_ kind: Kind, _ models: [any PersistentModel.Type], _ directory: LogTestDirectory) throws
        -> ModelContainer
    {
        try kind.container(Schema(models), in: directory)
    }

    typealias Trip = Seed000Actors.Trip

    static let day: TimeInterval = 86_400
    static let start = Date(timeIntervalSince1970: 1_700_000_000)

    /// "Concurrency (@ModelActor)": the import, then `process(tripID:)` with an identifier
    /// from another context.
    @Test(arguments: Kind.allCases)
    func theSkillsDataHandlerImportsAndProcessesByIdentifier(_ kind: Kind) async throws {
        typealias TripRecord = Seed000Actors.Concurrency.TripRecord
        typealias DataHandler = Seed000Actors.Concurrency.DataHandler
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let container = try Self.container(kind, Seed000Actors.models, directory)
        let records: [TripRecord] = (0..<20).map { (n: Int) -> TripRecord in
            let start: Date = Self.start + Double(n) * Self.day
            let destination = n % 2 == 0 ? "Paris" : "Rome"
            return TripRecord(name: "Trip \(n)", dest: destination, start: start, end: start + 3 * Self.day)
        }

        let handler = DataHandler(modelContainer: container)
        try await handler.importTrips(records)

        let context = ModelContext(container)
        let trips = try context.fetch(FetchDescriptor<Trip>(sortBy: [SortDescriptor(\.startDate)]))
        #expect(trips.map(\.name) == records.map(\.name))
        #expect(trips.map(\.destination) == records.map(\.dest))
        #expect(trips.allSatisfy { !$0.isProcessed })
        // Pass the identifier, not the model, across the actor boundary.
        let tripID = trips[3].persistentModelID
        try await handler.process(tripID: tripID)
        let processed = try ModelContext(container).fetch(
            FetchDescriptor<Trip>(predicate: #Predicate { $0.isProcessed }))
        #expect(processed.map(\.name) == ["Trip 3"])
    }

    /// "Background Import with Progress": a save every 500 records, each one in the store
    /// when the progress callback hears of it.
    @Test(arguments: Kind.allCases)
    func theImportHandlerSavesPeriodically(_ kind: Kind) async throws {
        typealias TripRecord = Seed000Actors.BackgroundFetch.TripRecord
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let container = try Self.container(kind, Seed000Actors.models, directory)
        let records: [TripRecord] = (0..<1234).map { (n: Int) -> TripRecord in
            TripRecord(name: "Trip \(n)", destination: "Lisbon", startDate: Self.start, endDate: Self.start + Self.day)
        }
        // What each progress call reports, and how many trips a fresh context found then.
        let reports = PosixMutex<[(imported: Int, stored: Int)]>([])
        let handler = Seed000Actors.BackgroundFetch.ImportHandler(modelContainer: container)
        let imported = try await handler.importTrips(records) { imported in
            let stored = (try? ModelContext(container).fetchCount(FetchDescriptor<Trip>())) ?? -1
            reports.withLock { $0.append((imported, stored)) }
        }
        #expect(imported == 1234)
        let seen = reports.withLock { $0 }
        #expect(seen.map(\.imported) == [1, 501, 1001])
        #expect(seen.map(\.stored) == [1, 501, 1001])
        #expect(try ModelContext(container).fetchCount(FetchDescriptor<Trip>()) == 1234)
    }

    /// "Basic Background Fetch": identifiers fetched on the actor, resolved in another
    /// context; and a count.
    @Test(arguments: Kind.allCases)
    @MainActor
    func theTripDataHandlersIdentifiersResolveOnTheMainContext(_ kind: Kind) async throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let container = try Self.container(kind, Seed000Actors.models, directory)
        let now = Date()
        let seed = ModelContext(container)
        for (n, offset) in [-3, 5, -1, 2, 9].enumerated() {
            seed.insert(
                Trip(
                    name: "T\(n)", destination: n < 3 ? "Paris" : "Oslo", startDate: now + Double(offset) * Self.day,
                    endDate: now + Double(offset + 1) * Self.day))
        }
        try seed.save()

        let handler = Seed000Actors.BackgroundFetch.TripDataHandler(modelContainer: container)
        let ids = try await handler.fetchUpcomingTrips()
        let modelContext = container.mainContext
        let upcoming = ids.compactMap { id in
            // The seed's resolution, but for a `try?` before `model(for:)`, which does not throw.
            modelContext.registeredModel(for: id) as Trip? ?? (modelContext.model(for: id) as? Trip)
        }
        #expect(upcoming.map(\.name) == ["T3", "T1", "T4"])
        #expect(try await handler.fetchTripCount(destination: "Paris") == 3)
        #expect(try await handler.fetchTripCount(destination: "Lima") == 0)
    }

    /// "Resolving Identifiers on MainActor": duplicates found on the actor, shown from the
    /// main context.
    @Test(arguments: Kind.allCases)
    @MainActor
    func theDuplicatesFoundOnTheActorResolveOnTheMainActor(_ kind: Kind) async throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let container = try Self.container(kind, Seed000Actors.models, directory)
        let seed = ModelContext(container)
        for name in ["Paris", "Rome", "Paris", "Oslo", "Rome", "Paris"] {
            seed.insert(Trip(name: name, destination: name, startDate: Self.start, endDate: Self.start))
        }
        try seed.save()

        let handler = Seed000Actors.BackgroundFetch.DataHandler(modelContainer: container)
        let ids = try await handler.findDuplicateIDs()
        let modelContext = container.mainContext
        let duplicates = ids.compactMap { id in
            modelContext.registeredModel(for: id) as Trip? ?? (modelContext.model(for: id) as? Trip)
        }
        #expect(duplicates.count == 3)
        #expect(duplicates.map(\.name).sorted() == ["Paris", "Paris", "Rome"])
        #expect(Set(duplicates.map(\.persistentModelID)).count == 3)
    }

    /// "Background Aggregate Computation": the statistics, computed on the actor.
    @Test(arguments: Kind.allCases)
    func theStatsHandlerComputesOffTheMainActor(_ kind: Kind) async throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let container = try Self.container(kind, Seed000Actors.models, directory)
        let handler = Seed000Actors.BackgroundFetch.StatsHandler(modelContainer: container)
        let empty = try await handler.computeStats()
        #expect(empty.totalCount == 0 && empty.favoriteCount == 0 && empty.averageDuration == 0)

        let seed = ModelContext(container)
        for (n, days) in [1, 2, 3, 6].enumerated() {
            let trip = Trip(
                name: "T\(n)", destination: "X", startDate: Self.start, endDate: Self.start + Double(days) * Self.day)
            trip.isFavorite = n % 2 == 1
            seed.insert(trip)
        }
        try seed.save()
        let stats = try await handler.computeStats()
        #expect(stats.totalCount == 4)
        #expect(stats.favoriteCount == 2)
        #expect(stats.averageDuration == 3 * Self.day)
    }

    /// `shared/seeds/002_…`: the tutorial's background import, run from the main actor.
    @Test(arguments: Kind.allCases)
    @MainActor
    func theTutorialsBackgroundImportReachesTheStore(_ kind: Kind) async throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let container = try Self.container(kind, Seed002.TodoSchemaV2.models, directory)
        await runBackgroundImport(container: container)
        let titles = try container.mainContext.fetch(FetchDescriptor<Seed002.TodoItem>()).map(\.title).sorted()
        #expect(titles == ["Sample 1", "Sample 2"])
    }
}
