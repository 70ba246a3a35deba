import Foundation
import Stowage
import Testing

/// The seed's model inheritance (`Seed000Inheritance.swift`) does what the seed says.
@Suite("The seed's model inheritance")
struct SeedInheritanceTests {
    typealias S = Seed000Inheritance
    static let start = Date(timeIntervalSince1970: 1_800_000_000)

    private func seed(_ context: ModelContext) throws {
        let end = Self.start + 86_400
        context.insert(S.Trip(name: "Family", destination: "Lisbon", startDate: Self.start, endDate: end))
        let personal = S.PersonalTrip(name: "Hike", destination: "Cancelled", startDate: Self.start, endDate: end)
        personal.companion = "Ana"
        context.insert(personal)
        context.insert(
            S.BusinessTrip(name: "Audit", destination: "Oslo", startDate: Self.start, endDate: end, company: "Acme"))
        context.insert(
            S.BusinessTrip(
                name: "Pitch", destination: "Cancelled", startDate: Self.start, endDate: end, company: "Acme"))
        try context.save()
    }

    @Test func fetchingTheBaseIncludesTheSubclassesAndASubclassOnlyItself() throws {
        let context = ModelContext(try S.container())
        try seed(context)
        let (all, business) = try S.querying(context)
        #expect(Set(all.map(\.name)) == ["Family", "Hike", "Audit", "Pitch"])
        #expect(all.contains { ($0 as? S.PersonalTrip)?.companion == "Ana" })
        #expect(Set(business.map(\.name)) == ["Audit", "Pitch"])
        #expect(business.allSatisfy { $0.company == "Acme" })
        let cast = try context.fetch(FetchDescriptor(predicate: S.businessOnly))
        #expect(Set(cast.map(\.name)) == ["Audit", "Pitch"])
    }

    @Test func theDeleteWithSubclassInclusionReachesEverySubclass() throws {
        let context = ModelContext(try S.container())
        try seed(context)
        try S.deleteCancelled(context)
        try context.save()
        #expect(Set(try context.fetch(FetchDescriptor<S.Trip>()).map(\.name)) == ["Family", "Audit"])
    }

    /// Registering the base alone, as the seed does, cannot bring the subclasses on Linux:
    /// the base's own models work, and inserting a subclass's fails the save with an error
    /// that names the subclass and says to list it.
    @Test func theBaseAloneServesItsOwnModelsAndNamesAnUnlistedSubclass() throws {
        let container = try S.baseOnlyContainer()
        let context = ModelContext(container)
        context.insert(S.Trip(name: "Family", destination: "Lisbon", startDate: Self.start, endDate: Self.start))
        try context.save()
        #expect(try context.fetchCount(FetchDescriptor<S.Trip>()) == 1)
        context.insert(
            S.BusinessTrip(
                name: "Audit", destination: "Oslo", startDate: Self.start, endDate: Self.start, company: "Acme"))
        let error = try #require(throws: SwiftDataError.self) { try context.save() }
        #expect("\(error)".contains("BusinessTrip is a subclass of Trip"))
        #expect("\(error)".contains("list BusinessTrip in the schema"))
    }
}
