import Foundation
import StowageTestSupport
import Testing

@_spi(Testing) @testable import Stowage

/// The plan a fetch runs is the plan `explain` shows: the planner produces the look-up of
/// one unique value as a plan like any other, and the executor runs it.
@Suite("Query executor")
struct QueryExecutorTests {
    static func store(_ container: ModelContainer) throws -> MemoryStore {
        try #require(container.storesForTesting.first as? MemoryStore)
    }

    @Test func aUniqueEqualityIsPlannedAsOneLookUpAndExplainedAsItsIndexEquality() throws {
        let container = try memoryContainer()
        let context = ModelContext(container)
        for i in 0..<40 { context.insert(Person(email: "p\(i)@x", name: "P\(i % 7)", age: i)) }
        try context.save()
        let store = try Self.store(container)
        let wanted = "p17@x"
        var descriptor = FetchDescriptor<Person>(
            predicate: #Predicate { $0.email == wanted }, sortBy: [SortDescriptor(\.name)])
        descriptor.fetchLimit = 5
        let query = try FetchQuery(descriptor, schema: container.schema)
        let plan = store.withTable { $0.plan(query) }
        guard case .uniqueKey(let lookup, let text) = plan.access else {
            Issue.record("planned as \(plan)")
            return
        }
        #expect(text.equal.map(\.0) == ["email"])
        // The fetch runs the planner's first rule on its own; it finds the same look-up.
        let indexes = try #require(store.withTable { $0.entities["Person"]?.indexes })
        let run = try #require(QueryPlanner.uniqueLookup(query, indexes))
        #expect(run.index == lookup.index && run.key == lookup.key)
        #expect(indexes[lookup.index].columnNames == ["email"])
        #expect(plan.description == #"INDEX Person(email) EQ email = "p17@x"; SORT name ASC; LIMIT 5"#)
        #expect(try context.explain(descriptor) == plan.description)
        #expect(try context.fetch(descriptor).map(\.age) == [17])
        #expect(try context.fetchCount(descriptor) == 1)
        #expect(try context.fetchIdentifiers(descriptor).count == 1)
    }

    @Test func otherShapesOfTheSameEqualityAreIndexScans() throws {
        let container = try memoryContainer()
        let context = ModelContext(container)
        for i in 0..<40 { context.insert(Person(email: "p\(i)@x", name: "P\(i % 7)", age: i)) }
        try context.save()
        let store = try Self.store(container)
        let wanted = "p17@x"
        // An offset, a second condition, or a non-unique index: the planner's other choices.
        var skipped = FetchDescriptor<Person>(predicate: #Predicate { $0.email == wanted })
        skipped.fetchOffset = 1
        let both = FetchDescriptor<Person>(predicate: #Predicate { $0.email == wanted && $0.age > 3 })
        let byName = FetchDescriptor<Person>(predicate: #Predicate { $0.name == "P3" })
        for (descriptor, expected) in [(skipped, 0), (both, 1), (byName, 6)] {
            let query = try FetchQuery(descriptor, schema: container.schema)
            let plan = store.withTable { $0.plan(query) }
            if case .uniqueKey = plan.access { Issue.record("\(plan) is a unique look-up") }
            #expect(try context.explain(descriptor).hasPrefix("INDEX "), "\(plan)")
            #expect(try context.fetch(descriptor).count == expected, "\(plan)")
            #expect(try context.fetchCount(descriptor) == expected, "\(plan)")
        }
    }
}
