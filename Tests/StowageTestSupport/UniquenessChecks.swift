import Foundation
import Stowage
import Testing

/// The uniqueness rules every store of Stowage's keeps, run through `ModelContext` on a
/// fresh container of a factory's store: `UniquenessTests` runs them on the memory, log
/// and JSON stores, the PostgreSQL tests on `PostgresStore`. (The custom test store,
/// `FileDictionaryStore`, keeps simpler rules and is not asked.)
public enum UniquenessChecks {
    /// Every check, by name.
    public static let checks: [(String, @Sendable (StoreFactory) throws -> Void)] = [
        ("duplicates in one save become one record with the later values", duplicatesInOneSave),
        ("an insert meeting a stored record updates it, on either constraint", insertMeetingAStoredRecord),
        ("the fail policy throws and saves nothing", failPolicy),
        ("an update that collides throws and changes nothing", updateThatCollides),
        ("deleting frees the value in the same save", deletingFreesTheValue),
    ]

    public static func duplicatesInOneSave(_ factory: StoreFactory) throws {
        let container = try factory.container()
        let context = ModelContext(container)
        let a = Person(email: "dup@x", name: "A")
        let b = Person(email: "dup@x", name: "B")
        context.insert(a)
        context.insert(b)
        try context.save()
        let all = try ModelContext(container).fetch(FetchDescriptor<Person>())
        // The later insert's values, as an upsert across saves keeps them.
        #expect(all.map(\.name) == ["B"])
        #expect(a.persistentModelID == b.persistentModelID)
        #expect(a.name == "B")
    }

    public static func insertMeetingAStoredRecord(_ factory: StoreFactory) throws {
        let container = try factory.container()
        let context = ModelContext(container)
        let first = Person(email: "r@x", name: "Old")
        context.insert(first)
        context.insert(Person(email: "1@x", name: "Sam", age: 30))
        context.insert(Person(email: "2@x", name: "Sam", age: 31))
        try context.save()
        context.insert(Person(email: "r@x", name: "New"))
        context.insert(Person(email: "3@x", name: "Sam", age: 30))
        try context.save()
        #expect(first.name == "New")
        #expect(try context.fetch(FetchDescriptor<Person>(predicate: #Predicate { $0.email == "r@x" })).first === first)
        let sams = try ModelContext(container).fetch(
            FetchDescriptor<Person>(predicate: #Predicate { $0.name == "Sam" }, sortBy: [SortDescriptor(\.age)]))
        #expect(sams.map(\.email) == ["3@x", "2@x"])
    }

    public static func failPolicy(_ factory: StoreFactory) throws {
        let container = try factory.container()
        let context = ModelContext(container)
        context.insert(Person(email: "f@x", name: "One"))
        try context.save()
        context.uniquenessPolicy = .fail
        context.insert(Person(email: "f@x", name: "Two"))
        context.insert(Person(email: "g@x", name: "Three"))
        let error = #expect(throws: SwiftDataError.self) { try context.save() }
        #expect(error?.code == .uniqueConstraintViolation)
        #expect(error?.message.contains("email") == true, "\(String(describing: error))")
        #expect(try ModelContext(container).fetch(FetchDescriptor<Person>()).map(\.name) == ["One"])
        #expect(context.hasChanges, "the failed changes are still pending")
    }

    public static func updateThatCollides(_ factory: StoreFactory) throws {
        let container = try factory.container()
        let context = ModelContext(container)
        let a = Person(email: "a@x", name: "A")
        let b = Person(email: "b@x", name: "B")
        context.insert(a)
        context.insert(b)
        try context.save()
        b.email = "a@x"
        b.age = 7
        #expect(throws: SwiftDataError.uniqueConstraintViolation) { try context.save() }
        let stored = try ModelContext(container).fetch(FetchDescriptor<Person>(sortBy: [SortDescriptor(\.email)]))
        #expect(stored.map(\.email) == ["a@x", "b@x"])
        #expect(stored.map(\.age) == [0, 0])
    }

    public static func deletingFreesTheValue(_ factory: StoreFactory) throws {
        let container = try factory.container()
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
