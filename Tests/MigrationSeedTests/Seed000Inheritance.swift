import Foundation
import Stowage

// The seed's "Model Inheritance" (000, "Base and Subclass Pattern", "Querying with
// Inheritance", "Container Registration") and its "Type Casting in Predicates", as
// written but for the import, inside an enum of their own. Only the container
// registration differs, as the README says: Swift on Linux cannot find a class's
// subclasses at run time, so they are listed beside the base.
enum Seed000Inheritance {
    @Model
    class Trip {
        var name: String
        var destination: String
        var startDate: Date
        var endDate: Date

        init(name: String, destination: String, startDate: Date, endDate: Date) {
            self.name = name
            self.destination = destination
            self.startDate = startDate
            self.endDate = endDate
        }
    }

    @Model
    class PersonalTrip: Trip {
        var companion: String?
    }

    @Model
    class BusinessTrip: Trip {
        var company: String
        var expenseReport: Data?

        init(
            name: String, destination: String, startDate: Date, endDate: Date,
            company: String
        ) {
            self.company = company
            super.init(
                name: name, destination: destination,
                startDate: startDate, endDate: endDate)
        }
    }

    static func querying(_ modelContext: ModelContext) throws -> (all: [Trip], business: [BusinessTrip]) {
        // Fetch all trips (includes PersonalTrip and BusinessTrip)
        let allTrips = try modelContext.fetch(FetchDescriptor<Trip>())

        // Fetch only business trips
        let businessTrips = try modelContext.fetch(FetchDescriptor<BusinessTrip>())
        return (allTrips, businessTrips)
    }

    static func deleteCancelled(_ modelContext: ModelContext) throws {
        // Delete with subclass inclusion
        try modelContext.delete(
            model: Trip.self,
            where: #Predicate { $0.destination == "Cancelled" },
            includeSubclasses: true
        )
    }

    // Filter for business trips only
    static let businessOnly = #Predicate<Trip> { trip in
        trip is BusinessTrip
    }

    /// The seed's `ModelContainer(for: Trip.self)`, which on Linux must name the subclasses.
    static func container() throws -> ModelContainer {
        try ModelContainer(
            for: Trip.self, PersonalTrip.self, BusinessTrip.self,
            configurations: ModelConfiguration(isStoredInMemoryOnly: true))
    }

    /// The seed's registration as written: the base class alone.
    static func baseOnlyContainer() throws -> ModelContainer {
        let container = try ModelContainer(
            for: Trip.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        // PersonalTrip and BusinessTrip are included via inheritance
        return container
    }
}
