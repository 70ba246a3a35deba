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

    /// What a child did before `runAndKill` killed it.
    struct KilledChild {
        /// Every line it printed.
        var lines: [Substring]
        /// The batches it acknowledged: a number alone on a line, printed once the save returned.
        var acknowledged: [Int]
        /// The batches it had said it was saving ("saving N"), acknowledged or not.
        var started: Set<Int>
        /// The batches it had said it was saving and had not acknowledged when it died.
        var inFlight: Set<Int> { started.subtracting(acknowledged) }
        /// Whether the kill landed while a save was under way, by the child's own account.
        var killedMidSave: Bool { !inFlight.isEmpty }
    }

    /// The child did not say "ready" in time; it was killed.
    struct ChildTimedOut: Error, CustomStringConvertible {
        let description: String
    }

    /// How long a child may take to say "ready" (and acknowledge the saves asked for)
    /// before the test gives up on it.
    static let readyTimeoutSeconds = 60

    /// Starts the child with `arguments` and SIGKILLs it: one time in five at any moment up
    /// to `startUpMicroseconds` (start-up, open, replay or recovery), otherwise up to
    /// `savingMicroseconds` after it says "ready" and has acknowledged a number of saves
    /// drawn from `acknowledgedBeforeKill`, while it saves. Expects it to have died of that
    /// SIGKILL (not of an exit or a crash of its own), and returns what it printed.
    /// - Throws: `ChildTimedOut` (after killing it) when it has not said "ready" and
    ///   acknowledged those saves within `readyTimeoutSeconds`.
    static func runAndKill(
        _ arguments: [String], startUpMicroseconds: UInt32, savingMicroseconds: UInt32 = 20_000,
        acknowledgedBeforeKill: ClosedRange<Int> = 0...0, random: inout SeededRandom, context: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> KilledChild {
        let process = Process()
        process.executableURL = child
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        var output = Data()
        let aimWhileSaving = Int.random(in: 0..<5, using: &random) != 0
        if aimWhileSaving {
            let acknowledgements = Int.random(in: acknowledgedBeforeKill, using: &random)
            // Whether the child has said "ready" and acknowledged that many saves, by its whole lines.
            func waitedEnough() -> Bool {
                var lines = String(decoding: output, as: UTF8.self).split(
                    separator: "\n", omittingEmptySubsequences: false)
                lines.removeLast()  // what follows the last newline: nothing, or a line not yet whole
                guard let ready = lines.firstIndex(of: "ready") else { return false }
                return lines[ready...].filter { Int($0) != nil }.count >= acknowledgements
            }
            let fd = pipe.fileHandleForReading.fileDescriptor
            let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(readyTimeoutSeconds) * 1_000_000_000
            var ended = false
            while !ended, !waitedEnough() {
                let now = DispatchTime.now().uptimeNanoseconds
                guard now < deadline else {
                    kill(process.processIdentifier, SIGKILL)
                    process.waitUntilExit()
                    output.append(pipe.fileHandleForReading.readDataToEndOfFile())
                    throw ChildTimedOut(
                        description: "\(context): the child \(arguments) did not say \"ready\" and acknowledge "
                            + "\(acknowledgements) saves within \(readyTimeoutSeconds) s and was killed; it printed: "
                            + "\(String(decoding: output, as: UTF8.self).debugDescription)")
                }
                var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                let waitMilliseconds = Int32(min((deadline - now) / 1_000_000 + 1, 1000))
                guard poll(&descriptor, 1, waitMilliseconds) > 0 else { continue }
                let chunk = pipe.fileHandleForReading.availableData
                if chunk.isEmpty { ended = true }  // it closed its output: it has exited
                output.append(chunk)
            }
            usleep(UInt32.random(in: 0...savingMicroseconds, using: &random))
        } else {
            usleep(UInt32.random(in: 0...startUpMicroseconds, using: &random))
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        output.append(pipe.fileHandleForReading.readDataToEndOfFile())
        let lines = String(decoding: output, as: UTF8.self).split(separator: "\n")
        #expect(
            process.terminationReason == .uncaughtSignal && process.terminationStatus == SIGKILL,
            """
            \(context): the child did not die of the SIGKILL: \(process.terminationReason == .exit ? "exit" : "signal") \
            \(process.terminationStatus), output \(lines.suffix(5))
            """, sourceLocation: sourceLocation)
        return KilledChild(
            lines: lines, acknowledged: lines.compactMap { Int($0) },
            started: Set(lines.compactMap { $0.hasPrefix("saving ") ? Int($0.dropFirst(7)) : nil }))
    }

    /// What is wrong with the values of one `CrashBatch` row, by the rules the child
    /// saves them with (`CrashBatch.payload`, `.blob`, or empty bytes when the child saved
    /// without external ones), or `nil` when they are right.
    static func wrongValues(batch: Int, index: Int, payload: SnapshotValue?, blob: SnapshotValue?, withBlobs: Bool)
        -> String?
    {
        var wrong: [String] = []
        if !(0..<CrashBatch.size(ofBatch: batch)).contains(index) { wrong.append("index out of the batch") }
        if payload != .string(CrashBatch.payload(batch: batch, row: index)) { wrong.append("payload") }
        if blob != .data(withBlobs ? CrashBatch.blob(batch: batch, row: index) : Data()) { wrong.append("blob") }
        return wrong.isEmpty ? nil : "\(batch)/\(index): \(wrong.joined(separator: ", "))"
    }

    /// The rows of each batch in `records` (batch, index and what is wrong with the rest),
    /// and every wrong value found, a row saved twice in a batch included.
    static func batches(_ records: [(batch: Int, index: Int, wrong: String?)]) -> (rows: [Int: Int], wrong: [String]) {
        var rows: [Int: Int] = [:]
        var seen: Set<[Int]> = []
        var wrong: [String] = []
        for record in records {
            rows[record.batch, default: 0] += 1
            if let problem = record.wrong { wrong.append(problem) }
            if !seen.insert([record.batch, record.index]).inserted {
                wrong.append("\(record.batch)/\(record.index): twice")
            }
        }
        return (rows, wrong)
    }

    /// `batches(_:)` of every `CrashBatch` record of `store`.
    static func batches(in store: some SnapshotTableStore, withBlobs: Bool) throws -> (
        rows: [Int: Int], wrong: [String]
    ) {
        let entity = schema.entitiesByName["CrashBatch"]!
        return batches(
            try store.allSnapshots(of: "CrashBatch").map { snapshot -> (batch: Int, index: Int, wrong: String?) in
                guard case .int(let batch)? = snapshot.value(forKey: "batch", in: entity),
                    case .int(let index)? = snapshot.value(forKey: "index", in: entity)
                else { return (-1, -1, "a record without its batch and index: \(snapshot.values)") }
                return (
                    Int(batch), Int(index),
                    wrongValues(
                        batch: Int(batch), index: Int(index), payload: snapshot.value(forKey: "payload", in: entity),
                        blob: snapshot.value(forKey: "blob", in: entity), withBlobs: withBlobs)
                )
            })
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
        var started: Set<Int> = []
        var landedWhileSaving = 0
        // Five rounds, and more (up to ten) until a kill has landed while the actors saved:
        // after acknowledged saves, with a save the child had begun and not acknowledged.
        for round in 0..<10 {
            if round >= 5, landedWhileSaving > 0 { break }
            let killed = try Self.runAndKill(
                ["history", directory.storeURL.path, String(round)], startUpMicroseconds: 200_000,
                savingMicroseconds: 400_000, random: &random, context: "seed \(seed), round \(round)")
            let lines = killed.lines
            #expect(!lines.contains { $0.hasPrefix("error") }, "seed \(seed), round \(round): \(lines)")
            if killed.killedMidSave, !killed.acknowledged.isEmpty { landedWhileSaving += 1 }
            acknowledged.formUnion(killed.acknowledged)
            started.formUnion(killed.started)
            let container = try ModelContainer(
                for: Self.schema, configurations: [LogStoreConfiguration(schema: Self.schema, url: directory.storeURL)])
            defer { (container.storesForTesting.first as? LogStore)?.close() }
            let context = ModelContext(container)
            var batchOf: [PersistentIdentifier: Int] = [:]
            var records: [(batch: Int, index: Int, wrong: String?)] = []
            for row in try context.fetch(FetchDescriptor<CrashBatch>()) {
                batchOf[row.persistentModelID] = row.batch
                records.append(
                    (
                        row.batch, row.index,
                        Self.wrongValues(
                            batch: row.batch, index: row.index, payload: .string(row.payload), blob: .data(row.blob),
                            withBlobs: false)
                    ))
            }
            let (rowsOfBatch, wrong) = Self.batches(records)
            #expect(wrong.isEmpty, "seed \(seed), round \(round): wrong values: \(wrong.prefix(5))")
            let lost = acknowledged.filter { rowsOfBatch[$0] == nil }
            #expect(lost.isEmpty, "seed \(seed), round \(round): acknowledged batches lost: \(lost.sorted())")
            let partial = rowsOfBatch.filter { $0.value != CrashBatch.size(ofBatch: $0.key) }
            #expect(partial.isEmpty, "seed \(seed), round \(round): batches in part: \(partial)")
            let neverSaved = Set(rowsOfBatch.keys).subtracting(started)
            #expect(neverSaved.isEmpty, "seed \(seed), round \(round): batches no child saved: \(neverSaved.sorted())")
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

    /// 200 rounds of a child that saves batches (with external values) and checkpoints,
    /// SIGKILLed at random moments, every other store of 40 rounds with commits written in
    /// pieces: after each round, every acknowledged batch is there, whole, with the values
    /// the child saved; no batch is there in part, or that no child began to save; every
    /// external file is a live value's. Over the run, more than a quarter of the kills land
    /// while the child said it was saving (about 70% on an idle machine, 40% under a full
    /// parallel test run, when the child's inserts and checkpoints between saves take
    /// longer), the children acknowledge more than a quarter of a save a round (half the
    /// kills aimed at the saves wait for an acknowledgement), and reopening loads a
    /// checkpoint now and then.
    @Test func killNineNeverLosesAnAcknowledgedBatchNorLeavesHalfOne() throws {
        let soak = ProcessInfo.processInfo.environment["STOWAGE_SOAK"] == "1"
        let rounds = soak ? 2000 : 200
        var random = SeededRandom.fromEnvironment()
        let seed = random.seed
        var directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        var acknowledged: Set<Int> = []
        var started: Set<Int> = []
        var killedMidSave = 0
        var totalAcknowledged = 0
        var fromCheckpoint = 0
        for round in 0..<rounds {
            if round % 40 == 39 {
                directory.remove()
                directory = LogTestDirectory.fresh()
                acknowledged = []
                started = []
            }
            // Every other store of 40 rounds writes each commit in pieces, its frame last
            // (a chunk of 1 byte spills after every block), so kills land between them.
            let pieces = (round / 40) % 2 == 1
            // Half the kills aimed at the saves come after an acknowledged one, so that the
            // run acknowledges saves however slow the machine's syncs make them (a save
            // syncs each external file, the directory and the log: tens of milliseconds).
            let killed = try Self.runAndKill(
                ["save", directory.storeURL.path] + (pieces ? ["1"] : []), startUpMicroseconds: 60_000,
                acknowledgedBeforeKill: 0...1, random: &random, context: "seed \(seed), round \(round)")
            if killed.killedMidSave { killedMidSave += 1 }
            let failures = killed.lines.filter { $0.hasPrefix("error") }
            #expect(failures.isEmpty, "seed \(seed), round \(round): \(failures)")
            totalAcknowledged += killed.acknowledged.count
            acknowledged.formUnion(killed.acknowledged)
            started.formUnion(killed.started)

            // This open's close checkpoints whatever the child saved, so that the next round
            // kills a child on a file with a checkpoint in it even when a loaded machine
            // lets the child save too little to write its own (every third batch).
            var configuration = LogStoreConfiguration(url: directory.storeURL)
            configuration.checkpoints = .init(minimumCommitBytes: 0)
            let container = try ModelContainer(for: Self.schema, configurations: [configuration])
            let store = try #require(container.storesForTesting.first as? LogStore)
            if store.openedFromCheckpoint { fromCheckpoint += 1 }
            let (rows, wrong) = try Self.batches(in: store, withBlobs: true)
            let entity = Self.schema.entitiesByName["CrashBatch"]!
            var nonEmptyBlobs = 0
            for snapshot in try store.allSnapshots(of: "CrashBatch") {
                if case .data(let blob)? = snapshot.value(forKey: "blob", in: entity), !blob.isEmpty {
                    nonEmptyBlobs += 1
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
            // Every value came back as the child saved it, external ones whole, and opening
            // removed the files of saves that were killed before their commit.
            let files = (try? FileManager.default.contentsOfDirectory(atPath: directory.storeURL.path + ".blobs")) ?? []
            #expect(wrong.isEmpty, "seed \(seed), round \(round): wrong values: \(wrong.prefix(5))")
            #expect(
                files.count == nonEmptyBlobs,
                "seed \(seed), round \(round): \(files.count) files, \(nonEmptyBlobs) values")
            let missing = acknowledged.filter { rows[$0] == nil }
            let partial = rows.filter { $0.value != CrashBatch.size(ofBatch: $0.key) }
            let neverSaved = Set(rows.keys).subtracting(started)
            #expect(missing.isEmpty, "seed \(seed), round \(round): acknowledged batches missing: \(missing.sorted())")
            #expect(partial.isEmpty, "seed \(seed), round \(round): partial batches: \(partial)")
            #expect(neverSaved.isEmpty, "seed \(seed), round \(round): batches no child saved: \(neverSaved.sorted())")
            if !missing.isEmpty || !partial.isEmpty || !wrong.isEmpty || !neverSaved.isEmpty { return }
        }
        #expect(killedMidSave > rounds / 4, "seed \(seed): \(killedMidSave) of \(rounds) kills landed mid-save")
        #expect(totalAcknowledged > rounds / 4, "seed \(seed): only \(totalAcknowledged) saves were acknowledged")
        // Kills land after a checkpoint often enough that reopening loads one.
        #expect(fromCheckpoint > rounds / 20, "opened from a checkpoint \(fromCheckpoint) times")
    }
}
