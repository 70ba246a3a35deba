import Foundation
import StowageTestSupport
import Testing

@_spi(Testing) @testable import Stowage

/// A unique value and an indexed one, for the undo of a save whose sync failed.
@Model final class Ledger {
    @Attribute(.unique) var code: String
    var amount: Int
    #Index<Ledger>([\.amount])

    init(code: String, amount: Int) {
        self.code = code
        self.amount = amount
    }
}

@Suite("LogStore under injected I/O faults")
struct LogFaultTests {
    /// Fails the Nth write or sync over a run of saves, for every N. Each save either
    /// completes or throws with nothing applied; reopening shows exactly the acknowledged
    /// saves; after a failed sync every save throws storeUnusable.
    @Test(arguments: [FaultInjectingFileSystem.Operation.write, .sync])
    func aFailedWriteOrSyncDuringSaves(operation: FaultInjectingFileSystem.Operation) throws {
        let saves = 8
        // The number of calls the saves make: a save that grows the file writes its record
        // and then the reserved zeros after it, so there are more writes than saves.
        let calls = try Self.callsOfSaves(saves, operation)
        #expect(calls >= saves)
        for n in 1...(calls + 1) {
            // A failed write whose truncate also fails leaves a torn record that reopening cuts.
            for alsoFailTruncate in operation == .write ? [false, true] : [false] {
                let directory = LogTestDirectory.fresh()
                defer { directory.remove() }
                let fs = FaultInjectingFileSystem()
                let store = try LogTest.open(directory.storeURL, fileSystem: fs)
                fs.arm(operation, failOn: n)
                if alsoFailTruncate { fs.arm(.truncate, failOn: 1) }
                var acknowledged: [String] = []
                var failed = false
                for i in 0..<saves {
                    let name = Self.saveName(i)
                    do {
                        try LogTest.insertTrip(store, name)
                        acknowledged.append(name)
                    } catch let error as DataStoreError {
                        let firstFailure = !failed
                        failed = true
                        let stuck = operation == .sync || alsoFailTruncate
                        if firstFailure {
                            #expect(error.code == .ioFailure, "n \(n): \(error)")
                        } else {
                            #expect(stuck && error.code == .storeUnusable, "n \(n): \(error)")
                        }
                    }
                    #expect(try LogTest.tripNames(store) == acknowledged.sorted(), "n \(n), save \(i)")
                }
                #expect(failed == (n <= calls), "n \(n)")
                store.close()
                let reopened = try LogTest.open(directory.storeURL, recovery: alsoFailTruncate ? .pointInTime : .strict)
                #expect(
                    try LogTest.tripNames(reopened) == acknowledged.sorted(),
                    "n \(n), truncate fails: \(alsoFailTruncate)")
            }
        }
    }

    static func saveName(_ i: Int) -> String { "S\(i)" + String(repeating: ".", count: i * 20) }

    /// How many times `saves` saves (the ones the test above makes) call `operation`.
    static func callsOfSaves(_ saves: Int, _ operation: FaultInjectingFileSystem.Operation) throws -> Int {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let fs = FaultInjectingFileSystem()
        let store = try LogTest.open(directory.storeURL, fileSystem: fs)
        let before = fs.calls(operation)
        for i in 0..<saves { _ = try LogTest.insertTrip(store, saveName(i)) }
        let calls = fs.calls(operation) - before
        store.close()
        return calls
    }

    /// The error a failed save throws says what the store was doing and, in the same line,
    /// what the system said: on a full disk, "No space left on device".
    @Test(arguments: [FaultInjectingFileSystem.Operation.write, .sync])
    func aFailedSaveSaysWhatFailedAndWhy(operation: FaultInjectingFileSystem.Operation) throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let fs = FaultInjectingFileSystem()
        let store = try LogTest.open(directory.storeURL, fileSystem: fs)
        fs.arm(operation, failOn: 1)
        do {
            try LogTest.insertTrip(store, "A")
            Issue.record("the save should have failed")
        } catch let error as DataStoreError {
            let text = String(describing: error)
            #expect(text.contains("injected \(operation.rawValue) failure"), "\(text)")
            #expect(text.hasPrefix("DataStoreError.ioFailure: "), "\(text)")
        }
    }

    @Test(arguments: [FaultInjectingFileSystem.Operation.write, .sync, .rename, .syncDirectory])
    func aFailureWhileCreatingLeavesNoStoreOrAWholeOne(operation: FaultInjectingFileSystem.Operation) throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let fs = FaultInjectingFileSystem()
        fs.arm(operation, failOn: 1)
        #expect(throws: DataStoreError.ioFailure) { _ = try LogTest.open(directory.storeURL, fileSystem: fs) }
        let exists = FileManager.default.fileExists(atPath: directory.storeURL.path)
        #expect(exists == (operation == .syncDirectory))
        let store = try LogTest.open(directory.storeURL, recovery: .strict)
        try LogTest.insertTrip(store, "A")
        #expect(!FileManager.default.fileExists(atPath: directory.storeURL.path + ".compact"))
    }

    @Test(arguments: [FaultInjectingFileSystem.Operation.truncate, .sync])
    func aFailureWhileRecoveringRefusesToOpenAndRecoversLater(operation: FaultInjectingFileSystem.Operation) throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let fixture = try LogFixture.make(in: directory)
        let url = directory.storeURL
        try Data(fixture.bytes.dropLast(5)).write(to: url)
        let fs = FaultInjectingFileSystem()
        fs.arm(operation, failOn: 1)
        #expect(throws: DataStoreError.ioFailure) { _ = try LogTest.open(url, fileSystem: fs) }
        let store = try LogTest.open(url)
        #expect(try LogTest.state(store) == fixture.states[fixture.states.count - 2])
    }

    /// Fails the Nth call of `operation` that a compaction makes, for every N up to the
    /// number of calls an unfailed compaction makes (counted first, on the same store):
    /// each case must inject its failure and make `compact()` throw, and the store keeps its
    /// records; a failed directory sync leaves it refusing saves, any other failure lets it
    /// save again; reopened, it holds the records whole and no `.compact` file is left.
    @Test(arguments: [FaultInjectingFileSystem.Operation.write, .sync, .rename, .syncDirectory])
    func aFailureDuringCompactionLeavesOldOrNew(operation: FaultInjectingFileSystem.Operation) throws {
        let calls = try Self.callsOfCompaction(operation)
        try #require(calls >= 1, "a compaction makes no \(operation) call")
        for n in 1...calls {
            let directory = LogTestDirectory.fresh()
            defer { directory.remove() }
            let fs = FaultInjectingFileSystem()
            let store = try Self.storeToCompact(directory, fs)
            let before = try LogTest.state(store)
            fs.arm(operation, failOn: n)
            var threw = false
            do { try store.compact() } catch let error as DataStoreError {
                threw = true
                #expect(error.code == .ioFailure, "\(operation) \(n): \(error)")
            }
            fs.disarm()
            #expect(fs.injected == [operation], "\(operation) \(n) of \(calls): the failure was not injected")
            #expect(threw, "\(operation) \(n) of \(calls): compact() did not throw")
            #expect(try LogTest.state(store) == before)
            var expectedNames = before["Trip"]!.count
            if threw && operation == .syncDirectory {
                #expect(throws: DataStoreError.storeUnusable) { try LogTest.insertTrip(store, "Refused") }
            } else {
                try LogTest.insertTrip(store, "After")
                expectedNames += 1
            }
            store.close()
            let reopened = try LogTest.open(directory.storeURL, recovery: .strict)
            #expect(try reopened.allSnapshots(of: "Trip").count == expectedNames, "\(operation) \(n)")
            #expect(try Array(reopened.allSnapshots(of: "Trip").prefix(before["Trip"]!.count)) == before["Trip"]!)
            #expect(!FileManager.default.fileExists(atPath: directory.storeURL.path + ".compact"))
        }
    }

    /// The store the compaction test compacts: twelve trips saved, six of them deleted.
    static func storeToCompact(_ directory: LogTestDirectory, _ fs: FaultInjectingFileSystem) throws -> LogStore {
        let store = try LogTest.open(directory.storeURL, fileSystem: fs)
        var ids: [PersistentIdentifier] = []
        for i in 0..<12 {
            ids.append(try LogTest.insertTrip(store, "T\(i)", destination: String(repeating: "x", count: 30)))
        }
        for id in ids.prefix(6) { try LogTest.deleteTrip(store, id) }
        return store
    }

    /// How many times an unfailed compaction of that store calls `operation`.
    static func callsOfCompaction(_ operation: FaultInjectingFileSystem.Operation) throws -> Int {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let fs = FaultInjectingFileSystem()
        let store = try storeToCompact(directory, fs)
        defer { store.close() }
        let before = fs.calls(operation)
        try store.compact()
        return fs.calls(operation) - before
    }

    /// A save whose sync fails is taken back out of the table whole: its update (of a
    /// unique and an indexed value), its delete and its insert are undone, in the records
    /// and in both indexes, and a reopened store shows the same.
    @Test func aFailedSyncUndoesUpdatesDeletesAndInsertsInTheIndexesToo() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let schema = Schema([Ledger.self])
        let fs = FaultInjectingFileSystem()
        let container = try ModelContainer(
            for: schema, configurations: [LogTest.configuration(directory.storeURL, schema: schema, fileSystem: fs)])
        let writer = ModelContext(container)
        for (code, amount) in [("A", 1), ("B", 2), ("C", 3)] { writer.insert(Ledger(code: code, amount: amount)) }
        try writer.save()

        func check(_ context: ModelContext) throws {
            let all = try context.fetch(FetchDescriptor<Ledger>(sortBy: [SortDescriptor(\.code)]))
            #expect(all.map(\.code) == ["A", "B", "C"])
            #expect(all.map(\.amount) == [1, 2, 3])
            for (code, count) in [("A", 1), ("A2", 0), ("B", 1), ("D", 0)] {
                #expect(
                    try context.fetchCount(FetchDescriptor<Ledger>(predicate: #Predicate { $0.code == code })) == count)
            }
            for (amount, count) in [(1, 1), (10, 0), (2, 1), (4, 0)] {
                #expect(
                    try context.fetchCount(FetchDescriptor<Ledger>(predicate: #Predicate { $0.amount == amount }))
                        == count)
            }
        }

        let changer = ModelContext(container)
        let ledgers = try changer.fetch(FetchDescriptor<Ledger>(sortBy: [SortDescriptor(\.code)]))
        ledgers[0].code = "A2"
        ledgers[0].amount = 10
        changer.delete(ledgers[1])
        changer.insert(Ledger(code: "D", amount: 4))
        fs.arm(.sync, failOn: 1)
        #expect(throws: DataStoreError.self) { try changer.save() }
        try check(ModelContext(container))

        let store = try #require(container.storesForTesting.first as? LogStore)
        store.close()
        let reopened = try ModelContainer(
            for: schema, configurations: [LogTest.configuration(directory.storeURL, schema: schema)])
        try check(ModelContext(reopened))
    }
}
