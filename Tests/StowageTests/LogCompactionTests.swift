import Foundation
import StowageTestSupport
import Testing

@_spi(Testing) @testable import Stowage

@Suite("LogStore automatic compaction")
struct LogCompactionTests {
    static func open(
        _ url: URL, policy: LogStoreConfiguration.AutomaticCompaction?, fileSystem: (any StoreFileSystem)? = nil
    ) throws -> LogStore {
        var configuration = LogTest.configuration(url, fileSystem: fileSystem)
        configuration.automaticCompaction = policy
        return try LogStore(configuration, migrationPlan: nil)
    }

    /// Inserts `count` trips, then rewrites each one's budget `rounds` times: the file then
    /// holds `count * (rounds + 1)` versions of which `count` are live.
    static func churn(_ store: LogStore, count: Int, rounds: Int) throws -> [PersistentIdentifier] {
        var ids: [PersistentIdentifier] = []
        for i in 0..<count {
            ids.append(try LogTest.insertTrip(store, "Trip \(i)", destination: String(repeating: "d", count: 60)))
        }
        for round in 1...rounds {
            for id in ids { try LogTest.updateBudget(store, id, Double(round)) }
        }
        return ids
    }

    @Test func deadBytesFollowTheShareOfDeadVersions() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let store = try Self.open(directory.storeURL, policy: nil)
        _ = try LogTest.insertTrip(store, "Only")
        #expect(store.deadBytes == 0)
        _ = try Self.churn(store, count: 10, rounds: 3)
        // 11 live records of 41 versions: 30/41 of the commit bytes (the file less its
        // header and header record, a few hundred bytes) count as dead.
        let share = Double(store.fileLength) * 30 / 41
        #expect(Double(store.deadBytes) > share * 0.8)
        #expect(Double(store.deadBytes) < share)
        try store.compact()
        #expect(store.deadBytes == 0)
        #expect(store.compactionCount == 1)
    }

    @Test func aSavePastTheThresholdCompactsInTheBackground() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let policy = LogStoreConfiguration.AutomaticCompaction(minimumDeadBytes: 2048, deadFraction: 0.6)
        let store = try Self.open(directory.storeURL, policy: policy)
        _ = try Self.churn(store, count: 20, rounds: 6)
        store.waitForAutomaticCompaction()
        #expect(store.compactionCount >= 1)
        #expect(store.lastAutomaticCompactionFailure == nil)
        // Whatever compactions ran, the dead share is back under the threshold.
        #expect(Double(store.deadBytes) < 0.6 * Double(store.fileLength) || store.deadBytes < 2048)
        let before = try LogTest.state(store)
        store.close()
        let reopened = try Self.open(directory.storeURL, policy: nil)
        #expect(try LogTest.state(reopened) == before)
        #expect(reopened.lastRecovery == nil)
        let budgets = Set(
            try reopened.allSnapshots(of: "Trip").map {
                $0.value(forKey: "budget", in: reopened.schema.entitiesByName["Trip"]!)
            })
        #expect(budgets == [.double(6)])
    }

    @Test func belowTheThresholdOrSwitchedOffNothingIsCompacted() throws {
        for policy: LogStoreConfiguration.AutomaticCompaction? in [
            nil, .init(minimumDeadBytes: 2048, deadFraction: 0.95), .init(minimumDeadBytes: 1 << 30, deadFraction: 0),
        ] {
            let directory = LogTestDirectory.fresh()
            defer { directory.remove() }
            let store = try Self.open(directory.storeURL, policy: policy)
            _ = try Self.churn(store, count: 20, rounds: 6)
            store.waitForAutomaticCompaction()
            #expect(store.compactionCount == 0)
            #expect(store.deadBytes > 2048)
        }
    }

    @Test(arguments: [FaultInjectingFileSystem.Operation.write, .sync, .rename])
    func aFailedAutomaticCompactionLeavesTheStoreAsItWas(_ operation: FaultInjectingFileSystem.Operation) throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let fileSystem = FaultInjectingFileSystem()
        let store = try Self.open(
            directory.storeURL, policy: .init(minimumDeadBytes: 1 << 30, deadFraction: 0.5), fileSystem: fileSystem)
        _ = try Self.churn(store, count: 10, rounds: 4)
        let length = store.fileLength
        store.close()
        // Reopened with a policy that is due at once, the first save schedules a compaction.
        // That save grows the file (a clean close left no reserved zeros): it makes write 1
        // (the zeros reserved after its record), write 2 (the record) and sync 1. The compaction's
        // first write is write 3, its sync is sync 2 and its rename is rename 1.
        let failing = try Self.open(
            directory.storeURL, policy: .init(minimumDeadBytes: 1, deadFraction: 0.1), fileSystem: fileSystem)
        fileSystem.arm(operation, failOn: [.rename: 1, .sync: 2, .write: 3][operation] ?? 1)
        _ = try LogTest.insertTrip(failing, "Trigger")
        failing.waitForAutomaticCompaction()
        fileSystem.disarm()
        #expect(failing.lastAutomaticCompactionFailure != nil)
        #expect(failing.compactionCount == 0)
        #expect(failing.fileLength > length)
        #expect(!FileManager.default.fileExists(atPath: directory.storeURL.path + ".compact"))
        // The store goes on saving, and reopens with everything.
        _ = try LogTest.insertTrip(failing, "After")
        let state = try LogTest.state(failing)
        failing.close()
        let reopened = try Self.open(directory.storeURL, policy: nil)
        #expect(try LogTest.state(reopened) == state)
        #expect(try LogTest.tripNames(reopened).contains("Trigger"))
        #expect(reopened.lastRecovery == nil)
    }

    /// Saves from several threads while automatic compactions keep switching the file
    /// under them: every save lands, each record ends with its last value, and the file
    /// reopens to the same state.
    @Test(arguments: [LogStoreConfiguration.Durability.full, .relaxed])
    func concurrentSavesAcrossAutomaticCompactions(_ durability: LogStoreConfiguration.Durability) async throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        var configuration = LogTest.configuration(directory.storeURL, durability: durability)
        configuration.automaticCompaction = .init(minimumDeadBytes: 4096, deadFraction: 0.3)
        let store = try LogStore(configuration, migrationPlan: nil)
        let workers = 4
        let rounds = 30
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<workers {
                group.addTask {
                    var ids: [PersistentIdentifier] = []
                    for i in 0..<5 {
                        ids.append(
                            try LogTest.insertTrip(
                                store, "w\(worker)-\(i)", destination: String(repeating: "x", count: 80)))
                    }
                    for round in 1...rounds {
                        for id in ids { try LogTest.updateBudget(store, id, Double(round)) }
                    }
                }
            }
            try await group.waitForAll()
        }
        store.waitForAutomaticCompaction()
        #expect(store.compactionCount > 0)
        #expect(store.lastAutomaticCompactionFailure == nil)
        let entity = store.schema.entitiesByName["Trip"]!
        let budgets = try store.allSnapshots(of: "Trip").map { $0.value(forKey: "budget", in: entity) }
        #expect(budgets.count == workers * 5)
        #expect(Set(budgets) == [.double(Double(rounds))])
        let state = try LogTest.state(store)
        store.close()
        let reopened = try LogStore(LogTest.configuration(directory.storeURL), migrationPlan: nil)
        #expect(try LogTest.state(reopened) == state)
        #expect(reopened.lastRecovery == nil)
    }
}
