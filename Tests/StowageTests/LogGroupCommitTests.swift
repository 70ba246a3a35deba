import Foundation
import StowageTestSupport
import Synchronization
import Testing

@_spi(Testing) @testable import Stowage

/// Runs `body(i)` on `count` threads of their own and waits for all of them.
private func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let group = DispatchGroup()
    for i in 0..<count {
        group.enter()
        Thread.detachNewThread {
            body(i)
            group.leave()
        }
    }
    group.wait()
}

/// Polls `condition` every millisecond for up to five seconds.
private func eventually(_ condition: () -> Bool) -> Bool {
    for _ in 0..<5000 {
        if condition() { return true }
        usleep(1000)
    }
    return condition()
}

@Suite("LogStore group commit")
struct LogGroupCommitTests {
    /// Threads saving at once share syncs, and every acknowledged save is there after reopening.
    @Test func concurrentSavesShareSyncs() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let fs = FaultInjectingFileSystem()
        let store = try LogTest.open(directory.storeURL, fileSystem: fs)
        // A sync as slow as a real disk's gives the other threads time to append behind it.
        fs.setBeforeSync { _ in usleep(2000) }
        let threads = 4
        let savesPerThread = 25
        let failures = PosixMutex<[String]>([])
        onThreads(threads) { t in
            for i in 0..<savesPerThread {
                do {
                    let id = try LogTest.insertTrip(store, "T\(t)-\(i)")
                    if i % 5 == 4 { try LogTest.updateBudget(store, id, Double(1000 + i)) }
                } catch {
                    failures.withLock { $0.append("\(t)-\(i): \(error)") }
                }
            }
        }
        #expect(failures.withLock { $0 } == [])
        let saves = threads * savesPerThread * 6 / 5
        let syncs = store.commitSyncCount
        #expect(syncs == fs.calls(.sync))
        #expect(syncs < saves, "\(syncs) syncs for \(saves) saves")
        #expect(syncs > 0)
        let expected = (0..<threads).flatMap { t in (0..<savesPerThread).map { "T\(t)-\($0)" } }.sorted()
        #expect(try LogTest.tripNames(store) == expected)
        store.close()
        let reopened = try LogTest.open(directory.storeURL, recovery: .strict)
        #expect(try LogTest.tripNames(reopened) == expected)
        #expect(try LogTest.state(reopened) == LogTest.state(store))
    }

    /// One sync covering three saves fails: all three throw, none stays in memory or on
    /// disk, the save before them stands, and the store refuses further saves.
    @Test func aFailedSharedSyncFailsEverySaveItCovered() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let fs = FaultInjectingFileSystem()
        let store = try LogTest.open(directory.storeURL, fileSystem: fs)
        try LogTest.insertTrip(store, "before")
        // Hold the first sync until three more saves have appended behind it; fail the second.
        let release = DispatchSemaphore(value: 0)
        fs.setBeforeSync { number in
            if number == 1 { _ = release.wait(timeout: .now() + 5) }
        }
        fs.arm(.sync, failOn: 2)
        let outcomes = PosixMutex<[String: String]>([:])
        let first = Thread {
            do {
                try LogTest.insertTrip(store, "A")
                outcomes.withLock { $0["A"] = "ok" }
            } catch {
                outcomes.withLock { $0["A"] = "\(error)" }
            }
        }
        first.start()
        #expect(eventually { store.recordCount == 2 })
        let group = DispatchGroup()
        for name in ["B", "C", "D"] {
            group.enter()
            Thread.detachNewThread {
                do {
                    try LogTest.insertTrip(store, name)
                    outcomes.withLock { $0[name] = "ok" }
                } catch let error as DataStoreError {
                    outcomes.withLock { $0[name] = "\(error.code)" }
                } catch {
                    outcomes.withLock { $0[name] = "\(error)" }
                }
                group.leave()
            }
        }
        // All three are written and waiting for the sync in flight.
        #expect(eventually { store.recordCount == 5 })
        release.signal()
        group.wait()
        #expect(eventually { outcomes.withLock { $0.count } == 4 })
        let results = outcomes.withLock { $0 }
        #expect(results["A"] == "ok")
        for name in ["B", "C", "D"] { #expect(results[name] == "\(DataStoreError.Code.ioFailure)", "\(name)") }
        #expect(store.commitSyncCount == 3)  // "before", A's, and the failed one for B, C and D
        #expect(try LogTest.tripNames(store) == ["A", "before"])
        #expect(throws: DataStoreError.storeUnusable) { try LogTest.insertTrip(store, "E") }
        store.close()
        let reopened = try LogTest.open(directory.storeURL, recovery: .strict)
        #expect(try LogTest.tripNames(reopened) == ["A", "before"])
        try LogTest.insertTrip(reopened, "F")
        #expect(try LogTest.tripNames(reopened) == ["A", "F", "before"])
    }
}
