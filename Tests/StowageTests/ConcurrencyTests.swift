import Foundation
import StowageTestSupport
import Testing

@_spi(Testing) @testable import Stowage

/// Four threads saving and two fetching at once on one container, each with contexts of
/// its own: every save lands whole, and a fetch never sees a save in part. Built with
/// `--sanitize=thread` (`Scripts/tsan`), these are the tests that show the stores' locks
/// keep their data (the block cache, the table, the group commit, the observers) to one
/// thread at a time.
@Suite("Saves and fetches on many threads")
struct ConcurrencyTests {
    static let savers = 4
    static let fetchers = 2
    static let savesPerThread = 30
    static let modelsPerSave = 3

    @Test(arguments: [StoreFactory.memory.name, StoreFactory.log.name, StoreFactory.json.name])
    func fourSaversAndTwoFetchers(store: String) throws {
        let factory = try #require(StoreFactory.all.first { $0.name == store })
        let container = try factory.make(Schema([Person.self, Trip.self, Item.self, Badge.self]))
        let failures = PosixMutex<[String]>([])
        let done = PosixMutex(0)
        let group = DispatchGroup()
        for saver in 0..<Self.savers {
            group.enter()
            Thread.detachNewThread {
                defer {
                    done.withLock { $0 += 1 }
                    group.leave()
                }
                let context = ModelContext(container)
                for save in 0..<Self.savesPerThread {
                    for m in 0..<Self.modelsPerSave {
                        let n = (saver * Self.savesPerThread + save) * Self.modelsPerSave + m
                        // `age` names the save, so that a fetch can tell a save in part.
                        context.insert(Person(email: "p\(n)@x", name: "S\(saver)-\(m)", age: saver * 1000 + save))
                    }
                    do { try context.save() } catch { failures.withLock { $0.append("save: \(error)") } }
                }
            }
        }
        for _ in 0..<Self.fetchers {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                var last = 0
                while done.withLock({ $0 }) < Self.savers {
                    do {
                        let context = ModelContext(container)
                        let people = try context.fetch(FetchDescriptor<Person>())
                        let sizes = Dictionary(grouping: people, by: \.age).values.map(\.count)
                        if sizes.contains(where: { $0 != Self.modelsPerSave }) {
                            failures.withLock { $0.append("a fetch saw part of a save: \(sizes.sorted())") }
                        }
                        if people.count < last {
                            failures.withLock { $0.append("a fetch saw \(people.count) after \(last)") }
                        }
                        last = people.count
                        _ = try context.fetchCount(FetchDescriptor<Person>(predicate: #Predicate { $0.age < 1000 }))
                    } catch {
                        failures.withLock { $0.append("fetch: \(error)") }
                    }
                }
            }
        }
        group.wait()
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0.prefix(5) })")
        let people = try ModelContext(container).fetch(FetchDescriptor<Person>())
        #expect(people.count == Self.savers * Self.savesPerThread * Self.modelsPerSave)
        #expect(Set(people.map(\.email)).count == people.count)
    }

    /// The lock the stores use: `withLockIfAvailable` does not wait while another thread
    /// holds it, and 4 threads adding 10,000 each under it lose nothing.
    @Test func posixMutexExcludes() {
        let lock = PosixMutex(0)
        let held = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            lock.withLock { _ in
                held.signal()
                release.wait()
            }
        }
        held.wait()
        #expect(lock.withLockIfAvailable { $0 } == nil)
        release.signal()
        lock.withLock { $0 += 0 }
        #expect(lock.withLockIfAvailable { $0 } == 0)

        let group = DispatchGroup()
        for _ in 0..<4 {
            group.enter()
            Thread.detachNewThread {
                for _ in 0..<10_000 { lock.withLock { $0 += 1 } }
                group.leave()
            }
        }
        group.wait()
        #expect(lock.withLock { $0 } == 40_000)
    }
}
