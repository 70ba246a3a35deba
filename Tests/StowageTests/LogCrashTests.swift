import Foundation
@_spi(Testing) import Stowage
import StowageTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Real processes against the log store: SIGKILL at random moments, and a second process
/// that finds the store locked.
@Suite("LogStore crash safety", .serialized)
struct LogCrashTests {
    static let schema = Schema([CrashBatch.self])

    /// The child executable, built beside the test bundle.
    static var child: URL {
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        return executable.deletingLastPathComponent().appendingPathComponent("LogCrashChild")
    }

    static func run(_ arguments: [String], environment: [String: String]? = nil) throws -> String {
        let process = Process()
        process.executableURL = child
        process.arguments = arguments
        if let environment { process.environment = environment }
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: output, as: UTF8.self)
    }

    /// Starts the child with `arguments` and SIGKILLs it: one time in five at any moment up
    /// to `startUpMicroseconds` (start-up, open, replay or recovery), otherwise up to
    /// `savingMicroseconds` after it says "ready", while it saves. Returns the lines it
    /// printed and whether it was killed while saving.
    static func runAndKill(
        _ arguments: [String], startUpMicroseconds: UInt32, savingMicroseconds: UInt32 = 20_000,
        random: inout SeededRandom
    ) throws -> (lines: [Substring], whileSaving: Bool) {
        let process = Process()
        process.executableURL = child
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        var output = Data()
        let whileSaving = Int.random(in: 0..<5, using: &random) != 0
        if whileSaving {
            while !String(decoding: output, as: UTF8.self).contains("ready\n") {
                let chunk = pipe.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                output.append(chunk)
            }
            usleep(UInt32.random(in: 0...savingMicroseconds, using: &random))
        } else {
            usleep(UInt32.random(in: 0...startUpMicroseconds, using: &random))
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        output.append(pipe.fileHandleForReading.readDataToEndOfFile())
        return (String(decoding: output, as: UTF8.self).split(separator: "\n"), whileSaving)
    }

    /// Eight `@ModelActor` actors of one container, each with its own context and author,
    /// save at once when SIGKILL comes; after each of several rounds the store, reopened, holds
    /// every acknowledged save whole and no save in part, and its history (read with
    /// `fetchHistory`) holds one transaction per save: all of one batch's rows, by the
    /// worker that saved it, none twice, none missing.
    @Test func killNineWhileEightActorsSaveLeavesTheHistoryWhole() throws {
        var random = SeededRandom.fromEnvironment()
        let seed = random.seed
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        var acknowledged: Set<Int> = []
        var landedWhileSaving = 0
        // Five rounds, and more (up to ten) until a kill has landed while the actors saved.
        for round in 0..<10 {
            if round >= 5, landedWhileSaving > 0 { break }
            let (lines, whileSaving) = try Self.runAndKill(
                ["history", directory.storeURL.path, String(round)], startUpMicroseconds: 200_000,
                savingMicroseconds: 400_000, random: &random)
            #expect(!lines.contains { $0.hasPrefix("error") }, "seed \(seed), round \(round): \(lines)")
            let saved = lines.compactMap { Int($0) }
            if whileSaving, !saved.isEmpty { landedWhileSaving += 1 }
            acknowledged.formUnion(saved)
            let container = try ModelContainer(
                for: Self.schema, configurations: [LogStoreConfiguration(schema: Self.schema, url: directory.storeURL)])
            defer { (container.storesForTesting.first as? LogStore)?.close() }
            let context = ModelContext(container)
            var rowsOfBatch: [Int: Int] = [:]
            var batchOf: [PersistentIdentifier: Int] = [:]
            for row in try context.fetch(FetchDescriptor<CrashBatch>()) {
                rowsOfBatch[row.batch, default: 0] += 1
                batchOf[row.persistentModelID] = row.batch
            }
            let lost = acknowledged.filter { rowsOfBatch[$0] == nil }
            #expect(lost.isEmpty, "seed \(seed), round \(round): acknowledged batches lost: \(lost.sorted())")
            let partial = rowsOfBatch.filter { $0.value != CrashBatch.size(ofBatch: $0.key) }
            #expect(partial.isEmpty, "seed \(seed), round \(round): batches in part: \(partial)")
            var inHistory: Set<Int> = []
            for transaction in try context.fetchHistory(HistoryDescriptor<DefaultHistoryTransaction>()) {
                let batches = Set(
                    transaction.changes.map { change -> Int in
                        guard case .insert(let insert) = change else { return -1 }
                        return batchOf[insert.changedPersistentIdentifier] ?? -2
                    })
                guard batches.count == 1, let batch = batches.first, batch >= 0 else {
                    Issue.record("seed \(seed), round \(round): a transaction of \(batches.sorted()) batches")
                    continue
                }
                #expect(transaction.changes.count == CrashBatch.size(ofBatch: batch))
                #expect(transaction.author == "worker \(batch % 1_000_000 / 10_000)")
                // Saved by the child: its program, and a process that is not this one.
                #expect(transaction.bundleIdentifier == "LogCrashChild")
                #expect(
                    !transaction.processIdentifier.isEmpty
                        && transaction.processIdentifier != String(ProcessInfo.processInfo.processIdentifier))
                #expect(inHistory.insert(batch).inserted, "seed \(seed), round \(round): batch \(batch) twice")
            }
            #expect(inHistory == Set(rowsOfBatch.keys), "seed \(seed), round \(round)")
        }
        #expect(landedWhileSaving > 0, "seed \(seed): no kill landed while the actors saved")
    }

    @Test func theChildIsBuilt() {
        #expect(FileManager.default.isExecutableFile(atPath: Self.child.path), "missing \(Self.child.path)")
    }

    @Test func aSecondProcessGetsStoreLocked() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let store = try LogStore(
            LogStoreConfiguration(schema: Self.schema, url: directory.storeURL), migrationPlan: nil)
        let output = try Self.run(["lock", directory.storeURL.path])
        #expect(output.hasPrefix("storeLocked"), "\(output)")
        store.close()
        #expect(try Self.run(["lock", directory.storeURL.path]).hasPrefix("opened"))
    }

    /// Across processes, read-only openers share the lock and a writer excludes them.
    @Test func readOnlyProcessesShareTheStoreAndAWriterExcludesThem() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let path = directory.storeURL.path
        #expect(try Self.run(["read", path]).hasPrefix("ioFailure"))
        #expect(directoryContents(directory.url).isEmpty, "a read-only open created something")
        do {
            let container = try ModelContainer(
                for: Self.schema, configurations: [LogStoreConfiguration(schema: Self.schema, url: directory.storeURL)])
            let locked = try Self.run(["read", path])
            #expect(locked.hasPrefix("storeLocked") && locked.contains("open for writing"), "\(locked)")
            let context = ModelContext(container)
            for i in 0..<CrashBatch.size(ofBatch: 1) {
                context.insert(
                    CrashBatch(
                        batch: 1, index: i, payload: CrashBatch.payload(batch: 1, row: i),
                        blob: CrashBatch.blob(batch: 1, row: i)))
            }
            try context.save()
        }
        var configuration = LogStoreConfiguration(schema: Self.schema, url: directory.storeURL)
        configuration.allowsSave = false
        let reader = try LogStore(configuration, migrationPlan: nil)
        #expect(try Self.run(["read", path]) == "opened 1\n")
        #expect(try Self.run(["lock", path]).hasPrefix("storeLocked"))
        reader.close()
        #expect(try Self.run(["lock", path]).hasPrefix("opened"))
    }

    @Test func theDefaultContainerLivesUnderXDGDataHome() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        var environment = ProcessInfo.processInfo.environment
        environment["XDG_DATA_HOME"] = directory.url.path
        let output = try Self.run(["default"], environment: environment)
        let expected = directory.url.appendingPathComponent("default.store")
        #expect(output == "saved \(expected.path)\n")
        let store = try LogStore(LogStoreConfiguration(schema: Self.schema, url: expected), migrationPlan: nil)
        #expect(store.recordCount == CrashBatch.size(ofBatch: 1))
    }

    @Test func killNineNeverLosesAnAcknowledgedBatchNorLeavesHalfOne() throws {
        let soak = ProcessInfo.processInfo.environment["STOWAGE_SOAK"] == "1"
        let rounds = soak ? 2000 : 200
        var random = SeededRandom.fromEnvironment()
        let seed = random.seed
        var directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        var acknowledged: Set<Int> = []
        var killedWhileSaving = 0
        var fromCheckpoint = 0
        for round in 0..<rounds {
            if round % 40 == 39 {
                directory.remove()
                directory = LogTestDirectory.fresh()
                acknowledged = []
            }
            // Every other store of 40 rounds writes each commit in pieces, its frame last
            // (a chunk of 1 byte spills after every block), so kills land between them.
            let pieces = (round / 40) % 2 == 1
            let (lines, whileSaving) = try Self.runAndKill(
                ["save", directory.storeURL.path] + (pieces ? ["1"] : []), startUpMicroseconds: 60_000,
                random: &random)
            if whileSaving { killedWhileSaving += 1 }
            let failures = lines.filter { $0.hasPrefix("error") }
            #expect(failures.isEmpty, "seed \(seed), round \(round): \(failures)")
            acknowledged.formUnion(lines.compactMap { Int($0) })

            // This open's close checkpoints whatever the child saved, so that the next round
            // kills a child on a file with a checkpoint in it even when a loaded machine
            // lets the child save too little to write its own (every third batch).
            var configuration = LogStoreConfiguration(url: directory.storeURL)
            configuration.checkpoints = .init(minimumCommitBytes: 0)
            let container = try ModelContainer(for: Self.schema, configurations: [configuration])
            let store = try #require(container.storesForTesting.first as? LogStore)
            if store.openedFromCheckpoint { fromCheckpoint += 1 }
            let entity = Self.schema.entitiesByName["CrashBatch"]!
            var rows: [Int: Int] = [:]
            var badBlobs: [String] = []
            var nonEmptyBlobs = 0
            for snapshot in try store.allSnapshots(of: "CrashBatch") {
                if case .int(let batch)? = snapshot.value(forKey: "batch", in: entity),
                    case .int(let index)? = snapshot.value(forKey: "index", in: entity)
                {
                    rows[Int(batch), default: 0] += 1
                    let expected = CrashBatch.blob(batch: Int(batch), row: Int(index))
                    if snapshot.value(forKey: "blob", in: entity) != .data(expected) {
                        badBlobs.append("\(batch)/\(index)")
                    }
                    if !expected.isEmpty { nonEmptyBlobs += 1 }
                }
            }
            // The batch index (loaded from a checkpoint when the file ends with one) finds
            // exactly the rows a scan finds.
            let context = ModelContext(container)
            for batch in rows.keys.sorted() {
                let count = try context.fetchCount(
                    FetchDescriptor<CrashBatch>(predicate: #Predicate { $0.batch == batch }))
                #expect(count == rows[batch], "seed \(seed), round \(round): batch \(batch) by index")
            }
            store.close()
            // Every external value came back whole, and opening removed the files of saves
            // that were killed before their commit.
            let files = (try? FileManager.default.contentsOfDirectory(atPath: directory.storeURL.path + ".blobs")) ?? []
            #expect(badBlobs.isEmpty, "seed \(seed), round \(round): wrong external values: \(badBlobs.prefix(5))")
            #expect(
                files.count == nonEmptyBlobs,
                "seed \(seed), round \(round): \(files.count) files, \(nonEmptyBlobs) values")
            let missing = acknowledged.filter { rows[$0] == nil }
            let partial = rows.filter { $0.value != CrashBatch.size(ofBatch: $0.key) }
            #expect(missing.isEmpty, "seed \(seed), round \(round): acknowledged batches missing: \(missing.sorted())")
            #expect(partial.isEmpty, "seed \(seed), round \(round): partial batches: \(partial)")
            if !missing.isEmpty || !partial.isEmpty { return }
        }
        #expect(killedWhileSaving > rounds / 2)
        // Kills land after a checkpoint often enough that reopening loads one.
        #expect(fromCheckpoint > rounds / 20, "opened from a checkpoint \(fromCheckpoint) times")
    }
}
