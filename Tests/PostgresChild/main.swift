import Foundation
import Stowage
import StowagePostgres
import StowageTestSupport

// The multi-process test's worker: `PostgresChild <connection string> <worker> <saves>`.
// Each save inserts one person whose email every worker also inserts (`shared-i`, so
// the workers' saves race on the unique email and upsert) and one of its own
// (`w<worker>-i`), and prints `ack <email> <email>` once the save has returned.
let arguments = CommandLine.arguments
guard arguments.count == 4, let worker = Int(arguments[2]), let saves = Int(arguments[3]) else {
    FileHandle.standardError.write(Data("usage: PostgresChild <connection string> <worker> <saves>\n".utf8))
    exit(2)
}
do {
    let schema = Schema([Person.self])
    let container = try ModelContainer(
        for: schema, configurations: [PostgresStoreConfiguration(name: "child", schema: schema, url: arguments[1])])
    for i in 0..<saves {
        let context = ModelContext(container)
        let shared = "shared-\(i)@example.com"
        let own = "w\(worker)-\(i)@example.com"
        // Distinct (name, age) pairs, so that only the email is shared (Person's second
        // uniqueness constraint is on name and age).
        context.insert(Person(email: shared, name: "worker \(worker)", age: i))
        context.insert(Person(email: own, name: "own \(worker)", age: i))
        do {
            try context.save()
            print("ack \(shared) \(own)")
        } catch {
            print("failed \(i): \(error)")
        }
        fflush(nil)  // every stream: `stdout` itself is shared mutable state to Swift 6
    }
} catch {
    print("open failed: \(error)")
    exit(1)
}
