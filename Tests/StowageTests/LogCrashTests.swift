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

    /// What one kill -9 soak did, for its closing checks and the figures it prints.
    struct SoakFigures: CustomStringConvertible {
        var rounds = 0
        var killedMidSave = 0
        var acknowledged = 0
        var started = 0
        /// Compactions the reopened files went through (their generations), and the kills
        /// that landed while one was writing its new file (its `.compact` file was there).
        var compactions = 0
        var killedMidCompaction = 0
        var checkpoints = 0
        var killedMidCheckpoint = 0
        var openedFromCheckpoint = 0
        var seconds = 0.0

        /// Counts a killed round: its kill, and the saves it acknowledged and began, raising
        /// each worker's last acknowledged and last begun save. Returns the lines where the
        /// child said a save failed.
        mutating func count(
            _ killed: KilledChild, plan: SoakPlan, acknowledged: inout [Int], started: inout [Int]
        ) -> [Substring] {
            rounds += 1
            if killed.killedMidSave { killedMidSave += 1 }
            self.acknowledged += killed.acknowledged.count
            self.started += killed.started.count
            for batch in killed.acknowledged {
                let w = plan.worker(ofBatch: batch)
                acknowledged[w] = max(acknowledged[w], plan.save(ofBatch: batch))
            }
            for batch in killed.started {
                let w = plan.worker(ofBatch: batch)
                started[w] = max(started[w], plan.save(ofBatch: batch))
            }
            return killed.lines.filter { $0.hasPrefix("error") }
        }

        var description: String {
            "\(rounds) rounds, \(killedMidSave) kills mid-save, \(acknowledged) saves acknowledged of \(started) begun, "
                + "\(compactions) compactions (\(killedMidCompaction) kills mid-compaction), \(checkpoints) checkpoints "
                + "(\(killedMidCheckpoint) kills mid-checkpoint), \(openedFromCheckpoint) opens from a checkpoint, "
                + String(format: "%.1f s", seconds)
        }
    }

    /// Rounds of a child whose two `@ModelActor` workers save `SoakPlan` batches at once (sizes
    /// drawn from the seed, external values, each save inserting a batch, touching the
    /// worker's previous one and deleting an older one), with automatic compaction running
    /// in the background and checkpoints written between saves, SIGKILLed at random moments:
    /// 200 rounds, 2000 with `STOWAGE_SOAK=1`; every other store of 40 rounds writes its
    /// commits in pieces. After each round the reopened store holds, for each worker, exactly
    /// the state its saves up to some save leave, and that save is at or after the last one
    /// acknowledged and not after the last one begun: no acknowledged save lost, none in part
    /// (a batch without all its rows, a touch or a delete without its insert), every value
    /// as saved, the batch index agrees with a scan, and every external file is a live
    /// value's. Over the run, more than a quarter of the kills land while a worker said it
    /// was saving, the children acknowledge more than a quarter of a save a round, the files
    /// go through compactions (at least one for every 40 rounds; some 15 to 20 in 200), a
    /// kill lands while a compaction writes its new file at least once every 20 rounds (some
    /// 40 to 60 in 200), the children write checkpoints, and reopening loads one now and
    /// then.
    @Test func killNineNeverLosesAnAcknowledgedBatchNorLeavesHalfOne() throws {
        let soak = ProcessInfo.processInfo.environment["STOWAGE_SOAK"] == "1"
        let rounds = soak ? 2000 : 200
        var random = SeededRandom.fromEnvironment()
        let seed = random.seed
        let plan = SoakPlan(seed: seed)
        let start = Date()
        var directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        // The highest save of each worker acknowledged and begun, since the store was new.
        var acknowledged = [Int](repeating: 0, count: plan.workers)
        var started = [Int](repeating: 0, count: plan.workers)
        var generation: UInt64 = 0
        var deadBytes = 32 << 10
        var figures = SoakFigures()
        for round in 0..<rounds {
            if round % 40 == 0 {
                if round > 0 {
                    directory.remove()
                    directory = LogTestDirectory.fresh()
                }
                acknowledged = Array(repeating: 0, count: plan.workers)
                started = acknowledged
                generation = 0
                // How many dead bytes start a compaction, for this store: from one every few
                // saves to one every few dozen.
                deadBytes = Int.random(in: 4 << 10...16 << 10, using: &random)
            }
            // Every other store of 40 rounds writes each commit in pieces, its frame last
            // (a chunk of 1 byte spills after every block), so kills land between them.
            let pieces = (round / 40) % 2 == 1
            let context = "seed \(seed), round \(round)"
            // Half the kills aimed at the saves come after an acknowledged one, so that the
            // run acknowledges saves however slow the machine's syncs make them; every fourth
            // round lets the child acknowledge up to four first, so that the compactions its
            // saves start have time to finish (or to be killed further on).
            let killed = try Self.runAndKill(
                ["soak", "log", directory.storeURL.path, String(seed), String(round), "dead=\(deadBytes)"]
                    + (pieces ? ["chunk=1"] : []), startUpMicroseconds: 60_000,
                acknowledgedBeforeKill: round % 4 == 3 ? 1...4 : 0...1, random: &random, context: context)
            let failures = figures.count(killed, plan: plan, acknowledged: &acknowledged, started: &started)
            #expect(failures.isEmpty, "\(context): \(failures)")
            let checkpointing = killed.lines.filter { $0 == "checkpointing" }.count
            let checkpointed = killed.lines.filter { $0 == "checkpointed" }.count
            figures.checkpoints += checkpointed
            if checkpointing > checkpointed { figures.killedMidCheckpoint += 1 }
            if FileManager.default.fileExists(atPath: directory.storeURL.path + ".compact") {
                figures.killedMidCompaction += 1
            }

            // This open's close checkpoints whatever the child saved, so that the next round
            // kills a child on a file with a checkpoint in it.
            var configuration = LogStoreConfiguration(url: directory.storeURL)
            configuration.checkpoints = .init(minimumCommitBytes: 0)
            let container = try ModelContainer(for: Self.schema, configurations: [configuration])
            let store = try #require(container.storesForTesting.first as? LogStore)
            if store.openedFromCheckpoint { figures.openedFromCheckpoint += 1 }
            #expect(store.fileGeneration >= generation, "\(context): the file went back a generation")
            figures.compactions += Int(store.fileGeneration - min(generation, store.fileGeneration))
            generation = store.fileGeneration
            let rows = try SoakPlan.rows(of: store)
            let (lastSave, problems) = plan.check(rows)
            // The batch index (loaded from a checkpoint when the file ends with one) finds
            // exactly the rows a scan finds.
            var rowsOfBatch: [Int: Int] = [:]
            for row in rows { rowsOfBatch[row.batch, default: 0] += 1 }
            let modelContext = ModelContext(container)
            for (batch, count) in rowsOfBatch.sorted(by: { $0.key < $1.key }) {
                let indexed = try modelContext.fetchCount(
                    FetchDescriptor<CrashBatch>(predicate: #Predicate { $0.batch == batch }))
                #expect(indexed == count, "\(context): batch \(batch) by index")
            }
            store.close()
            // Opening removed the files of values that no live record has: those of saves
            // killed before their commit, and those that touches and deletes replaced.
            let files = (try? FileManager.default.contentsOfDirectory(atPath: directory.storeURL.path + ".blobs")) ?? []
            let nonEmptyBlobs = rows.filter { !$0.blob.isEmpty }.count
            #expect(files.count == nonEmptyBlobs, "\(context): \(files.count) files, \(nonEmptyBlobs) values")
            #expect(problems.isEmpty, "\(context): \(problems.prefix(5))")
            let lost = (0..<plan.workers).filter { lastSave[$0] < acknowledged[$0] }
            #expect(
                lost.isEmpty,
                "\(context): acknowledged saves lost: the store holds \(lastSave), acknowledged \(acknowledged)")
            let unbegun = (0..<plan.workers).filter { lastSave[$0] > started[$0] }
            #expect(unbegun.isEmpty, "\(context): the store holds saves \(lastSave), begun \(started)")
            if !problems.isEmpty || !lost.isEmpty || !unbegun.isEmpty { return }
        }
        figures.seconds = Date().timeIntervalSince(start)
        print("LogCrashTests kill -9 soak, seed \(seed): \(figures)")
        #expect(figures.killedMidSave > rounds / 4, "seed \(seed): \(figures)")
        #expect(figures.acknowledged > rounds / 4, "seed \(seed): \(figures)")
        // Compactions finish during the rounds, and kills land while one writes its file.
        #expect(figures.compactions >= rounds / 40, "seed \(seed): \(figures)")
        #expect(figures.killedMidCompaction >= rounds / 20, "seed \(seed): \(figures)")
        #expect(figures.checkpoints >= rounds / 20, "seed \(seed): \(figures)")
        // Kills land after a checkpoint often enough that reopening loads one.
        #expect(figures.openedFromCheckpoint > rounds / 20, "seed \(seed): \(figures)")
    }
}
