import Foundation
@_spi(Testing) import Stowage
import StowageTestSupport
import Testing

@Suite("Uniqueness")
struct UniquenessTests {
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

    @Test func twoDuplicatesInOneSaveBecomeOneRecord() throws {
        let container = try memoryContainer()
        let context = ModelContext(container)
        let a = Person(email: "dup@x", name: "A")
        let b = Person(email: "dup@x", name: "B")
        context.insert(a)
        context.insert(b)
        try context.save()
        let all = try ModelContext(container).fetch(FetchDescriptor<Person>())
        #expect(all.count == 1)
        // Stowage keeps the later insert's values, as an upsert across saves does.
        #expect(all.first?.name == "B")
        #expect(a.persistentModelID == b.persistentModelID)
    }

    /// After a save whose inserts land on one record, the context registers one model for
    /// it, the first inserted, holding the later insert's values: whether the inserts were
    /// all the context had (its registry is rebuilt) or it also held a fetched model.
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

    @Test func compoundUniqueConstraint() throws {
        let container = try memoryContainer()
        let context = ModelContext(container)
        context.insert(Person(email: "1@x", name: "Sam", age: 30))
        context.insert(Person(email: "2@x", name: "Sam", age: 31))
        try context.save()
        #expect(try context.fetchCount(FetchDescriptor<Person>()) == 2)
        context.insert(Person(email: "3@x", name: "Sam", age: 30))
        try context.save()
        let sams = try ModelContext(container).fetch(FetchDescriptor<Person>(sortBy: [SortDescriptor(\.age)]))
        #expect(sams.map(\.email) == ["3@x", "2@x"])
    }

    @Test func failPolicyThrowsAndSavesNothing() throws {
        let container = try memoryContainer()
        let context = ModelContext(container)
        context.insert(Person(email: "f@x", name: "One"))
        try context.save()
        context.uniquenessPolicy = .fail
        context.insert(Person(email: "f@x", name: "Two"))
        do {
            try context.save()
            Issue.record("the save should have thrown")
        } catch let error as SwiftDataError {
            #expect(error.code == .uniqueConstraintViolation)
            #expect(error.message.contains("email"))
        }
        #expect(try ModelContext(container).fetch(FetchDescriptor<Person>()).map(\.name) == ["One"])
        #expect(context.hasChanges, "the failed changes are still pending")
    }

    @Test func anUpdateThatCollidesThrows() throws {
        let context = ModelContext(try memoryContainer())
        let a = Person(email: "a@x", name: "A")
        let b = Person(email: "b@x", name: "B")
        context.insert(a)
        context.insert(b)
        try context.save()
        b.email = "a@x"
        #expect(throws: SwiftDataError.uniqueConstraintViolation) { try context.save() }
    }

    @Test func deletingFreesTheValueInTheSameSave() throws {
        let container = try memoryContainer()
        let context = ModelContext(container)
        let old = Person(email: "x@x", name: "Old")
        context.insert(old)
        try context.save()
        context.delete(old)
        context.insert(Person(email: "x@x", name: "Fresh"))
        context.uniquenessPolicy = .fail
        try context.save()
        #expect(try ModelContext(container).fetch(FetchDescriptor<Person>()).map(\.name) == ["Fresh"])
    }
}
