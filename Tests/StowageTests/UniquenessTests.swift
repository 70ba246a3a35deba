import Foundation
@_spi(Testing) import Stowage
import StowageTestSupport
import Testing

@Suite("Uniqueness")
struct UniquenessTests {
    /// The rules every store keeps (`StowageTestSupport/UniquenessChecks.swift`), on each of
    /// Stowage's own stores.
    @Test(
        arguments: [StoreFactory.memory, .log, .json].map(\.name), UniquenessChecks.checks.map(\.0))
    func everyStoreKeepsTheRules(store: String, check: String) throws {
        let factory = try #require(StoreFactory.all.first { $0.name == store })
        let run = try #require(UniquenessChecks.checks.first { $0.0 == check }?.1)
        try run(factory)
    }

    @Test func aSecondSaveWithTheSameUniqueValueUpdatesTheFirst() throws {
        let container = try memoryContainer()
        let context = ModelContext(container)
        context.insert(Person(email: "p@x", name: "First"))
        try context.save()
        let second = Person(email: "p@x", name: "Second")
        context.insert(second)
        try context.save()
        let all = try ModelContext(container).fetch(FetchDescriptor<Person>())
        #expect(all.count == 1)
        #expect(all.first?.name == "Second")
        #expect(!second.persistentModelID.isTemporary)
    }

    @Test(arguments: [false, true])
    func duplicatesInOneSaveLeaveOneRegisteredModel(contextHoldsAnotherModel: Bool) throws {
        let container = try memoryContainer()
        let seed = ModelContext(container)
        seed.insert(Person(email: "other@x", name: "Other"))
        try seed.save()
        let context = ModelContext(container)
        let other = contextHoldsAnotherModel ? try context.fetch(FetchDescriptor<Person>()).first : nil
        let a = Person(email: "dup@x", name: "A")
        let b = Person(email: "dup@x", name: "B")
        context.insert(a)
        context.insert(b)
        try context.save()
        #expect(context.registeredModelCount == (contextHoldsAnotherModel ? 2 : 1))
        let registered: Person? = context.registeredModel(for: a.persistentModelID)
        #expect(registered === a)
        #expect(registered?.name == "B")
        if let other {
            let stillRegistered: Person? = context.registeredModel(for: other.persistentModelID)
            #expect(stillRegistered === other)
        }
        #expect(!context.hasChanges)
    }

    @Test func upsertOntoARegisteredModelRefreshesIt() throws {
        let context = ModelContext(try memoryContainer())
        let first = Person(email: "r@x", name: "Old")
        context.insert(first)
        try context.save()
        context.insert(Person(email: "r@x", name: "New"))
        try context.save()
        #expect(first.name == "New")
        #expect(try context.fetch(FetchDescriptor<Person>()).first === first)
    }

}
