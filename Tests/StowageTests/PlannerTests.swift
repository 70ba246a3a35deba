import Foundation
@_spi(Testing) import Stowage
import StowageTestSupport
import Testing

/// The planner's choices, asserted on `explain` text so that a regression shows as a diff.
@Suite("Query planner")
struct PlannerTests {
    let context: ModelContext

    init() throws {
        context = ModelContext(try memoryContainer())
    }

    @Test func equalityOnAUniqueAttribute() throws {
        let plan = try context.explain(FetchDescriptor<Person>(predicate: #Predicate { $0.email == "a@x" }))
        #expect(plan == #"INDEX Person(email) EQ email = "a@x""#)
    }

    @Test func equalityAndRangeOnACompoundIndex() throws {
        let plan = try context.explain(
            FetchDescriptor<Chore>(predicate: #Predicate { $0.isCompleted == false && $0.priority > 4 }))
        #expect(plan == "INDEX Chore(isCompleted, priority) EQ isCompleted = false RANGE priority > 4")
    }

    /// `x >= a && x < b`, the way an app walks a table in batches: one range scan of the
    /// index between the bounds, not a scan from one bound to the end with the other as a filter.
    @Test func twoBoundsOnOneColumnAreOneRange() throws {
        let low = 3
        let high = 7
        let plan = try context.explain(
            FetchDescriptor<Chore>(predicate: #Predicate { $0.priority >= low && $0.priority < high }))
        #expect(plan == "INDEX Chore(priority) RANGE priority >= 3 AND priority < 7")
        for i in 0..<12 {
            context.insert(Chore(seq: i, title: "c\(i)", priority: i, isCompleted: false, dueDate: nil))
        }
        try context.save()
        let found = try context.fetch(
            FetchDescriptor<Chore>(
                predicate: #Predicate { $0.priority >= low && $0.priority < high && $0.priority > 3 }))
        #expect(found.map(\.priority).sorted() == [4, 5, 6])
    }

    @Test func whatTheIndexDoesNotCoverStaysAFilter() throws {
        var descriptor = FetchDescriptor<Chore>(predicate: #Predicate { $0.isCompleted && $0.title.contains("x") })
        descriptor.fetchLimit = 25
        let plan = try context.explain(descriptor)
        #expect(
            plan == #"INDEX Chore(isCompleted, priority) EQ isCompleted = true; FILTER title.contains("x"); LIMIT 25"#)
    }

    @Test func rangeWithSortAndLimitReadsTheIndexInOrder() throws {
        let start = Date(timeIntervalSinceReferenceDate: 0)
        var descriptor = FetchDescriptor<Chore>(
            predicate: #Predicate { $0.dueDate! > start }, sortBy: [SortDescriptor(\.dueDate)])
        descriptor.fetchLimit = 20
        // A forced unwrap is not an indexable comparison: it stays a filter, but the
        // sort is still read from the index.
        #expect(try context.explain(descriptor).hasPrefix("INDEX Chore(dueDate); FILTER "))
        var byPriority = FetchDescriptor<Chore>(
            predicate: #Predicate { $0.priority > 4 }, sortBy: [SortDescriptor(\.priority, order: .reverse)])
        byPriority.fetchLimit = 20
        #expect(
            try context.explain(byPriority)
                == "INDEX Chore(priority) RANGE priority > 4 REVERSE; ORDER BY INDEX; LIMIT 20")
    }

    @Test func compoundPrefixThenSortOnTheNextColumn() throws {
        var descriptor = FetchDescriptor<Chore>(
            predicate: #Predicate { $0.isCompleted == true }, sortBy: [SortDescriptor(\.priority)])
        descriptor.fetchLimit = 5
        descriptor.fetchOffset = 2
        #expect(
            try context.explain(descriptor)
                == "INDEX Chore(isCompleted, priority) EQ isCompleted = true; ORDER BY INDEX; OFFSET 2; LIMIT 5")
    }

    @Test func orderedScanWithoutAPredicate() throws {
        var descriptor = FetchDescriptor<Chore>(sortBy: [SortDescriptor(\.dueDate, order: .reverse)])
        descriptor.fetchLimit = 3
        #expect(try context.explain(descriptor) == "INDEX Chore(dueDate) REVERSE; ORDER BY INDEX; LIMIT 3")
    }

    @Test func anOrOfIndexableTermsIsAUnion() throws {
        let plan = try context.explain(
            FetchDescriptor<Person>(predicate: #Predicate { $0.email == "a@x" || $0.name == "Bo" }))
        #expect(
            plan
                == #"UNION(INDEX Person(email) EQ email = "a@x" | INDEX Person(name) EQ name = "Bo"); FILTER (email == "a@x" OR name == "Bo")"#
        )
    }

    /// A list's `contains` of an indexed property is one equality scan per distinct value,
    /// and is not filtered again (an equality another index serves still comes first); a
    /// list of more values than the limit is a filter.
    @Test func aListsContainsIsAUnionOfEqualities() throws {
        let priorities = [3, 1, 3]
        let plan = try context.explain(
            FetchDescriptor<Chore>(predicate: #Predicate { priorities.contains($0.priority) && $0.seq > 2 }))
        #expect(
            plan
                == "UNION(INDEX Chore(priority) EQ priority = 3 | INDEX Chore(priority) EQ priority = 1); FILTER seq > 2"
        )
        let long = Array(0...1024)  // one more than the planner looks up
        let scanned = try context.explain(FetchDescriptor<Chore>(predicate: #Predicate { long.contains($0.priority) }))
        #expect(scanned.hasPrefix("SCAN Chore; FILTER "))
    }

    @Test func startsWithIsAPrefixRange() throws {
        let plan = try context.explain(FetchDescriptor<Person>(predicate: #Predicate { $0.name.starts(with: "Al") }))
        #expect(plan == #"INDEX Person(name) PREFIX name "Al"; FILTER name.startsWith("Al")"#)
    }

    @Test func identifiersAreFetchedDirectly() throws {
        let a = Chore(seq: 1, title: "a", priority: 1, isCompleted: false, dueDate: nil)
        context.insert(a)
        try context.save()
        let ids = [a.persistentModelID]
        let plan = try context.explain(
            FetchDescriptor<Chore>(predicate: #Predicate { ids.contains($0.persistentModelID) }))
        #expect(plan == "IDS Chore (1)")
    }

    @Test func noUsableIndexIsAFullScan() throws {
        let plan = try context.explain(
            FetchDescriptor<Chore>(predicate: #Predicate { $0.seq == 3 }, sortBy: [SortDescriptor(\.seq)]))
        #expect(plan == "SCAN Chore; FILTER seq == 3; SORT seq ASC")
    }

    @Test func countAndIdentifiersUseTheIndexAlone() throws {
        for i in 0..<50 {
            context.insert(Chore(seq: i, title: "t\(i)", priority: i % 10, isCompleted: i % 3 == 0, dueDate: nil))
        }
        try context.save()
        let descriptor = FetchDescriptor<Chore>(predicate: #Predicate { $0.isCompleted == true && $0.priority >= 5 })
        #expect(
            try context.explain(descriptor)
                == "INDEX Chore(isCompleted, priority) EQ isCompleted = true RANGE priority >= 5")
        let expected = (0..<50).filter { $0 % 3 == 0 && $0 % 10 >= 5 }.count
        #expect(try context.fetchCount(descriptor) == expected)
        #expect(try context.fetchIdentifiers(descriptor).count == expected)
    }

    @Test func anEqualityOnAUniqueAttributeFindsOneRecordOrNone() throws {
        for i in 0..<30 { context.insert(Person(email: "p\(i)@x", name: "P\(i)", age: i)) }
        try context.save()
        let wanted = "p17@x"
        let found = try context.fetch(FetchDescriptor<Person>(predicate: #Predicate { $0.email == wanted }))
        #expect(found.map(\.age) == [17])
        #expect(
            try context.fetchIdentifiers(FetchDescriptor<Person>(predicate: #Predicate { $0.email == wanted }))
                == found.map(\.persistentModelID))
        let missing = "nobody@x"
        #expect(try context.fetch(FetchDescriptor<Person>(predicate: #Predicate { $0.email == missing })).isEmpty)
        var skipped = FetchDescriptor<Person>(predicate: #Predicate { $0.email == wanted })
        skipped.fetchOffset = 1
        #expect(try context.fetch(skipped).isEmpty)
        #expect(try context.fetchCount(FetchDescriptor<Person>(predicate: #Predicate { $0.email == wanted })) == 1)
    }

    /// An update that leaves an indexed value alone skips its index entry; one that changes
    /// only a string's Unicode form (equal to Swift, different bytes to an index key) must not.
    @Test func updatesKeepIndexEntriesInStepWithTheValues() throws {
        let precomposed = "caf\u{E9}"
        let decomposed = "cafe\u{301}"
        #expect(precomposed == decomposed)
        let chore = Chore(seq: 1, title: precomposed, priority: 2, isCompleted: false, dueDate: nil)
        context.insert(chore)
        try context.save()
        chore.priority = 3  // the title's index entry stays as it is
        try context.save()
        chore.title = decomposed
        try context.save()
        let fresh = ModelContext(context.container)
        let byTitle = FetchDescriptor<Chore>(predicate: #Predicate { $0.title == decomposed })
        #expect(try fresh.explain(byTitle).hasPrefix("INDEX Chore(title)"))
        #expect(try fresh.fetch(byTitle).map(\.seq) == [1])
        let byPriority = FetchDescriptor<Chore>(predicate: #Predicate { $0.priority == 3 })
        #expect(try fresh.fetch(byPriority).map(\.seq) == [1])
        #expect(try fresh.fetch(FetchDescriptor<Chore>(predicate: #Predicate { $0.priority == 2 })).isEmpty)
    }
}
