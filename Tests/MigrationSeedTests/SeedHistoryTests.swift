import Foundation
import Stowage
import StowageTestSupport
import Testing

/// The seed's history code (`Seed000History`) on each store: an app tags its context, saves,
/// reads the history since a kept token (as the seed sorts it, newest first), and deletes
/// history older than three months.
@Suite("The seeds' history code")
struct SeedHistoryTests {
    typealias Kind = StoreKind

    static func container(_ kind: Kind, _ directory: LogTestDirectory) throws -> ModelContainer {
        try kind.container(Schema([Seed000History.Trip.self]), in: directory, keepsHistory: true)
    }

    @Test(arguments: Kind.allCases)
    func fetchSinceATokenThenDeleteStaleHistory(_ kind: Kind) throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let context = ModelContext(try Self.container(kind, directory))
        Seed000History.tag(modelContext: context)
        let rome = Seed000History.Trip(name: "Rome", destination: "Italy", startDate: .now)
        let oslo = Seed000History.Trip(name: "Oslo", destination: "Norway", startDate: .now)
        context.insert(rome)
        context.insert(oslo)
        try context.save()

        var savedToken: DefaultHistoryToken?
        let first = try Seed000History.fetch(modelContext: context, savedToken: &savedToken)
        #expect(first.count == 1)
        #expect(first.first?.author == "mainApp")
        #expect(savedToken == first.last?.token)
        Seed000History.crossProcess(first)

        rome.startDate = .distantFuture
        try context.save()
        context.delete(oslo)
        try context.save()
        let later = try Seed000History.fetch(modelContext: context, savedToken: &savedToken)
        // Only what came after the token, newest first as the seed sorts it; the token the
        // seed keeps is the last one it looped over, so here the older of the two.
        #expect(later.count == 2)
        #expect(later.map(\.timestamp) == later.map(\.timestamp).sorted(by: >))
        #expect(savedToken == later.last?.token)
        let deletes = later.flatMap(\.changes).compactMap { change -> DefaultHistoryDelete<Seed000History.Trip>? in
            if case .delete(let delete as DefaultHistoryDelete<Seed000History.Trip>) = change { return delete }
            return nil
        }
        #expect(deletes.count == 1)
        #expect(deletes.first?.tombstone[\.name] as? String == "Oslo")
        #expect(deletes.first?.tombstone[\.destination] as? String == "Norway")
        #expect(deletes.first?.tombstone[\.startDate] == nil)

        // Nothing is three months old: the seed's cleanup deletes nothing.
        try Seed000History.deleteStale(modelContext: context)
        var none: DefaultHistoryToken?
        #expect(try Seed000History.fetch(modelContext: context, savedToken: &none).count == 3)
    }
}
