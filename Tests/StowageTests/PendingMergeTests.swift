import Foundation
import Stowage
import StowageTestSupport
import Testing

/// Fetches that include a context's unsaved changes, against the context's models filtered
/// and sorted by hand: the context merges only the changes its index says can matter, and
/// the results must be those of merging every one.
@Suite("Fetches merging unsaved changes")
struct PendingMergeTests {
    static let stores = StoreFactory.all.map(\.name)

    /// A predicate and the same test in Swift.
    struct Case: Sendable {
        let name: String
        let predicate: Predicate<Item>?
        let test: @Sendable (Item) -> Bool
        let sort: [SortDescriptor<Item>]
        let order: @Sendable (Item, Item) -> Bool?
    }

    static let cases: [Case] = [
        Case(
            name: "weight > 5, by weight", predicate: #Predicate { $0.weight > 5 }, test: { $0.weight > 5 },
            sort: [SortDescriptor(\.weight)], order: { $0.weight == $1.weight ? nil : $0.weight < $1.weight }),
        Case(
            name: "name starts with a, by quantity desc", predicate: #Predicate { $0.name.starts(with: "a") },
            test: { $0.name.hasPrefix("a") }, sort: [SortDescriptor(\.quantity, order: .reverse)],
            order: { $0.quantity == $1.quantity ? nil : $0.quantity > $1.quantity }),
        Case(
            name: "quantity == 3 and not packed", predicate: #Predicate { $0.quantity == 3 && !$0.isPacked },
            test: { $0.quantity == 3 && !$0.isPacked }, sort: [SortDescriptor(\.name)],
            order: { $0.name == $1.name ? nil : $0.name < $1.name }),
        Case(
            name: "its trip is T1", predicate: #Predicate { $0.trip?.name == "T1" }, test: { $0.trip?.name == "T1" },
            sort: [SortDescriptor(\.weight)], order: { $0.weight == $1.weight ? nil : $0.weight < $1.weight }),
        Case(
            name: "name == apple (the index of inserts)", predicate: #Predicate { $0.name == "apple" },
            test: { $0.name == "apple" }, sort: [], order: { _, _ in nil }),
        Case(
            name: "quantity == 2 and weight > 3", predicate: #Predicate { $0.quantity == 2 && $0.weight > 3 },
            test: { $0.quantity == 2 && $0.weight > 3 }, sort: [SortDescriptor(\.weight)],
            order: { $0.weight == $1.weight ? nil : $0.weight < $1.weight }),
        Case(name: "all, unsorted", predicate: nil, test: { _ in true }, sort: [], order: { _, _ in nil }),
    ]

    @Test(arguments: stores)
    func randomUnsavedChangesMergeAsEveryChangeWould(store: String) throws {
        let factory = try #require(StoreFactory.all.first { $0.name == store })
        let container = try factory.make(Schema([Trip.self, Item.self]))
        let context = ModelContext(container)
        var random = SeededRandom(seed: 40)
        let trips = (0..<3).map { Trip(name: "T\($0)") }
        for trip in trips { context.insert(trip) }
        let names = ["apple", "avocado", "bread", "cheese", "almond", "dates"]
        for i in 0..<40 {
            let item = Item(name: names[i % names.count], weight: Double(i % 11))
            item.quantity = i % 5
            context.insert(item)
        }
        try context.save()
        for step in 0..<300 {
            let items = try context.fetch(FetchDescriptor<Item>())
            let item = items.randomElement(using: &random)
            switch Int.random(in: 0..<13, using: &random) {
            case 0, 11:
                let new = Item(
                    name: names.randomElement(using: &random)!, weight: Double(Int.random(in: 0..<11, using: &random)))
                new.quantity = Int.random(in: 0..<5, using: &random)
                context.insert(new)
            case 1, 2: item?.weight = Double(Int.random(in: 0..<11, using: &random))
            case 3: item?.name = names.randomElement(using: &random)!
            case 4: item?.quantity = Int.random(in: 0..<5, using: &random)
            case 5: item?.isPacked.toggle()
            case 6: item?.trip = trips.randomElement(using: &random)
            case 7: trips.randomElement(using: &random)!.name = ["T1", "T2", "T9"].randomElement(using: &random)!
            case 8: if let item { context.delete(item) }
            case 9: item?.note = "n\(step)"
            case 10: if Int.random(in: 0..<4, using: &random) == 0 { try context.save() }
            default: if Int.random(in: 0..<8, using: &random) == 0 { context.rollback() }
            }
            let visible = try visibleItems(context)
            for check in Self.cases {
                let fetched = try context.fetch(FetchDescriptor(predicate: check.predicate, sortBy: check.sort))
                let expected = visible.filter(check.test)
                if check.sort.isEmpty {
                    #expect(
                        Set(fetched.map(\.persistentModelID)) == Set(expected.map(\.persistentModelID)),
                        "step \(step), \(check.name)")
                } else {
                    // Equal keys may come in any order: compare the keys, and the members.
                    let sorted = expected.sorted { check.order($0, $1) ?? false }
                    #expect(
                        Set(fetched.map(\.persistentModelID)) == Set(expected.map(\.persistentModelID)),
                        "step \(step), \(check.name)")
                    #expect(
                        zip(fetched, fetched.dropFirst()).allSatisfy { check.order($1, $0) != true },
                        "step \(step), \(check.name): out of order")
                    #expect(fetched.count == sorted.count, "step \(step), \(check.name)")
                }
                #expect(try context.fetchCount(FetchDescriptor(predicate: check.predicate)) == expected.count)
            }
        }
    }

    /// The items the context shows: its saved records as its models hold them (unsaved
    /// changes included), without its deletes, with its inserts.
    private func visibleItems(_ context: ModelContext) throws -> [Item] {
        var saved = FetchDescriptor<Item>()
        saved.includePendingChanges = false
        var items: [Item] = []
        for id in try context.fetchIdentifiers(saved) {
            guard let item = context.model(for: id) as? Item, !item.isDeleted else { continue }
            items.append(item)
        }
        items += context.insertedModelsArray.compactMap { $0 as? Item }
        return items
    }
}
