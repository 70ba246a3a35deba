import Foundation
import Stowage
import Synchronization
import Testing

/// What `ModelContext.delete(model:where:)` promises on an entity no relationship touches
/// (the records are not loaded; the next save deletes them, as one commit with the rest of
/// it), run through a context on a fresh container of a factory's store: `BatchDeleteTests`
/// runs them on the memory, log and JSON stores, the PostgreSQL tests on `PostgresStore`.
public enum BatchDeleteChecks {
    /// Every check, by name.
    public static let checks: [(String, @Sendable (StoreFactory) throws -> Void)] = [
        (
            "the delete waits for the save and fetches leave its records out",
            aBatchDeleteWaitsForTheSaveAndFetchesLeaveItsRecordsOut
        ),
        ("a record inserted after the call survives the save", aRecordInsertedAfterTheCallSurvivesTheSave),
        ("a record changed after the call is still deleted", aRecordChangedAfterTheCallIsStillDeleted),
        ("rollback forgets the delete", rollbackForgetsABatchDelete),
        (oneCommit, aFailedSaveDeletesNothing),
        ("a deleted record frees its unique values for the save's inserts", aDeletedRecordFreesItsUniqueValues),
        ("a predicate only memory can test deletes exactly its matches", aPredicateOnlyMemoryCanTest),
    ]

    /// The check that the delete is part of the save's one commit.
    public static let oneCommit = "a failed save deletes nothing"

    /// Saves `context` and returns the deleted identifiers its save notification names.
    static func deletedIdentifiers(savingIn context: ModelContext) throws -> Set<PersistentIdentifier> {
        let heard = PosixMutex<Set<PersistentIdentifier>>([])
        let observer = NotificationCenter.default.addObserver(
            forName: ModelContext.didSave, object: context, queue: nil
        ) { note in
            if let ids = note.userInfo?[ModelContext.NotificationKey.deletedIdentifiers.rawValue]
                as? Set<PersistentIdentifier>
            {
                heard.withLock { $0 = ids }
            }
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        try context.save()
        return heard.withLock { $0 }
    }

    /// A container for the models the checks use.
    public static func container(_ factory: StoreFactory) throws -> ModelContainer {
        try factory.make(Schema([Person.self, Trip.self, Item.self, Badge.self, Photo.self]))
    }

    public static func seed(_ context: ModelContext, count: Int = 10) throws {
        for n in 0..<count { context.insert(Person(email: "p\(n)@example.com", name: "P\(n)", age: n)) }
        try context.save()
    }

    public static func aBatchDeleteWaitsForTheSaveAndFetchesLeaveItsRecordsOut(_ factory: StoreFactory) throws {
        let container = try container(factory)
        let context = ModelContext(container)
        try seed(context)
        let held = try #require(try context.fetch(FetchDescriptor<Person>(predicate: #Predicate { $0.age == 2 })).first)

        try context.delete(model: Person.self, where: #Predicate { $0.age < 5 })
        #expect(context.hasChanges)
        #expect(try context.fetchCount(FetchDescriptor<Person>()) == 5)
        let left = try context.fetch(FetchDescriptor<Person>(sortBy: [SortDescriptor(\.age)])).map(\.age)
        #expect(left == [5, 6, 7, 8, 9])
        // Another context sees nothing deleted until the save.
        #expect(try ModelContext(container).fetchCount(FetchDescriptor<Person>()) == 10)

        let deletedInNotification = try deletedIdentifiers(savingIn: context)
        #expect(!context.hasChanges)
        #expect(deletedInNotification.count == 5)
        #expect(deletedInNotification.contains(held.persistentModelID))
        #expect(held.isDeleted && held.modelContext == nil)
        let fresh = ModelContext(container)
        #expect(
            try fresh.fetch(FetchDescriptor<Person>(sortBy: [SortDescriptor(\.age)])).map(\.age) == [5, 6, 7, 8, 9])
    }

    public static func aRecordInsertedAfterTheCallSurvivesTheSave(_ factory: StoreFactory) throws {
        let container = try container(factory)
        let context = ModelContext(container)
        try seed(context, count: 4)
        try context.delete(model: Person.self)
        #expect(try context.fetchCount(FetchDescriptor<Person>()) == 0)
        context.insert(Person(email: "late@example.com", name: "Late", age: 1))
        #expect(try context.fetchCount(FetchDescriptor<Person>()) == 1)
        try context.save()
        #expect(try ModelContext(container).fetch(FetchDescriptor<Person>()).map(\.email) == ["late@example.com"])
    }

    /// A model of a record the batch takes, changed after the call, is deleted with it, not
    /// saved back into being.
    public static func aRecordChangedAfterTheCallIsStillDeleted(_ factory: StoreFactory) throws {
        let container = try container(factory)
        let context = ModelContext(container)
        try seed(context, count: 4)
        let held = try #require(try context.fetch(FetchDescriptor<Person>(predicate: #Predicate { $0.age == 1 })).first)
        try context.delete(model: Person.self, where: #Predicate { $0.age < 2 })
        held.name = "Changed"
        try context.save()
        let left = try ModelContext(container).fetch(FetchDescriptor<Person>(sortBy: [SortDescriptor(\.age)]))
        #expect(left.map(\.age) == [2, 3])
        #expect(held.isDeleted)
    }

    public static func rollbackForgetsABatchDelete(_ factory: StoreFactory) throws {
        let container = try container(factory)
        let context = ModelContext(container)
        try seed(context, count: 3)
        try context.delete(model: Person.self, where: #Predicate { $0.name == "P1" })
        #expect(try context.fetchCount(FetchDescriptor<Person>()) == 2)
        context.rollback()
        #expect(!context.hasChanges)
        try context.save()
        #expect(try ModelContext(container).fetchCount(FetchDescriptor<Person>()) == 3)
    }

    /// Stowage's own stores resolve the batch inside the save's one commit: a unique
    /// violation elsewhere in the same save leaves the batch's records in place.
    public static func aFailedSaveDeletesNothing(_ factory: StoreFactory) throws {
        let container = try container(factory)
        let context = ModelContext(container)
        try seed(context, count: 3)
        context.uniquenessPolicy = .fail
        try context.delete(model: Person.self, where: #Predicate { $0.age == 0 })
        context.insert(Person(email: "p1@example.com", name: "Clash", age: 7))
        #expect(throws: SwiftDataError.uniqueConstraintViolation) { try context.save() }
        #expect(try ModelContext(container).fetchCount(FetchDescriptor<Person>()) == 3)
        #expect(context.hasChanges)
    }

    /// The records a batch takes are gone before the save's inserts meet the stored ones
    /// on a uniqueness constraint: an insert with a deleted record's unique values is a new
    /// record, not an update of the deleted one. Person has two constraints (a look-up
    /// before the insert, on PostgreSQL); Photo has one (met in the INSERT itself there).
    public static func aDeletedRecordFreesItsUniqueValues(_ factory: StoreFactory) throws {
        let container = try container(factory)
        let context = ModelContext(container)
        try seed(context, count: 3)
        context.insert(Photo(title: "kept", bytes: Data([1])))
        context.insert(Photo(title: "gone", bytes: Data([2])))
        try context.save()
        let oldPerson = try #require(
            try context.fetch(FetchDescriptor<Person>(predicate: #Predicate { $0.age == 1 })).first?.persistentModelID)
        let oldPhoto = try #require(
            try context.fetch(FetchDescriptor<Photo>(predicate: #Predicate { $0.title == "gone" })).first?
                .persistentModelID)

        try context.delete(model: Person.self, where: #Predicate { $0.age == 1 })
        try context.delete(model: Photo.self, where: #Predicate { $0.title == "gone" })
        let person = Person(email: "p1@example.com", name: "New", age: 11)
        let photo = Photo(title: "gone", bytes: Data([9]))
        context.insert(person)
        context.insert(photo)
        try context.save()
        #expect(person.persistentModelID != oldPerson)
        #expect(photo.persistentModelID != oldPhoto)

        let fresh = ModelContext(container)
        let people = try fresh.fetch(FetchDescriptor<Person>(sortBy: [SortDescriptor(\.age)]))
        #expect(people.map(\.age) == [0, 2, 11])
        #expect(people.last?.name == "New")
        let photos = try fresh.fetch(FetchDescriptor<Photo>(sortBy: [SortDescriptor(\.title)]))
        #expect(photos.map(\.title) == ["gone", "kept"])
        #expect(photos.first?.bytes == Data([9]))
    }

    /// A predicate that a store cannot answer whole from its indexes or SQL (a substring
    /// test) deletes exactly the records it matches, and the save lists them.
    public static func aPredicateOnlyMemoryCanTest(_ factory: StoreFactory) throws {
        let container = try container(factory)
        let context = ModelContext(container)
        try seed(context, count: 12)
        try context.delete(model: Person.self, where: #Predicate { $0.name.contains("1") && $0.age > 1 })
        #expect(try deletedIdentifiers(savingIn: context).count == 2)
        let left = try ModelContext(container).fetch(FetchDescriptor<Person>(sortBy: [SortDescriptor(\.age)]))
        #expect(left.map(\.age) == [0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
    }
}
