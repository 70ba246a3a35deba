import Foundation
@_spi(Testing) import Stowage
import StowageTestSupport
import Testing

@testable import StowagePostgres

// InheritanceTests' models, under names of their own.
@Model
class PGVoyage {
    #Index<PGVoyage>([\.destination])
    #Unique<PGVoyage>([\.name])
    var name: String
    var destination: String
    var startDate: Date
    var isArchived: Bool = false
    var traveller: PGTraveller?

    init(name: String, destination: String, startDate: Date) {
        self.name = name
        self.destination = destination
        self.startDate = startDate
    }
}

@Model
class PGPersonalVoyage: PGVoyage {
    var companion: String?
}

@Model
class PGBusinessVoyage: PGVoyage {
    var company: String
    var expenseReport: Data?

    init(name: String, destination: String, startDate: Date, company: String) {
        self.company = company
        super.init(name: name, destination: destination, startDate: startDate)
    }
}

@Model
final class PGConferenceVoyage: PGBusinessVoyage {
    var conference: String = "WWDC"
}

@Model
final class PGTraveller {
    var name: String
    @Relationship(deleteRule: .cascade, inverse: \PGVoyage.traveller) var voyages: [PGVoyage] = []
    var favourite: PGVoyage?

    init(name: String) { self.name = name }
}

@Model
class PGShape {
    var name: String
    var size: Int

    init(name: String, size: Int) {
        self.name = name
        self.size = size
    }
}

@Model
final class PGCircle: PGShape {
    var radius: Double

    init(name: String, size: Int, radius: Double) {
        self.radius = radius
        super.init(name: name, size: size)
    }
}

@Model
class PGAnimal {
    #Unique<PGAnimal>([\.name])
    var name: String

    init(name: String) { self.name = name }
}

@Model
final class PGDog: PGAnimal {
    @Attribute(.unique) var chip: String

    init(name: String, chip: String) {
        self.chip = chip
        super.init(name: name)
    }
}

@Model
final class PGCat: PGAnimal {
    var chip: String

    init(name: String, chip: String) {
        self.chip = chip
        super.init(name: name)
    }
}

/// Model inheritance on PostgreSQL: one table per class hierarchy, named as its root, with
/// an `"@entity"` column (`Formats/postgres.md`, "A table per class hierarchy"), read and
/// written as the other stores' `InheritanceTests` expect.
@Suite("PostgresInheritance")
struct PostgresInheritanceTests {
    static let day = Date(timeIntervalSince1970: 86_400 * 20_000)
    static var types: [any PersistentModel.Type] {
        [PGVoyage.self, PGPersonalVoyage.self, PGBusinessVoyage.self, PGConferenceVoyage.self, PGTraveller.self]
    }

    static func container(_ url: String, keepsHistory: Bool = false) throws -> ModelContainer {
        let schema = Schema(types)
        var configuration = PostgresStoreConfiguration(name: "postgres", schema: schema, url: url)
        configuration.keepsHistory = keepsHistory
        return try ModelContainer(for: schema, configurations: [configuration])
    }

    /// A fresh database, or `nil` without PostgreSQL.
    static func database() throws -> String? {
        guard let cluster = try PostgresStoreTests.cluster() else { return nil }
        return try cluster.freshDatabase()
    }

    private func seed(_ context: ModelContext) throws {
        context.insert(PGVoyage(name: "v1", destination: "Lisbon", startDate: Self.day))
        let personal = PGPersonalVoyage(name: "p1", destination: "Porto", startDate: Self.day + 10)
        personal.companion = "Ana"
        context.insert(personal)
        context.insert(PGBusinessVoyage(name: "b1", destination: "Lisbon", startDate: Self.day + 20, company: "Acme"))
        context.insert(
            PGConferenceVoyage(name: "c1", destination: "Cupertino", startDate: Self.day + 5, company: "Apple"))
        try context.save()
    }

    @Test func fetchingTheBaseReturnsEverySubclassAndASubclassOnlyItsOwn() throws {
        guard let url = try Self.database() else { return }
        let container = try Self.container(url)
        try seed(ModelContext(container))
        let context = ModelContext(container)
        let all = try context.fetch(FetchDescriptor<PGVoyage>(sortBy: [SortDescriptor(\.startDate)]))
        #expect(all.map(\.name) == ["v1", "c1", "p1", "b1"])
        #expect(type(of: all[0]) == PGVoyage.self)
        #expect((all[1] as? PGConferenceVoyage)?.conference == "WWDC")
        #expect((all[1] as? PGConferenceVoyage)?.company == "Apple")
        #expect((all[2] as? PGPersonalVoyage)?.companion == "Ana")
        #expect((all[3] as? PGBusinessVoyage)?.company == "Acme")
        let business = try context.fetch(FetchDescriptor<PGBusinessVoyage>(sortBy: [SortDescriptor(\.name)]))
        #expect(business.map(\.name) == ["b1", "c1"])
        #expect(business[1] is PGConferenceVoyage)
        #expect(try context.fetch(FetchDescriptor<PGConferenceVoyage>()).map(\.name) == ["c1"])
        #expect(try context.fetch(FetchDescriptor<PGPersonalVoyage>()).map(\.name) == ["p1"])
        #expect(try context.fetchCount(FetchDescriptor<PGVoyage>()) == 4)
        #expect(try context.fetchCount(FetchDescriptor<PGBusinessVoyage>()) == 2)
        #expect(try context.fetchCount(FetchDescriptor<PGConferenceVoyage>()) == 1)
        let identifiers = try context.fetchIdentifiers(FetchDescriptor<PGVoyage>(sortBy: [SortDescriptor(\.name)]))
        #expect(
            identifiers.map(\.entityName) == ["PGBusinessVoyage", "PGConferenceVoyage", "PGPersonalVoyage", "PGVoyage"])
        #expect(
            try context.fetchIdentifiers(FetchDescriptor<PGBusinessVoyage>()).map(\.entityName).sorted() == [
                "PGBusinessVoyage", "PGConferenceVoyage",
            ])
        // A look-up by identifier finds a subentity's row.
        let fresh = ModelContext(container)
        let found = try #require(fresh.model(for: business[1].persistentModelID) as? PGConferenceVoyage)
        #expect(found.company == "Apple" && found.destination == "Cupertino")
        // The store answers the family itself, in one statement.
        let schema = Schema(Self.types)
        let store = try PostgresStore(
            PostgresStoreConfiguration(name: "postgres", schema: schema, url: url), migrationPlan: nil)
        let query = try FetchQuery(FetchDescriptor<PGBusinessVoyage>(), schema: schema)
        #expect(query.spansSubentities)
        let snapshots: [DefaultSnapshot] = try store.snapshots(query)
        #expect(
            snapshots.map { $0.persistentIdentifier.entityName }.sorted() == ["PGBusinessVoyage", "PGConferenceVoyage"])
        // And the context leaves the family to the store: without a sort, the rows come in
        // key order (here, the order of two saves), where a merge of each entity's fetch
        // would put every PGVoyage before the conferences.
        context.insert(
            PGConferenceVoyage(name: "c2", destination: "Cupertino", startDate: Self.day, company: "Apple"))
        try context.save()
        context.insert(PGVoyage(name: "v2", destination: "Lisbon", startDate: Self.day))
        try context.save()
        #expect(try ModelContext(container).fetch(FetchDescriptor<PGVoyage>()).map(\.name).suffix(2) == ["c2", "v2"])
    }

    @Test func predicatesReadTheBasesPropertiesTheSubclassesOwnAndCasts() throws {
        guard let url = try Self.database() else { return }
        let container = try Self.container(url)
        try seed(ModelContext(container))
        let context = ModelContext(container)
        let inLisbon = try context.fetch(
            FetchDescriptor<PGBusinessVoyage>(
                predicate: #Predicate { $0.destination == "Lisbon" && $0.company == "Acme" }))
        #expect(inLisbon.map(\.name) == ["b1"])
        let apple = try context.fetch(
            FetchDescriptor<PGBusinessVoyage>(predicate: #Predicate { $0.company == "Apple" }))
        #expect(apple.map(\.name) == ["c1"])
        let conference = try context.fetch(
            FetchDescriptor<PGConferenceVoyage>(predicate: #Predicate { $0.conference == "WWDC" }))
        #expect(conference.map(\.name) == ["c1"])
        let business = try context.fetch(
            FetchDescriptor<PGVoyage>(
                predicate: #Predicate { trip in trip is PGBusinessVoyage }, sortBy: [SortDescriptor(\.name)]))
        #expect(business.map(\.name) == ["b1", "c1"])
        let notBusiness = try context.fetch(
            FetchDescriptor<PGVoyage>(
                predicate: #Predicate { !($0 is PGBusinessVoyage) }, sortBy: [SortDescriptor(\.name)]))
        #expect(notBusiness.map(\.name) == ["p1", "v1"])
        let acme = try context.fetch(
            FetchDescriptor<PGVoyage>(predicate: #Predicate { ($0 as? PGBusinessVoyage)?.company == "Acme" }))
        #expect(acme.map(\.name) == ["b1"])
        let withCompanion = try context.fetch(
            FetchDescriptor<PGVoyage>(predicate: #Predicate { ($0 as? PGPersonalVoyage)?.companion != nil }))
        #expect(withCompanion.map(\.name) == ["p1"])
        // A sorted, limited fetch across the hierarchy: one statement, in SQL's order.
        var window = FetchDescriptor<PGVoyage>(sortBy: [SortDescriptor(\.startDate, order: .reverse)])
        window.fetchLimit = 2
        window.fetchOffset = 1
        #expect(try context.fetch(window).map(\.name) == ["p1", "c1"])
        let plan = try context.explain(window)
        #expect(plan.contains("ORDER BY") && plan.contains("LIMIT 2") && plan.contains("OFFSET 1"), "\(plan)")
        #expect(!plan.contains("in memory"), "\(plan)")
        #expect(!plan.contains("@entity"), "\(plan)")
        #expect(plan.components(separatedBy: "SELECT").count == 2, "\(plan)")
        var businessWindow = FetchDescriptor<PGBusinessVoyage>(sortBy: [SortDescriptor(\.startDate)])
        businessWindow.fetchLimit = 1
        #expect(try context.fetch(businessWindow).map(\.name) == ["c1"])
        let businessPlan = try context.explain(
            FetchDescriptor<PGBusinessVoyage>(predicate: #Predicate { $0.company == "Acme" }))
        #expect(businessPlan.contains("\"@entity\" = ANY"), "\(businessPlan)")
        #expect(businessPlan.contains("\"PGBusinessVoyage.company\" = $"), "\(businessPlan)")
        #expect(!businessPlan.contains("in memory"), "\(businessPlan)")
        #expect(
            try context.fetchCount(FetchDescriptor<PGVoyage>(predicate: #Predicate { $0.destination == "Lisbon" }))
                == 2)
        #expect(
            try context.fetchCount(
                FetchDescriptor<PGBusinessVoyage>(predicate: #Predicate { $0.destination == "Lisbon" })) == 1)
    }

    @Test func unsavedSubclassModelsAreInTheBasesFetch() throws {
        guard let url = try Self.database() else { return }
        let container = try Self.container(url)
        let context = ModelContext(container)
        context.insert(PGVoyage(name: "v1", destination: "Lisbon", startDate: Self.day))
        try context.save()
        let business = PGBusinessVoyage(name: "b1", destination: "Lisbon", startDate: Self.day + 1, company: "Acme")
        context.insert(business)
        #expect(
            try context.fetch(FetchDescriptor<PGVoyage>(sortBy: [SortDescriptor(\.name)])).map(\.name) == ["b1", "v1"])
        #expect(try context.fetchCount(FetchDescriptor<PGVoyage>()) == 2)
        #expect(try context.fetch(FetchDescriptor<PGBusinessVoyage>()).first === business)
        business.company = "Initech"
        try context.save()
        let fresh = ModelContext(container)
        let stored = try #require(try fresh.fetch(FetchDescriptor<PGBusinessVoyage>()).first)
        #expect(stored.company == "Initech" && stored.name == "b1" && stored.destination == "Lisbon")
        #expect(stored.expenseReport == nil)
        // An update of a subentity's row writes its own and inherited columns.
        stored.destination = "Faro"
        stored.expenseReport = Data([1, 2, 3])
        try fresh.save()
        let again = try #require(
            try ModelContext(try Self.container(url)).fetch(FetchDescriptor<PGBusinessVoyage>()).first)
        #expect(again.destination == "Faro" && again.expenseReport == Data([1, 2, 3]) && again.company == "Initech")
    }

    @Test func relationshipsTypedAsTheBaseHoldSubclassModelsAfterReopening() throws {
        guard let url = try Self.database() else { return }
        let container = try Self.container(url)
        let context = ModelContext(container)
        let traveller = PGTraveller(name: "Ana")
        context.insert(traveller)
        let business = PGBusinessVoyage(name: "b1", destination: "Lisbon", startDate: Self.day, company: "Acme")
        let personal = PGPersonalVoyage(name: "p1", destination: "Porto", startDate: Self.day)
        let conference = PGConferenceVoyage(
            name: "c1", destination: "Cupertino", startDate: Self.day, company: "Apple")
        traveller.voyages = [
            business, personal, PGVoyage(name: "v1", destination: "Faro", startDate: Self.day), conference,
        ]
        traveller.favourite = conference
        try context.save()

        // Another process's view: a second container on the database.
        let fresh = ModelContext(try Self.container(url))
        let loaded = try #require(try fresh.fetch(FetchDescriptor<PGTraveller>()).first)
        #expect(loaded.voyages.map(\.name) == ["b1", "p1", "v1", "c1"])
        #expect(
            loaded.voyages.map { "\(type(of: $0))" } == [
                "PGBusinessVoyage", "PGPersonalVoyage", "PGVoyage", "PGConferenceVoyage",
            ])
        #expect(loaded.favourite?.persistentModelID.entityName == "PGConferenceVoyage")
        #expect((loaded.favourite as? PGConferenceVoyage)?.company == "Apple")
        let loadedBusiness = try #require(
            try fresh.fetch(
                FetchDescriptor<PGBusinessVoyage>(
                    predicate: #Predicate { $0.name == "b1" })
            ).first)
        #expect(loadedBusiness.traveller === loaded)
        #expect(
            try fresh.fetch(FetchDescriptor<PGVoyage>(predicate: #Predicate { $0.traveller?.name == "Ana" })).count
                == 4)

        // The cascade reaches every subclass's models.
        fresh.delete(loaded)
        try fresh.save()
        #expect(try ModelContext(container).fetchCount(FetchDescriptor<PGVoyage>()) == 0)
    }

    @Test func deleteByPredicateHonoursIncludeSubclasses() throws {
        guard let url = try Self.database() else { return }
        let container = try Self.container(url)
        try seed(ModelContext(container))
        let context = ModelContext(container)
        try context.delete(
            model: PGVoyage.self, where: #Predicate { $0.destination == "Lisbon" }, includeSubclasses: false)
        try context.save()
        #expect(
            try ModelContext(container).fetch(FetchDescriptor<PGVoyage>(sortBy: [SortDescriptor(\.name)])).map(\.name)
                == ["b1", "c1", "p1"])
        try context.delete(
            model: PGBusinessVoyage.self, where: #Predicate { $0.destination == "Cupertino" }, includeSubclasses: false)
        try context.save()
        #expect(try ModelContext(container).fetchCount(FetchDescriptor<PGVoyage>()) == 3)
        let day = Self.day
        try context.delete(model: PGVoyage.self, where: #Predicate { $0.startDate > day }, includeSubclasses: true)
        try context.save()
        #expect(try ModelContext(container).fetch(FetchDescriptor<PGVoyage>()).map(\.name) == [])
        #expect(try ModelContext(container).fetchCount(FetchDescriptor<PGBusinessVoyage>()) == 0)
    }

    /// A hierarchy without relationships: a delete by predicate of one entity goes to the
    /// store as a batch delete, which restricts the hierarchy's table by `"@entity"`.
    @Test func aBatchDeleteTakesOnlyItsEntitysRows() throws {
        guard let url = try Self.database() else { return }
        let schema = Schema([PGShape.self, PGCircle.self])
        var configuration = PostgresStoreConfiguration(name: "postgres", schema: schema, url: url)
        configuration.keepsHistory = true
        let container = try ModelContainer(for: schema, configurations: [configuration])
        let context = ModelContext(container)
        context.insert(PGShape(name: "small", size: 1))
        context.insert(PGShape(name: "big", size: 5))
        context.insert(PGCircle(name: "ring", size: 5, radius: 2))
        try context.save()
        try context.delete(model: PGShape.self, where: #Predicate { $0.size > 1 }, includeSubclasses: false)
        try context.save()
        let left = try ModelContext(container).fetch(FetchDescriptor<PGShape>(sortBy: [SortDescriptor(\.name)]))
        #expect(left.map(\.name) == ["ring", "small"])
        #expect((left.first as? PGCircle)?.radius == 2)
        let history = try context.fetchHistory(HistoryDescriptor<DefaultHistoryTransaction>())
        #expect(history.last?.changes.map(\.changedPersistentIdentifier.entityName) == ["PGShape"])
        try context.delete(model: PGShape.self, where: #Predicate { $0.size > 1 })
        try context.save()
        #expect(try ModelContext(container).fetch(FetchDescriptor<PGShape>()).map(\.name) == ["small"])
    }

    @Test func uniquenessSpansTheHierarchy() throws {
        guard let url = try Self.database() else { return }
        let container = try Self.container(url)
        try seed(ModelContext(container))
        let context = ModelContext(container)
        // A subclass's model may not take a name a model of another class holds.
        context.insert(PGBusinessVoyage(name: "v1", destination: "Oslo", startDate: Self.day, company: "Acme"))
        let error = #expect(throws: SwiftDataError.self) { try context.save() }
        #expect(error?.code == .uniqueConstraintViolation)
        context.rollback()
        context.insert(PGVoyage(name: "c1", destination: "Oslo", startDate: Self.day))
        #expect(throws: SwiftDataError.self) { try context.save() }
        context.rollback()
        // Two new models of different classes with one name, in one save.
        context.insert(PGVoyage(name: "n1", destination: "Oslo", startDate: Self.day))
        context.insert(PGPersonalVoyage(name: "n1", destination: "Oslo", startDate: Self.day))
        #expect(throws: SwiftDataError.self) { try context.save() }
        context.rollback()
        #expect(try ModelContext(container).fetchCount(FetchDescriptor<PGVoyage>()) == 4)
        // Within one class, a unique clash is an upsert as ever.
        context.insert(PGBusinessVoyage(name: "b1", destination: "Oslo", startDate: Self.day, company: "Initech"))
        try context.save()
        let upserted = try ModelContext(container).fetch(
            FetchDescriptor<PGBusinessVoyage>(predicate: #Predicate { $0.name == "b1" }))
        #expect(upserted.map(\.company) == ["Initech"])
        #expect(upserted.map(\.destination) == ["Oslo"])
        #expect(try ModelContext(container).fetchCount(FetchDescriptor<PGVoyage>()) == 4)
        // An update onto another class's name is refused by the table's constraint.
        let other = ModelContext(container)
        let personal = try #require(try other.fetch(FetchDescriptor<PGPersonalVoyage>()).first)
        personal.name = "b1"
        let updateError = #expect(throws: SwiftDataError.self) { try other.save() }
        #expect(updateError?.code == .uniqueConstraintViolation)
    }

    /// Siblings that declare a property of the same name keep it in columns of their own;
    /// a uniqueness constraint a subentity declares (`.unique`) covers only its own rows (a unique
    /// index with `WHERE "@entity" IN (…)`), and the root's covers them all.
    @Test func aSubentitysOwnConstraintCoversOnlyItsRows() throws {
        guard let url = try Self.database() else { return }
        let schema = Schema([PGAnimal.self, PGDog.self, PGCat.self])
        let container = try ModelContainer(
            for: schema, configurations: [PostgresStoreConfiguration(name: "postgres", schema: schema, url: url)])
        let context = ModelContext(container)
        context.insert(PGDog(name: "rex", chip: "A1"))
        context.insert(PGCat(name: "tom", chip: "A1"))
        context.insert(PGAnimal(name: "generic"))
        try context.save()
        // Another dog with the chip upserts the first (the dog's own constraint).
        context.insert(PGDog(name: "max", chip: "A1"))
        try context.save()
        let fresh = ModelContext(container)
        let dogs = try fresh.fetch(FetchDescriptor<PGDog>())
        #expect(dogs.map(\.name) == ["max"] && dogs.map(\.chip) == ["A1"])
        let cats = try fresh.fetch(FetchDescriptor<PGCat>(predicate: #Predicate { $0.chip == "A1" }))
        #expect(cats.map(\.name) == ["tom"])
        #expect(try fresh.fetchCount(FetchDescriptor<PGAnimal>()) == 3)
        // The root's constraint spans the hierarchy.
        context.insert(PGCat(name: "max", chip: "B2"))
        #expect(throws: SwiftDataError.self) { try context.save() }
        context.rollback()
        let connection = try PostgresConnection(url, connectTimeout: 5)
        let indexes = try connection.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = 'PGAnimal' AND indexname LIKE '%PGDog%' "
                + "ORDER BY indexname")
        #expect((0..<indexes.count).compactMap { indexes.text($0, 0) } == ["ux_PGDog_chip"])
        // The dog's constraint is the database's too.
        #expect(throws: PostgresError.self) {
            try connection.run(
                "INSERT INTO \"PGAnimal\" (\"pk\", \"@entity\", \"name\", \"PGDog.chip\") VALUES (-1, 'PGDog', 'x', 'A1')"
            )
        }
        try connection.run(
            "INSERT INTO \"PGAnimal\" (\"pk\", \"@entity\", \"name\", \"PGCat.chip\") VALUES (-1, 'PGCat', 'y', 'A1')")
    }

    /// A hierarchy's table has an index on `"@entity"`, from which a fetch of a subentity
    /// reads its few rows; a layout-3 database made before the index gets it when opened.
    @Test func aSubentitysRowsAreReadFromTheEntityIndex() throws {
        guard let url = try Self.database() else { return }
        let context = ModelContext(try Self.container(url))
        for i in 0..<3000 {
            context.insert(PGVoyage(name: "v\(i)", destination: "Lisbon", startDate: Self.day))
        }
        for i in 0..<3 {
            context.insert(PGBusinessVoyage(name: "b\(i)", destination: "Porto", startDate: Self.day, company: "Acme"))
        }
        try context.save()
        let admin = try PostgresConnection(url, connectTimeout: 5)
        func entityIndexes() throws -> [String] {
            let rows = try admin.execute(
                "SELECT indexname FROM pg_indexes WHERE tablename = 'PGVoyage' AND indexname LIKE '%@entity'")
            return (0..<rows.count).compactMap { rows.text($0, 0) }
        }
        #expect(try entityIndexes() == ["ix_PGVoyage_@entity"])

        // As a database made before the index was: the next open makes it.
        try admin.run("DROP INDEX \"ix_PGVoyage_@entity\"")
        let reopened = try Self.container(url)
        #expect(try entityIndexes() == ["ix_PGVoyage_@entity"])
        try admin.run("ANALYZE \"PGVoyage\"")
        let fresh = ModelContext(reopened)
        let descriptor = FetchDescriptor<PGBusinessVoyage>()
        let plan = try fresh.explain(descriptor)
        #expect(plan.contains("ix_PGVoyage_@entity"), "\(plan)")
        #expect(try fresh.fetch(descriptor).map(\.name).sorted() == ["b0", "b1", "b2"])
        #expect(try fresh.fetchCount(FetchDescriptor<PGVoyage>()) == 3003)
    }

    @Test func historyRecordsEachChangeUnderItsOwnEntity() throws {
        guard let url = try Self.database() else { return }
        let container = try Self.container(url, keepsHistory: true)
        let context = ModelContext(container)
        try seed(context)
        let business = try #require(
            try context.fetch(
                FetchDescriptor<PGBusinessVoyage>(
                    predicate: #Predicate { $0.name == "b1" })
            ).first)
        business.company = "Initech"
        try context.save()
        let conference = try #require(try context.fetch(FetchDescriptor<PGConferenceVoyage>()).first)
        context.delete(conference)
        try context.save()
        let history = try ModelContext(try Self.container(url, keepsHistory: true)).fetchHistory(
            HistoryDescriptor<DefaultHistoryTransaction>())
        #expect(history.count == 3)
        let inserted = history.first?.changes.map(\.changedPersistentIdentifier.entityName).sorted()
        #expect(inserted == ["PGBusinessVoyage", "PGConferenceVoyage", "PGPersonalVoyage", "PGVoyage"])
        let update = history.dropFirst().first?.changes.first
        #expect(update?.changedPersistentIdentifier.entityName == "PGBusinessVoyage")
        if case .update(let change)? = update {
            let paths = (change as? DefaultHistoryUpdate<PGBusinessVoyage>)?.updatedAttributes.map { $0 as AnyKeyPath }
            #expect(paths == [\PGBusinessVoyage.company as AnyKeyPath], "\(String(describing: paths))")
        } else {
            Issue.record("expected an update, got \(String(describing: update))")
        }
        #expect(history.last?.changes.map(\.changedPersistentIdentifier.entityName) == ["PGConferenceVoyage"])
    }

    /// The tables as `Formats/postgres.md` specifies them: one for the hierarchy, named as
    /// its root, with `"@entity"`, the subentities' own columns and layout 3; a second
    /// container reads everything back; a schema without a hierarchy is still layout 2.
    @Test func oneTablePerHierarchyReadBackByASecondContainer() throws {
        guard let cluster = try PostgresStoreTests.cluster() else { return }
        let url = try cluster.freshDatabase()
        try seed(ModelContext(try Self.container(url)))
        let connection = try PostgresConnection(url, connectTimeout: 5)
        let tables = try connection.execute(
            "SELECT relname FROM pg_class WHERE relkind = 'r' AND relnamespace = current_schema()::regnamespace "
                + "AND relname LIKE 'PG%' ORDER BY relname")
        #expect(
            (0..<tables.count).compactMap { tables.text($0, 0) } == ["PGTraveller", "PGTraveller.voyages", "PGVoyage"])
        let rows = try connection.execute(
            "SELECT \"@entity\", \"name\", \"PGBusinessVoyage.company\", "
                + "\"PGConferenceVoyage.conference\", \"PGPersonalVoyage.companion\" FROM \"PGVoyage\" ORDER BY \"name\""
        )
        #expect(
            (0..<rows.count).map { row in (0..<5).map { rows.text(row, $0) ?? "-" }.joined(separator: " ") } == [
                "PGBusinessVoyage b1 Acme - -", "PGConferenceVoyage c1 Apple WWDC -", "PGPersonalVoyage p1 - - Ana",
                "PGVoyage v1 - - -",
            ])
        let layout = try connection.execute("SELECT \"value\" FROM stowage_metadata WHERE \"key\" = 'layout'")
        #expect(layout.text(0, 0) == "3")
        // A subentity's non-optional column must hold a value in its entity's rows.
        #expect(throws: PostgresError.self) {
            try connection.run(
                "INSERT INTO \"PGVoyage\" (\"pk\", \"@entity\", \"name\", \"destination\", \"startDate\", "
                    + "\"isArchived\") VALUES (-1, 'PGBusinessVoyage', 'x', 'y', now(), false)")
        }

        let reopened = ModelContext(try Self.container(url))
        let all = try reopened.fetch(FetchDescriptor<PGVoyage>(sortBy: [SortDescriptor(\.name)]))
        #expect(all.map(\.name) == ["b1", "c1", "p1", "v1"])
        #expect((all[1] as? PGConferenceVoyage)?.company == "Apple")
        #expect((all[2] as? PGPersonalVoyage)?.companion == "Ana")

        // A schema without a hierarchy stays layout 2.
        let flat = try cluster.freshDatabase()
        _ = try PostgresStoreTests.container(flat)
        let flatLayout = try PostgresConnection(flat, connectTimeout: 5).execute(
            "SELECT \"value\" FROM stowage_metadata WHERE \"key\" = 'layout'")
        #expect(flatLayout.text(0, 0) == "2")
        _ = try PostgresStoreTests.container(flat)
    }

    /// A changed schema with a hierarchy is refused (not converted yet), and the tables
    /// stay as they were; so is a hierarchy's schema on a layout 2 database.
    @Test func aChangedSchemaWithAHierarchyIsRefused() throws {
        guard let cluster = try PostgresStoreTests.cluster() else { return }
        let url = try cluster.freshDatabase()
        try seed(ModelContext(try Self.container(url)))
        let fewer = Schema([PGVoyage.self, PGBusinessVoyage.self, PGTraveller.self])
        let error = #expect(throws: DataStoreError.self) {
            try ModelContainer(
                for: fewer, configurations: [PostgresStoreConfiguration(name: "postgres", schema: fewer, url: url)])
        }
        #expect(error?.code == .schemaMismatch)
        #expect(error?.message.contains("not yet for class hierarchies") == true, "\(String(describing: error))")
        #expect(try ModelContext(try Self.container(url)).fetchCount(FetchDescriptor<PGVoyage>()) == 4)

        let flat = try cluster.freshDatabase()
        _ = try PostgresStoreTests.container(flat)
        let refused = #expect(throws: DataStoreError.self) { try Self.container(flat) }
        #expect(refused?.code == .schemaMismatch)
    }
}
