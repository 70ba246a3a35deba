import Foundation
import Observation
import Stowage
import StowageTestSupport
import Synchronization
import Testing

@Model
final class Errand {
    var title: String
    var room: String
    var label: String?
    var minutes: Int
    var done: Bool = false
    var cost: Double = 0
    var owner: Housemate?

    init(title: String, room: String, label: String? = nil, minutes: Int, done: Bool = false) {
        self.title = title
        self.room = room
        self.label = label
        self.minutes = minutes
        self.done = done
    }
}

@Model
final class Housemate {
    var name: String
    var isAway: Bool = false
    @Relationship(deleteRule: .nullify, inverse: \Errand.owner) var chores: [Errand] = []

    init(name: String) { self.name = name }
}

@ModelActor
actor ErrandWriter {
    func insert(title: String, room: String, minutes: Int) throws -> PersistentIdentifier {
        let chore = Errand(title: title, room: room, minutes: minutes)
        modelContext.insert(chore)
        try modelContext.save()
        return chore.persistentModelID
    }

    func finish(_ id: PersistentIdentifier) throws {
        guard let chore = modelContext.model(for: id) as? Errand else { return }
        chore.done = true
        try modelContext.save()
    }
}

/// `ResultsObserver` and its sections, following saves of every context of a container.
@Suite("ResultsObserver")
struct ResultsObserverTests {
    static let stores = StoreFactory.all.map(\.name)

    private func container(_ store: String) throws -> ModelContainer {
        let factory = try #require(StoreFactory.all.first { $0.name == store })
        return try factory.make(Schema([Errand.self, Housemate.self]))
    }

    private static let open = #Predicate<Errand> { !$0.done }

    /// Titles of the observer's results, in order.
    private func titles<S>(_ observer: ResultsObserver<Errand, S>) -> [String] {
        observer.results.map(\.title)
    }

    @Test(arguments: stores)
    func followsInsertsUpdatesThatEnterAndLeaveDeletesAndReorders(store: String) throws {
        let container = try container(store)
        let context = ModelContext(container)
        let dishes = Errand(title: "dishes", room: "kitchen", minutes: 10)
        let floor = Errand(title: "floor", room: "kitchen", minutes: 30)
        context.insert(dishes)
        context.insert(floor)
        try context.save()
        let observer = try ResultsObserver<Errand, Never>(
            filterBy: Self.open, sortBy: [SortDescriptor(\.minutes)], modelContext: context)
        #expect(titles(observer) == ["dishes", "floor"])
        #expect(observer.sections == nil)

        // An insert lands at its place in the order.
        context.insert(Errand(title: "bins", room: "hall", minutes: 20))
        #expect(titles(observer) == ["dishes", "floor"], "unsaved changes are not in the results")
        try context.save()
        #expect(titles(observer) == ["dishes", "bins", "floor"])

        // A change of the sort key moves the model.
        dishes.minutes = 40
        try context.save()
        #expect(titles(observer) == ["bins", "floor", "dishes"])

        // An update that leaves the predicate takes it out; one that enters brings it back.
        floor.done = true
        try context.save()
        #expect(titles(observer) == ["bins", "dishes"])
        floor.done = false
        floor.minutes = 1
        try context.save()
        #expect(titles(observer) == ["floor", "bins", "dishes"])

        // A delete takes it out.
        context.delete(dishes)
        try context.save()
        #expect(titles(observer) == ["floor", "bins"])

        // A change of a property neither filtered nor sorted on leaves the order alone.
        floor.title = "mop"
        try context.save()
        #expect(titles(observer) == ["mop", "bins"])
    }

    @Test(arguments: stores)
    func followsAnotherContextOfTheContainer(store: String) throws {
        let container = try container(store)
        let mine = ModelContext(container)
        let observer = try ResultsObserver<Errand, Never>(
            fetchDescriptor: FetchDescriptor(predicate: Self.open, sortBy: [SortDescriptor(\.title)]),
            modelContext: mine)
        #expect(observer.results.isEmpty)
        let other = ModelContext(container)
        let laundry = Errand(title: "laundry", room: "bath", minutes: 45)
        other.insert(laundry)
        other.insert(Errand(title: "bins", room: "hall", minutes: 5))
        try other.save()
        #expect(titles(observer) == ["bins", "laundry"])
        laundry.done = true
        try other.save()
        #expect(titles(observer) == ["bins"])
        // The observer's models are its own context's.
        #expect(observer.results.first?.modelContext === mine)
    }

    @Test(arguments: stores)
    func followsAModelActor(store: String) async throws {
        let container = try container(store)
        let observer = try ResultsObserver<Errand, Never>(
            filterBy: Self.open, sortBy: [SortDescriptor(\.minutes, order: .reverse)], modelContainer: container)
        let writer = ErrandWriter(modelContainer: container)
        let bins = try await writer.insert(title: "bins", room: "hall", minutes: 5)
        _ = try await writer.insert(title: "oven", room: "kitchen", minutes: 50)
        #expect(titles(observer) == ["oven", "bins"])
        try await writer.finish(bins)
        #expect(titles(observer) == ["oven"])
    }

    @Test(arguments: stores)
    func sectionsAppearEmptyAndDisappear(store: String) throws {
        let container = try container(store)
        let context = ModelContext(container)
        let observer = try ResultsObserver<Errand, String>(
            filterBy: Self.open, sortBy: [SortDescriptor(\.minutes)], sectionBy: \.room, modelContext: context)
        #expect(observer.sections?.isEmpty == true)
        #expect(observer.sectionBy == \Errand.room)
        // The section key sorts first, then the app's sort.
        #expect(observer.sortBy.count == 1, "sortBy is the app's")
        let bins = Errand(title: "bins", room: "hall", minutes: 5)
        let oven = Errand(title: "oven", room: "kitchen", minutes: 50)
        let dishes = Errand(title: "dishes", room: "kitchen", minutes: 10)
        for chore in [bins, oven, dishes] { context.insert(chore) }
        try context.save()
        var sections = try #require(observer.sections)
        #expect(sections.sectionTitles == ["hall", "kitchen"])
        #expect(sections.map { $0.map(\.title) } == [["bins"], ["dishes", "oven"]])
        #expect(sections[sectionTitle: "kitchen"]?.count == 2)
        #expect(sections.index(ofSectionTitled: "kitchen") == 1)
        #expect(sections[sectionTitle: "garden"] == nil)
        #expect(titles(observer) == ["bins", "dishes", "oven"], "results run section by section")

        // A section appears when a model moves into a new one.
        bins.room = "attic"
        try context.save()
        sections = try #require(observer.sections)
        #expect(sections.sectionTitles == ["attic", "kitchen"])
        #expect(sections[sectionTitle: "hall"] == nil, "the emptied section is gone")

        // The last model of a section leaving the predicate takes the section away.
        bins.done = true
        try context.save()
        sections = try #require(observer.sections)
        #expect(sections.sectionTitles == ["kitchen"])
        #expect(sections.first?.id == "kitchen")
        context.delete(oven)
        context.delete(dishes)
        try context.save()
        #expect(observer.sections?.isEmpty == true)
        #expect(observer.results.isEmpty)
    }

    @Test(arguments: stores)
    func anOptionalSectionKeyGroupsNilUnderTheEmptyTitle(store: String) throws {
        let container = try container(store)
        let context = ModelContext(container)
        context.insert(Errand(title: "a", room: "r", label: nil, minutes: 1))
        context.insert(Errand(title: "b", room: "r", label: "", minutes: 2))
        context.insert(Errand(title: "c", room: "r", label: "weekly", minutes: 3))
        try context.save()
        let observer = try ResultsObserver<Errand, String>(
            sortBy: [SortDescriptor(\.minutes)], sectionBy: \.label, modelContext: context)
        let sections = try #require(observer.sections)
        #expect(sections.sectionTitles == ["", "weekly"])
        #expect(sections[sectionTitle: ""]?.map(\.title) == ["a", "b"])
    }

    @Test(arguments: stores)
    func readersInObservationTrackingHearOfEachChange(store: String) throws {
        let container = try container(store)
        let context = ModelContext(container)
        let observer = try ResultsObserver<Errand, Never>(filterBy: Self.open, modelContext: context)
        let heard = PosixMutex(0)
        func track() {
            withObservationTracking {
                _ = observer.results
            } onChange: {
                heard.withLock { $0 += 1 }
            }
        }
        track()
        let chore = Errand(title: "bins", room: "hall", minutes: 5)
        context.insert(chore)
        try context.save()
        #expect(heard.withLock { $0 } == 1)
        track()
        // A save of a model outside the predicate changes nothing, and tells no one.
        let other = ModelContext(container)
        other.insert(Errand(title: "done already", room: "hall", minutes: 1, done: true))
        try other.save()
        #expect(heard.withLock { $0 } == 1)
        chore.done = true
        try context.save()
        #expect(heard.withLock { $0 } == 2)
        #expect(observer.results.isEmpty)
    }

    @Test(arguments: stores)
    func settingTheSortOrFilterFetchesAgain(store: String) throws {
        let container = try container(store)
        let context = ModelContext(container)
        for (title, minutes, done) in [("a", 3, false), ("b", 1, true), ("c", 2, false)] {
            context.insert(Errand(title: title, room: "r", minutes: minutes, done: done))
        }
        try context.save()
        let observer = try ResultsObserver<Errand, String>(
            sortBy: [SortDescriptor(\.minutes)], sectionBy: \.room, modelContext: context)
        #expect(titles(observer) == ["b", "c", "a"])
        observer.sortBy = [SortDescriptor(\.title, order: .reverse)]
        #expect(titles(observer) == ["c", "b", "a"])
        #expect(observer.fetchDescriptor.sortBy.count == 1, "the section key stays out of the app's descriptor")
        observer.filterBy = Self.open
        #expect(titles(observer) == ["c", "a"])
        // Later saves follow the new descriptor.
        context.insert(Errand(title: "d", room: "r", minutes: 0))
        try context.save()
        #expect(titles(observer) == ["d", "c", "a"])
        observer.filterBy = nil
        #expect(titles(observer) == ["d", "c", "b", "a"])
        #expect(observer.fetchError == nil)
    }

    @Test(arguments: stores)
    func aDescriptorThatCannotBeFetchedThrowsOrIsReported(store: String) throws {
        let container = try container(store)
        let context = ModelContext(container)
        context.insert(Errand(title: "a", room: "r", minutes: 1))
        try context.save()
        #expect(throws: SwiftDataError.self) {
            _ = try ResultsObserver<Errand, Never>(sortBy: [SortDescriptor(\.owner?.name)], modelContext: context)
        }
        let observer = try ResultsObserver<Errand, Never>(modelContext: context)
        #expect(observer.results.count == 1)
        observer.sortBy = [SortDescriptor(\.owner?.name)]
        #expect(observer.fetchError is SwiftDataError)
        #expect(observer.results.isEmpty)
        observer.sortBy = [SortDescriptor(\.title)]
        #expect(observer.fetchError == nil)
        #expect(observer.results.count == 1)
    }

    @Test(arguments: stores)
    func aWindowAndARelationshipPredicateAreFetchedAgainWhole(store: String) throws {
        let container = try container(store)
        let context = ModelContext(container)
        let ana = Housemate(name: "Ana")
        context.insert(ana)
        for minutes in 1...5 {
            let chore = Errand(title: "c\(minutes)", room: "r", minutes: minutes)
            context.insert(chore)
            if minutes.isMultiple(of: 2) { chore.owner = ana }
        }
        try context.save()
        var window = FetchDescriptor<Errand>(sortBy: [SortDescriptor(\.minutes)])
        window.fetchLimit = 2
        window.fetchOffset = 1
        let windowed = try ResultsObserver<Errand, Never>(fetchDescriptor: window, modelContext: context)
        #expect(titles(windowed) == ["c2", "c3"])
        let present = try ResultsObserver<Errand, Never>(
            filterBy: #Predicate { $0.owner?.isAway == false }, sortBy: [SortDescriptor(\.minutes)],
            modelContext: context)
        #expect(titles(present) == ["c2", "c4"])
        context.insert(Errand(title: "c0", room: "r", minutes: 0))
        try context.save()
        #expect(titles(windowed) == ["c1", "c2"])
        // Saving the housemate, not the chores, changes which chores match.
        ana.isAway = true
        try context.save()
        #expect(titles(present).isEmpty)
    }

    @Test(arguments: stores)
    func erasingTheContainerEmptiesTheResults(store: String) throws {
        let container = try container(store)
        let context = ModelContext(container)
        context.insert(Errand(title: "a", room: "r", minutes: 1))
        try context.save()
        let observer = try ResultsObserver<Errand, Never>(modelContext: context)
        #expect(observer.results.count == 1)
        try container.erase()
        #expect(observer.results.isEmpty)
    }

    @Test(arguments: stores)
    func sumsFollowSavesWithoutLoadingModelsAndTellObservers(store: String) throws {
        let container = try container(store)
        let context = ModelContext(container)
        let bins = Errand(title: "bins", room: "hall", minutes: 5)
        bins.cost = 1.5
        context.insert(bins)
        context.insert(Errand(title: "done", room: "hall", minutes: 100, done: true))
        try context.save()
        let observer = try ResultsObserver<Errand, Never>(filterBy: Self.open, modelContext: context)
        #expect(try observer.sum(of: \.minutes) == 5)
        #expect(try observer.sum(of: \.cost) == 1.5)
        let heard = PosixMutex(0)
        withObservationTracking {
            _ = try? observer.sum(of: \.minutes)
        } onChange: {
            heard.withLock { $0 += 1 }
        }
        // A change of a summed value alone changes the sum, not the results.
        bins.minutes = 7
        try context.save()
        #expect(heard.withLock { $0 } == 1)
        #expect(try observer.sum(of: \.minutes) == 7)
        // Another context's insert, an update that enters, and a delete.
        let other = ModelContext(container)
        other.insert(Errand(title: "oven", room: "kitchen", minutes: 50))
        try other.save()
        #expect(try observer.sum(of: \.minutes) == 57)
        let done = try #require(try context.fetch(FetchDescriptor<Errand>(predicate: #Predicate { $0.done })).first)
        done.done = false
        try context.save()
        #expect(try observer.sum(of: \.minutes) == 157)
        context.delete(bins)
        try context.save()
        #expect(try observer.sum(of: \.minutes) == 150)
        #expect(try observer.sum(of: \.cost) == 0)
        #expect(throws: SwiftDataError.self) { _ = try observer.sum(of: \.title.count) }
    }

    @Test(arguments: stores)
    func aDeleteByPredicateTakesItsModelsOut(store: String) throws {
        let container = try container(store)
        let context = ModelContext(container)
        for minutes in 1...6 { context.insert(Errand(title: "e\(minutes)", room: "r", minutes: minutes)) }
        try context.save()
        let observer = try ResultsObserver<Errand, Never>(sortBy: [SortDescriptor(\.minutes)], modelContext: context)
        let other = ModelContext(container)
        try other.delete(model: Errand.self, where: #Predicate { $0.minutes > 3 })
        try other.save()
        #expect(titles(observer) == ["e1", "e2", "e3"])
        #expect(try observer.sum(of: \.minutes) == 6)
    }

    @Test(arguments: stores)
    func anObserverOfABaseClassFollowsItsSubclasses(store: String) throws {
        let factory = try #require(StoreFactory.all.first { $0.name == store })
        let container = try factory.make(
            Schema([Voyage.self, PersonalVoyage.self, BusinessVoyage.self, ConferenceVoyage.self, Traveller.self]))
        let context = ModelContext(container)
        let day = Date(timeIntervalSince1970: 86_400 * 20_000)
        let observer = try ResultsObserver<Voyage, String>(
            filterBy: #Predicate { !$0.isArchived }, sortBy: [SortDescriptor(\.startDate)], sectionBy: \.destination,
            modelContext: context)
        let business = BusinessVoyage(name: "b", destination: "Oslo", startDate: day, company: "Acme")
        context.insert(business)
        context.insert(Voyage(name: "v", destination: "Lisbon", startDate: day.addingTimeInterval(60)))
        context.insert(
            ConferenceVoyage(name: "c", destination: "Oslo", startDate: day.addingTimeInterval(-60), company: "Apple"))
        try context.save()
        #expect(observer.results.map(\.name) == ["v", "c", "b"])
        #expect(observer.sections?.sectionTitles == ["Lisbon", "Oslo"])
        #expect(observer.results.last is BusinessVoyage)
        business.isArchived = true
        try context.save()
        #expect(observer.results.map(\.name) == ["v", "c"])
        // An observer of a subclass sees only its family.
        let businessOnly = try ResultsObserver<BusinessVoyage, Never>(modelContext: context)
        #expect(Set(businessOnly.results.map(\.name)) == ["b", "c"])
    }

    /// Random inserts, updates and deletes from two contexts, saved at random: after each
    /// save the observer's results and sections are what a fetch returns.
    @Test(arguments: stores)
    func randomSavesFromTwoContextsMatchAFetch(store: String) throws {
        let container = try container(store)
        let contexts = [ModelContext(container), ModelContext(container)]
        let observer = try ResultsObserver<Errand, String>(
            filterBy: #Predicate { !$0.done && $0.minutes < 80 }, sortBy: [SortDescriptor(\.minutes, order: .reverse)],
            sectionBy: \.room, modelContext: contexts[0])
        var generator = SeededRandom(seed: 39)
        let rooms = ["attic", "bath", "hall", "kitchen"]
        var counter = 0
        for step in 0..<400 {
            let context = contexts[Int.random(in: 0...1, using: &generator)]
            let existing = try context.fetch(FetchDescriptor<Errand>())
            switch Int.random(in: 0..<10, using: &generator) {
            case 0..<3:
                counter += 1
                context.insert(
                    Errand(
                        title: "t\(counter)", room: rooms.randomElement(using: &generator)!,
                        minutes: Int.random(in: 0..<100, using: &generator),
                        done: Int.random(in: 0..<4, using: &generator) == 0))
            case 3..<5:
                existing.randomElement(using: &generator)?.minutes = Int.random(in: 0..<100, using: &generator)
            case 5:
                existing.randomElement(using: &generator)?.done.toggle()
            case 6:
                existing.randomElement(using: &generator)?.room = rooms.randomElement(using: &generator)!
            case 7:
                if let doomed = existing.randomElement(using: &generator) { context.delete(doomed) }
            case 8:
                existing.randomElement(using: &generator)?.cost =
                    Double(Int.random(in: 0..<10_000, using: &generator)) / 7
            default:
                existing.randomElement(using: &generator)?.title = "renamed\(step)"
            }
            if Int.random(in: 0..<3, using: &generator) == 0 {
                try context.save()
                let expected = try expectedResults(container)
                #expect(observer.results.map(\.persistentModelID) == expected.map(\.0), "step \(step)")
                let sections = try #require(observer.sections)
                var grouped: [(String, Int)] = []
                for (_, room) in expected {
                    if grouped.last?.0 == room { grouped[grouped.count - 1].1 += 1 } else { grouped.append((room, 1)) }
                }
                #expect(sections.sectionTitles == grouped.map(\.0), "step \(step)")
                #expect(sections.map(\.count) == grouped.map(\.1), "step \(step)")
                let fresh = try ModelContext(container).fetch(FetchDescriptor<Errand>()).filter {
                    !$0.done && $0.minutes < 80
                }
                #expect(try observer.sum(of: \.minutes) == fresh.reduce(0) { $0 + $1.minutes }, "step \(step)")
                let costs = fresh.reduce(0.0) { $0 + $1.cost }
                #expect(abs(try observer.sum(of: \.cost) - costs) <= 1e-9 * max(1, abs(costs)), "step \(step)")
            }
        }
    }

    /// What the observer should show: the saved chores that are open and under 80
    /// minutes, by room, then minutes descending, then identifier.
    private func expectedResults(_ container: ModelContainer) throws -> [(PersistentIdentifier, String)] {
        let fresh = ModelContext(container)
        let all = try fresh.fetch(FetchDescriptor<Errand>()).filter { !$0.done && $0.minutes < 80 }
        return all.sorted { a, b in
            if a.room != b.room { return a.room < b.room }
            if a.minutes != b.minutes { return a.minutes > b.minutes }
            return a.persistentModelID < b.persistentModelID
        }.map { ($0.persistentModelID, $0.room) }
    }
}

/// `ModelContext.fetchSum(_:of:)`: Stowage's sums over a fetch.
@Suite("fetchSum")
struct FetchSumTests {
    @Test(arguments: StoreFactory.all.map(\.name))
    func sumsTheMatchingRecordsWithTheirUnsavedChanges(store: String) throws {
        let factory = try #require(StoreFactory.all.first { $0.name == store })
        let context = ModelContext(try factory.make(Schema([Errand.self, Housemate.self])))
        for minutes in [5, 10, 20] {
            let errand = Errand(title: "e\(minutes)", room: "r", minutes: minutes)
            errand.cost = Double(minutes) / 4
            context.insert(errand)
        }
        try context.save()
        let short = FetchDescriptor<Errand>(predicate: #Predicate { $0.minutes < 15 })
        #expect(try context.fetchSum(short, of: \.minutes) == 15)
        #expect(try context.fetchSum(FetchDescriptor<Errand>(), of: \.cost) == 8.75)
        // Unsaved changes count when the descriptor includes them, as in a fetch.
        context.insert(Errand(title: "new", room: "r", minutes: 1))
        #expect(try context.fetchSum(short, of: \.minutes) == 16)
        var savedOnly = short
        savedOnly.includePendingChanges = false
        #expect(try context.fetchSum(savedOnly, of: \.minutes) == 15)
        #expect(throws: SwiftDataError.self) { _ = try context.fetchSum(short, of: \.title.count) }
    }
}
