// swift-format-ignore-file
// The `@ModelActor` handlers of `shared/seeds/000_…`, as written there but for the import:
// "Concurrency (@ModelActor)" from the skill, and "Background Fetch Patterns with
// @ModelActor" and "Background Aggregate Computation" from its queries reference. They are
// inside namespaces, which renames nothing: the two sections each declare an actor
// `DataHandler`, and use two shapes of `TripRecord`, so each section has a namespace of
// its own. The `Trip` model and the `TripRecord`s are not in the seed in this form; see
// below. How the handlers are called is in `SeedActorTests.swift`.
import Foundation
import Stowage

enum Seed000Actors {
    // Not in the seed as one model: the seed's `Trip` (name, destination, dates,
    // favourite) with the `isProcessed` and `budget` its handlers and aggregates use.
    // Its image data and accommodation relationship, which no handler touches, are left out.
    @Model
    class Trip {
        var name: String
        var destination: String
        var startDate: Date
        var endDate: Date
        var isFavorite: Bool = false
        var isProcessed: Bool = false
        var budget: Double = 0
        @Transient var isSelected: Bool = false

        init(name: String, destination: String, startDate: Date, endDate: Date) {
            self.name = name; self.destination = destination
            self.startDate = startDate; self.endDate = endDate
        }
    }

    static var models: [any PersistentModel.Type] { [Trip.self] }

    /// "Concurrency (@ModelActor)".
    enum Concurrency {
        // Not in the seed: the record its import reads.
        struct TripRecord: Sendable {
            var name: String
            var dest: String
            var start: Date
            var end: Date
        }

        @ModelActor
        actor DataHandler {
            func importTrips(_ records: [TripRecord]) throws {
                for r in records {
                    modelContext.insert(Trip(name: r.name, destination: r.dest,
                                            startDate: r.start, endDate: r.end))
                }
                try modelContext.save()  // Always save explicitly in @ModelActor
            }

            func process(tripID: PersistentIdentifier) throws {
                guard let trip = self[tripID, as: Trip.self] else { return }
                trip.isProcessed = true; try modelContext.save()
            }
        }
    }

    /// "Background Fetch Patterns with @ModelActor" and "Background Aggregate Computation".
    enum BackgroundFetch {
        // Not in the seed: the record its import reads.
        struct TripRecord: Sendable {
            var name: String
            var destination: String
            var startDate: Date
            var endDate: Date
        }

        @ModelActor
        actor TripDataHandler {
            func fetchUpcomingTrips() throws -> [PersistentIdentifier] {
                let now = Date()
                let descriptor = FetchDescriptor<Trip>(
                    predicate: #Predicate { $0.startDate > now },
                    sortBy: [SortDescriptor(\.startDate)]
                )
                return try modelContext.fetchIdentifiers(descriptor)
            }

            func fetchTripCount(destination: String) throws -> Int {
                let descriptor = FetchDescriptor<Trip>(
                    predicate: #Predicate<Trip> { trip in
                        trip.destination == destination
                    }
                )
                return try modelContext.fetchCount(descriptor)
            }
        }

        @ModelActor
        actor ImportHandler {
            func importTrips(
                _ records: [TripRecord],
                progress: @Sendable (Int) -> Void
            ) throws -> Int {
                var imported = 0
                for (index, record) in records.enumerated() {
                    let trip = Trip(
                        name: record.name,
                        destination: record.destination,
                        startDate: record.startDate,
                        endDate: record.endDate
                    )
                    modelContext.insert(trip)
                    imported += 1

                    // Save periodically to flush memory
                    if index % 500 == 0 {
                        try modelContext.save()
                        progress(imported)
                    }
                }
                try modelContext.save()
                return imported
            }
        }

        @ModelActor
        actor DataHandler {
            func findDuplicateIDs() throws -> [PersistentIdentifier] {
                // Complex logic to find duplicates
                let all = try modelContext.fetch(FetchDescriptor<Trip>())
                var seen = Set<String>()
                var duplicateIDs: [PersistentIdentifier] = []
                for trip in all {
                    if seen.contains(trip.name) {
                        duplicateIDs.append(trip.persistentModelID)
                    }
                    seen.insert(trip.name)
                }
                return duplicateIDs
            }
        }

        @ModelActor
        actor StatsHandler {
            struct TripStats: Sendable {
                let totalCount: Int
                let favoriteCount: Int
                let averageDuration: TimeInterval
            }

            func computeStats() throws -> TripStats {
                let allTrips = try modelContext.fetch(FetchDescriptor<Trip>())
                let favoriteCount = try modelContext.fetchCount(
                    FetchDescriptor<Trip>(predicate: #Predicate { $0.isFavorite == true })
                )

                let totalDuration = allTrips.reduce(0.0) { sum, trip in
                    sum + trip.endDate.timeIntervalSince(trip.startDate)
                }
                let avgDuration = allTrips.isEmpty ? 0 : totalDuration / Double(allTrips.count)

                return TripStats(
                    totalCount: allTrips.count,
                    favoriteCount: favoriteCount,
                    averageDuration: avgDuration
                )
            }
        }
    }
}
