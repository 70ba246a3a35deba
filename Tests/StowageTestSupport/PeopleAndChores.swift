import Foundation
import Stowage

/// Rows for the stores whose models have uniqueness constraints and indexes (``Person``,
/// ``Chore``): the checkpoint tests and the `stowage` tool's tests write them.
public enum PeopleAndChores {
    /// Saves `people` people and `chores` chores, then raises the age of the first
    /// `updated` people and deletes the last `deleted`, in a second and third save.
    public static func insert(
        into context: ModelContext, people: Int, chores: Int, updated: Int, deleted: Int
    ) throws {
        var everyone: [Person] = []
        for i in 0..<people {
            let person = Person(email: "p\(i)@example.com", name: "Name \(i % 7)", age: (i * 37) % 90)
            context.insert(person)
            everyone.append(person)
        }
        for i in 0..<chores {
            context.insert(
                Chore(
                    seq: i, title: "Chore \(i % 11)", priority: i % 5, isCompleted: i % 3 == 0,
                    dueDate: i % 4 == 0 ? nil : Date(timeIntervalSince1970: Double(i * 1000))))
        }
        try context.save()
        for person in everyone.prefix(updated) { person.age += 100 }
        try context.save()
        for person in everyone.suffix(deleted) { context.delete(person) }
        try context.save()
    }
}
