import Foundation
import Observation
@_spi(Testing) import Stowage
import StowageTestSupport
import Synchronization
import Testing

// The seed's model inheritance, under names of their own so they do not meet the other
// tests' models.
@Model
class Voyage {
    #Index<Voyage>([\.destination])
    #Unique<Voyage>([\.name])
    var name: String
    var destination: String
    var startDate: Date
    var isArchived: Bool = false
    var traveller: Traveller?

    init(name: String, destination: String, startDate: Date) {
        self.name = name
        self.destination = destination
        self.startDate = startDate
    }
}

@Model
class PersonalVoyage: Voyage {
    var companion: String?
}

@Model
class BusinessVoyage: Voyage {
    var company: String
    var expenseReport: Data?

    init(name: String, destination: String, startDate: Date, company: String) {
        self.company = company
        super.init(name: name, destination: destination, startDate: startDate)
    }
}

@Model
final class ConferenceVoyage: BusinessVoyage {
    var conference: String = "WWDC"
}

@Model
final class Traveller {
    var name: String
    @Relationship(deleteRule: .cascade, inverse: \Voyage.traveller) var voyages: [Voyage] = []
    var favourite: Voyage?

    init(name: String) { self.name = name }
}

@Suite("Model inheritance")
struct InheritanceTests {
    static let stores = StoreFactory.all.map(\.name)
    static let day = Date(timeIntervalSince1970: 86_400 * 20_000)

    private func container(_ store: String) throws -> ModelContainer {
        let factory = try #require(StoreFactory.all.first { $0.name == store })
        return try factory.make(
            Schema([Voyage.self, PersonalVoyage.self, BusinessVoyage.self, ConferenceVoyage.self, Traveller.self]))
    }

    private func seed(_ context: ModelContext) throws {
        context.insert(Voyage(name: "v1", destination: "Lisbon", startDate: Self.day))
        let personal = PersonalVoyage(name: "p1", destination: "Porto", startDate: Self.day + 10)
        personal.companion = "Ana"
        context.insert(personal)
        context.insert(BusinessVoyage(name: "b1", destination: "Lisbon", startDate: Self.day + 20, company: "Acme"))
        let conference = ConferenceVoyage(
            name: "c1", destination: "Cupertino", startDate: Self.day + 5, company: "Apple")
        context.insert(conference)
        try context.save()
    }

    @Test func theSchemaKnowsEachEntitysSuperentity() throws {
        let schema = Schema([Voyage.self, BusinessVoyage.self, ConferenceVoyage.self])
        let business = try #require(schema.entitiesByName["BusinessVoyage"])
        let conference = try #require(schema.entitiesByName["ConferenceVoyage"])
        let voyage = try #require(schema.entitiesByName["Voyage"])
        #expect(voyage.superentity == nil)
        #expect(business.superentityName == "Voyage")
        #expect(conference.superentity?.name == "BusinessVoyage")
        #expect(
            business.properties.map(\.name).prefix(5) == [
                "name", "destination", "startDate", "isArchived", "traveller",
            ])
        #expect(business.inheritedProperties.count == voyage.properties.count)
        #expect(business.inheritedPropertiesByName["destination"]?.index == 1)
        #expect(business.inheritedPropertiesByName["company"] == nil)
        #expect(business.properties.map(\.name).suffix(2) == ["company", "expenseReport"])
        #expect(schema.subentities(of: voyage).map(\.name) == ["BusinessVoyage"])
        // The base's key paths and the subclass's own name the same property.
        #expect(business.property(for: \Voyage.destination)?.name == "destination")
        #expect(business.property(for: \BusinessVoyage.destination)?.name == "destination")
        #expect(conference.property(for: \BusinessVoyage.company)?.name == "company")
        // The base's index and uniqueness constraint are the subclass's too.
        #expect(business.indices == [["destination"]])
        #expect(business.uniquenessConstraints == [["name"]])
        // Registering a subclass brings its superclasses (and, through their relationships,
        // Traveller).
        #expect(
            Schema([ConferenceVoyage.self]).entities.map(\.name).sorted() == [
                "BusinessVoyage", "ConferenceVoyage", "Traveller", "Voyage",
            ])
    }

    @Test(arguments: stores)
    func fetchingTheBaseReturnsEverySubclassAndASubclassOnlyItsOwn(store: String) throws {
        let container = try container(store)
        try seed(ModelContext(container))
        let context = ModelContext(container)
        let all = try context.fetch(FetchDescriptor<Voyage>(sortBy: [SortDescriptor(\.startDate)]))
        #expect(all.map(\.name) == ["v1", "c1", "p1", "b1"])
        #expect(type(of: all[0]) == Voyage.self)
        #expect(all[1] is ConferenceVoyage)
        #expect((all[2] as? PersonalVoyage)?.companion == "Ana")
        #expect((all[3] as? BusinessVoyage)?.company == "Acme")
        let business = try context.fetch(FetchDescriptor<BusinessVoyage>(sortBy: [SortDescriptor(\.name)]))
        #expect(business.map(\.name) == ["b1", "c1"])
        #expect((business[1] as? ConferenceVoyage)?.conference == "WWDC")
        #expect(try context.fetch(FetchDescriptor<ConferenceVoyage>()).map(\.name) == ["c1"])
        #expect(try context.fetchCount(FetchDescriptor<Voyage>()) == 4)
        #expect(try context.fetchCount(FetchDescriptor<BusinessVoyage>()) == 2)
        #expect(try context.fetchIdentifiers(FetchDescriptor<Voyage>()).count == 4)
    }

    @Test(arguments: stores)
    func predicatesReadTheBasesPropertiesTheSubclassesOwnAndCasts(store: String) throws {
        let container = try container(store)
        try seed(ModelContext(container))
        let context = ModelContext(container)
        let inLisbon = try context.fetch(
            FetchDescriptor<BusinessVoyage>(
                predicate: #Predicate { $0.destination == "Lisbon" && $0.company == "Acme" }))
        #expect(inLisbon.map(\.name) == ["b1"])
        let apple = try context.fetch(FetchDescriptor<BusinessVoyage>(predicate: #Predicate { $0.company == "Apple" }))
        #expect(apple.map(\.name) == ["c1"])
        let business = try context.fetch(
            FetchDescriptor<Voyage>(
                predicate: #Predicate { trip in trip is BusinessVoyage }, sortBy: [SortDescriptor(\.name)]))
        #expect(business.map(\.name) == ["b1", "c1"])
        let notBusiness = try context.fetch(
            FetchDescriptor<Voyage>(predicate: #Predicate { !($0 is BusinessVoyage) }, sortBy: [SortDescriptor(\.name)])
        )
        #expect(notBusiness.map(\.name) == ["p1", "v1"])
        let acme = try context.fetch(
            FetchDescriptor<Voyage>(predicate: #Predicate { ($0 as? BusinessVoyage)?.company == "Acme" }))
        #expect(acme.map(\.name) == ["b1"])
        let withCompanion = try context.fetch(
            FetchDescriptor<Voyage>(predicate: #Predicate { ($0 as? PersonalVoyage)?.companion != nil }))
        #expect(withCompanion.map(\.name) == ["p1"])
        // A sorted, limited fetch across the hierarchy merges each entity's records.
        var window = FetchDescriptor<Voyage>(sortBy: [SortDescriptor(\.startDate, order: .reverse)])
        window.fetchLimit = 2
        window.fetchOffset = 1
        let firstTwo = try context.fetch(window)
        #expect(firstTwo.map(\.name) == ["p1", "c1"])
        #expect(
            try context.fetchCount(FetchDescriptor<Voyage>(predicate: #Predicate { $0.destination == "Lisbon" })) == 2)
    }

    @Test(arguments: stores)
    func unsavedSubclassModelsAreInTheBasesFetch(store: String) throws {
        let container = try container(store)
        let context = ModelContext(container)
        context.insert(Voyage(name: "v1", destination: "Lisbon", startDate: Self.day))
        try context.save()
        let business = BusinessVoyage(name: "b1", destination: "Lisbon", startDate: Self.day + 1, company: "Acme")
        context.insert(business)
        #expect(
            try context.fetch(FetchDescriptor<Voyage>(sortBy: [SortDescriptor(\.name)])).map(\.name) == ["b1", "v1"])
        #expect(try context.fetchCount(FetchDescriptor<Voyage>()) == 2)
        #expect(try context.fetch(FetchDescriptor<BusinessVoyage>()).first === business)
        business.company = "Initech"
        try context.save()
        let fresh = ModelContext(container)
        let stored = try #require(try fresh.fetch(FetchDescriptor<BusinessVoyage>()).first)
        #expect(stored.company == "Initech" && stored.name == "b1" && stored.destination == "Lisbon")
        #expect(stored.expenseReport == nil)
    }

    @Test(arguments: stores)
    func relationshipsTypedAsTheBaseHoldSubclassModels(store: String) throws {
        let container = try container(store)
        let context = ModelContext(container)
        let traveller = Traveller(name: "Ana")
        context.insert(traveller)
        let business = BusinessVoyage(name: "b1", destination: "Lisbon", startDate: Self.day, company: "Acme")
        let personal = PersonalVoyage(name: "p1", destination: "Porto", startDate: Self.day)
        traveller.voyages = [business, personal, Voyage(name: "v1", destination: "Faro", startDate: Self.day)]
        traveller.favourite = business
        #expect(business.traveller === traveller)
        try context.save()

        let fresh = ModelContext(container)
        let loaded = try #require(try fresh.fetch(FetchDescriptor<Traveller>()).first)
        #expect(Set(loaded.voyages.map(\.name)) == ["b1", "p1", "v1"])
        #expect((loaded.favourite as? BusinessVoyage)?.company == "Acme")
        #expect(loaded.voyages.contains { $0 is PersonalVoyage })
        let loadedBusiness = try #require(try fresh.fetch(FetchDescriptor<BusinessVoyage>()).first)
        #expect(loadedBusiness.traveller === loaded)
        #expect(
            try fresh.fetch(FetchDescriptor<Voyage>(predicate: #Predicate { $0.traveller?.name == "Ana" })).count == 3)

        // The cascade reaches every subclass's models.
        fresh.delete(loaded)
        try fresh.save()
        #expect(try ModelContext(container).fetchCount(FetchDescriptor<Voyage>()) == 0)
    }

    @Test(arguments: stores)
    func deleteByPredicateHonoursIncludeSubclasses(store: String) throws {
        let container = try container(store)
        try seed(ModelContext(container))
        let context = ModelContext(container)
        try context.delete(
            model: Voyage.self, where: #Predicate { $0.destination == "Lisbon" }, includeSubclasses: false)
        try context.save()
        #expect(
            try context.fetch(FetchDescriptor<Voyage>(sortBy: [SortDescriptor(\.name)])).map(\.name) == [
                "b1", "c1", "p1",
            ])
        let day = Self.day
        try context.delete(model: Voyage.self, where: #Predicate { $0.startDate > day }, includeSubclasses: true)
        try context.save()
        #expect(try ModelContext(container).fetch(FetchDescriptor<Voyage>()).map(\.name) == [])
        #expect(try ModelContext(container).fetchCount(FetchDescriptor<BusinessVoyage>()) == 0)
    }

    @Test(arguments: ["MemoryStore", "LogStore", "JSONStore"])
    func theBasesIndexServesTheSubclassAndItsUniquenessSpansTheHierarchy(store: String) throws {
        let container = try container(store)
        try seed(ModelContext(container))
        let context = ModelContext(container)
        let plan = try context.explain(FetchDescriptor<Voyage>(predicate: #Predicate { $0.destination == "Lisbon" }))
        #expect(plan.contains("INDEX Voyage(destination)"))
        #expect(plan.contains("INDEX BusinessVoyage(destination)"))
        #expect(plan.contains("UNION ALL"))

        // A subclass's model may not take a name a model of another class in the
        // hierarchy holds: the base's #Unique covers them all.
        context.insert(BusinessVoyage(name: "v1", destination: "Oslo", startDate: Self.day, company: "Acme"))
        #expect(throws: SwiftDataError.self) { try context.save() }
        context.rollback()
        #expect(try ModelContext(container).fetchCount(FetchDescriptor<Voyage>()) == 4)
        // Within one class, a unique clash is an upsert as ever.
        context.insert(BusinessVoyage(name: "b1", destination: "Oslo", startDate: Self.day, company: "Initech"))
        try context.save()
        let upserted = try ModelContext(container).fetch(
            FetchDescriptor<BusinessVoyage>(predicate: #Predicate { $0.name == "b1" }))
        #expect(upserted.map(\.company) == ["Initech"])
    }

    @Test func insertingASubclassTheSchemaLacksNamesIt() throws {
        let container = try ModelContainer(
            for: Schema([Voyage.self, Traveller.self]), configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let context = ModelContext(container)
        context.insert(BusinessVoyage(name: "b1", destination: "Lisbon", startDate: Self.day, company: "Acme"))
        let error = try #require(throws: SwiftDataError.self) { try context.save() }
        #expect("\(error)".contains("BusinessVoyage is a subclass of Voyage"))
        #expect("\(error)".contains("cannot find a model class's subclasses at run time"))
    }

    @Test(arguments: [StoreKind.log, .json])
    func theHierarchyIsThereAfterReopening(kind: StoreKind) throws {
        let directory = LogTestDirectory.fresh()
        let schema = Schema([
            Voyage.self, PersonalVoyage.self, BusinessVoyage.self, ConferenceVoyage.self, Traveller.self,
        ])
        do {
            let container = try kind.container(schema, in: directory)
            try seed(ModelContext(container))
            StoreKind.close(container)
        }
        let container = try kind.container(schema, in: directory)
        let all = try ModelContext(container).fetch(FetchDescriptor<Voyage>(sortBy: [SortDescriptor(\.name)]))
        #expect(all.map(\.name) == ["b1", "c1", "p1", "v1"])
        #expect((all[1] as? ConferenceVoyage)?.company == "Apple")
        StoreKind.close(container)
    }

    /// A subclass model's accessors for inherited properties hand Observation the base's
    /// key paths: a merge of another context's save and an undo tell those observers.
    @Test func observersOfAnInheritedPropertyHearMergesAndUndos() throws {
        let container = try container("MemoryStore")
        let context = ModelContext(container)
        let business = BusinessVoyage(name: "b1", destination: "Lisbon", startDate: Self.day, company: "Acme")
        context.insert(business)
        try context.save()
        func heard(_ change: () throws -> Void) rethrows -> Bool {
            let flag = PosixMutex(false)
            withObservationTracking {
                _ = business.destination
            } onChange: {
                flag.withLock { $0 = true }
            }
            try change()
            return flag.withLock { $0 }
        }
        let other = ModelContext(container)
        #expect(
            try heard {
                let mine = try #require(try other.fetch(FetchDescriptor<BusinessVoyage>()).first)
                mine.destination = "Porto"
                try other.save()
                context.processPendingChanges()
            })
        #expect(business.destination == "Porto")
        let undo = UndoManager()
        context.undoManager = undo
        business.destination = "Faro"
        context.processPendingChanges()
        #expect(heard { undo.undo() })
        #expect(business.destination == "Porto")
    }
}
