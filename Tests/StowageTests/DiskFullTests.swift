import Foundation
import StowageTestSupport
import Testing

@_spi(Testing) @testable import Stowage

#if canImport(Glibc)
    import Glibc
#endif

/// Saves while the disk fills up and frees up again, on the log store and the JSON store:
/// with `DiskFullFileSystem` (a disk of a size the test moves, ENOSPC from the seam), and,
/// when `STOWAGE_FULL_DISK` names a directory on a small file system of its own (a tmpfs
/// that `Scripts/soak` mounts), on a real one.
///
/// Two workers, each with a context of its own, save `SoakPlan` batches at once (each save
/// inserts a batch of a size drawn from the seed, with external values on the log store,
/// touches the worker's previous batch and deletes an older one), while the disk goes from
/// roomy to tight to full and back. Every save either returns or throws a `DataStoreError`
/// that says what happened: `ioFailure` naming "No space left on device", or, once a
/// failure said that the store refuses further saves (a failed sync), `storeUnusable`.
/// Nothing else is thrown and nothing crashes. Every so often space frees up: then a save
/// in the same open store lands, or the store refuses it with `storeUnusable` when an
/// earlier failure said it would; the open store still holds exactly the saves that
/// returned; and the store, closed and opened afresh from its files, holds exactly those
/// saves too, each whole with its values: none that returned is lost, none that threw is
/// there, none is there in part.
@Suite("Disk full", .serialized)
struct DiskFullTests {
    static let schema = Schema([CrashBatch.self])

    enum Kind: String, CustomStringConvertible {
        case log, json
        var description: String { rawValue }
    }

    /// How the run makes the disk tight and frees it again.
    protocol Disk {
        /// The file system the store writes through (`nil`: the real one).
        var fileSystem: (any StoreFileSystem)? { get }
        /// Leaves about `free` bytes free, with metadata calls failing one time in `odds`
        /// while full where the disk can make them fail.
        func tighten(free: Int64, metadataFailureOdds odds: Int) throws
        /// Space frees up: no limit (the fake), or the ballast file removed (a real one).
        func freeUp() throws
        /// The ENOSPC failures it injected, by operation, where it knows them.
        var injected: [String: Int] { get }
    }

    /// The fake: `DiskFullFileSystem` over the test's directory.
    final class FakeDisk: Disk {
        let fs: DiskFullFileSystem
        init(root: URL, seed: UInt64) { fs = DiskFullFileSystem(root: root, seed: seed) }
        var fileSystem: (any StoreFileSystem)? { fs }
        func tighten(free: Int64, metadataFailureOdds odds: Int) { fs.leave(free: free, metadataFailureOdds: odds) }
        func freeUp() { fs.setCapacity(nil) }
        var injected: [String: Int] { fs.failures }
    }

    /// A real small file system: a ballast file beside the store's directory takes the
    /// space the run wants taken.
    final class RealDisk: Disk {
        let ballast: String
        init(mount: URL) { ballast = mount.appendingPathComponent("ballast").path }
        var fileSystem: (any StoreFileSystem)? { nil }
        var injected: [String: Int] { [:] }

        static func freeBytes(_ path: String) -> Int64 {
            var info = statvfs()
            guard statvfs(path, &info) == 0 else { return 0 }
            return Int64(info.f_bavail) * Int64(info.f_frsize)
        }

        func tighten(free: Int64, metadataFailureOdds odds: Int) throws {
            try freeUp()
            let directory = URL(fileURLWithPath: ballast).deletingLastPathComponent().path
            var remaining = Self.freeBytes(directory) - free
            let fd = open(ballast, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw DataStoreError(.ioFailure, "cannot create \(ballast)") }
            defer { close(fd) }
            let chunk = [UInt8](repeating: 0xA5, count: 64 << 10)
            while remaining > 0 {
                let n = chunk.withUnsafeBytes { write(fd, $0.baseAddress!, Int(min(remaining, Int64(chunk.count)))) }
                guard n > 0 else { break }  // the disk is full already
                remaining -= Int64(n)
            }
        }

        func freeUp() throws {
            if unlink(ballast) != 0, errno != ENOENT {
                throw DataStoreError(.ioFailure, "cannot remove \(ballast)")
            }
        }
    }

    /// What a run did.
    struct Figures: CustomStringConvertible {
        var steps = 0
        var landed = 0
        var threwNoSpace = 0
        var refused = 0
        var poisoned = 0
        var checkpoints = 0
        var checkpointsThrew = 0
        var compactions = 0
        var reopens = 0
        var checkedWhileFull = 0
        var landedAfterSpaceFreed = 0
        var refusedAfterSpaceFreed = 0
        var injected: [String: Int] = [:]
        var seconds = 0.0

        var description: String {
            "\(steps) steps: \(landed) saves landed, \(threwNoSpace) threw ioFailure (no space), \(refused) refused "
                + "(storeUnusable) after \(poisoned) failures that made the store refuse saves; \(checkpoints) "
                + "checkpoints written, \(checkpointsThrew) threw; \(compactions) compactions; \(reopens) reopens "
                + "checked, and \(checkedWhileFull) copies of the files while full; after space freed up in the same store \(landedAfterSpaceFreed) saves landed and "
                + "\(refusedAfterSpaceFreed) were refused; ENOSPC injected \(injected.sorted { $0.key < $1.key }); "
                + String(format: "%.1f s", seconds)
        }
    }

    /// One run: the store, its saves and what the test knows of them.
    final class Run {
        let kind: Kind
        let plan: SoakPlan
        let seed: UInt64
        let storeURL: URL
        let disk: any Disk
        var random: SeededRandom
        /// The last save of each worker that returned: exactly what the store must hold.
        var landed: [Int]
        /// Whether a failure in this open said the store refuses further saves.
        var poisoned = false
        var figures = Figures()
        var container: ModelContainer

        init(kind: Kind, seed: UInt64, storeURL: URL, disk: any Disk) throws {
            self.kind = kind
            self.seed = seed
            self.plan = SoakPlan(seed: seed, withBlobs: kind == .log)
            self.storeURL = storeURL
            self.disk = disk
            self.random = SeededRandom(seed: seed ^ 0x5EED_D15C)
            self.landed = Array(repeating: 0, count: plan.workers)
            self.container = try Self.open(kind, storeURL, fileSystem: disk.fileSystem)
        }

        static func open(_ kind: Kind, _ url: URL, fileSystem: (any StoreFileSystem)?) throws -> ModelContainer {
            switch kind {
            case .log:
                var configuration = LogStoreConfiguration(url: url)
                // Compactions every few saves: their new files fill the disk too.
                configuration.automaticCompaction = .init(minimumDeadBytes: 16 << 10, deadFraction: 0.25)
                if let fileSystem { configuration.fileSystem = fileSystem }
                return try ModelContainer(for: DiskFullTests.schema, configurations: [configuration])
            case .json:
                return try ModelContainer(
                    for: DiskFullTests.schema,
                    configurations: [JSONTest.configuration(url, schema: DiskFullTests.schema, fileSystem: fileSystem)])
            }
        }

        var logStore: LogStore? { container.storesForTesting.first as? LogStore }

        func rows(of container: ModelContainer) throws -> [SoakPlan.Row] {
            let store = container.storesForTesting.first
            if let store = store as? LogStore { return try SoakPlan.rows(of: store) }
            if let store = store as? JSONStore { return try SoakPlan.rows(of: store) }
            throw DataStoreError(.unsupportedFeature, "no store")
        }

        static func says(_ error: any Error, _ words: String) -> Bool { "\(error)".contains(words) }

        /// A failure said that the store refuses further saves.
        func noteRefusal() {
            if !poisoned { figures.poisoned += 1 }
            poisoned = true
        }

        /// What a save or checkpoint threw, checked: `true` when it was `ioFailure` for lack of
        /// space, `false` when the store refused (after saying it would).
        func expectClear(_ error: any Error, _ what: String, _ context: String) -> Bool {
            let text = "\(error)"
            guard let error = error as? DataStoreError else {
                Issue.record("\(context): \(what) threw something else than a DataStoreError: \(text)")
                return false
            }
            switch error.code {
            case .ioFailure where text.contains("No space left on device"):
                return true
            case .storeUnusable:
                #expect(poisoned, "\(context): \(what) refused, and no failure before said it would: \(text)")
                return false
            default:
                Issue.record("\(context): \(what) threw an unclear error: \(text)")
                return false
            }
        }

        /// One step: both workers save at once, and one time in six a checkpoint is written
        /// beside them (log store).
        @discardableResult
        func step(_ context: String) -> Bool {
            let checkpoint = kind == .log && Int.random(in: 0..<6, using: &random) == 0
            let outcomes = PosixMutex<[Int: Result<Void, any Error>]>([:])
            let (plan, container, landed) = (plan, container, landed)
            DispatchQueue.concurrentPerform(iterations: plan.workers + (checkpoint ? 1 : 0)) { task in
                let result: Result<Void, any Error>
                if task < plan.workers {
                    result = Result(catching: {
                        let modelContext = ModelContext(container)
                        try plan.stage(worker: task, save: landed[task] + 1, in: modelContext)
                        try modelContext.save()
                    })
                } else {
                    result = Result(catching: { try (container.storesForTesting.first as? LogStore)?.checkpoint() })
                }
                outcomes.withLock { $0[task] = result }
            }
            let results = outcomes.withLock { $0 }.sorted { $0.key < $1.key }
            // A failure that makes the store refuse saves (a failed sync: of a save, of a
            // checkpoint, or of the saves an automatic compaction settles first) says so; a
            // save beside it in the same step may have been refused already.
            for case (_, .failure(let error)) in results where Self.says(error, "refuses further saves") {
                noteRefusal()
            }
            if let failure = logStore?.lastAutomaticCompactionFailure, failure.contains("refuses further saves") {
                noteRefusal()
            }
            for (task, result) in results {
                switch (task < plan.workers, result) {
                case (true, .success):
                    self.landed[task] += 1
                    figures.landed += 1
                case (true, .failure(let error)):
                    if expectClear(error, "a save", context) { figures.threwNoSpace += 1 } else { figures.refused += 1 }
                case (false, .success):
                    figures.checkpoints += 1
                case (false, .failure(let error)):
                    figures.checkpointsThrew += 1
                    _ = expectClear(error, "a checkpoint", context)
                }
            }
            figures.steps += 1
            return results.contains { if case .failure = $0.value { true } else { false } }
        }

        /// Space frees up: a save in the same store lands, or is refused if the store said
        /// it would; the open store holds exactly the saves that returned; closed and
        /// opened afresh, so do its files; then it is opened again on the disk.
        func freeUpAndCheck(_ context: String) throws {
            try disk.freeUp()
            logStore?.waitForAutomaticCompaction()
            try checkCopyOfTheFiles(context)
            let worker = Int.random(in: 0..<plan.workers, using: &random)
            do {
                let modelContext = ModelContext(container)
                try plan.stage(worker: worker, save: landed[worker] + 1, in: modelContext)
                try modelContext.save()
                #expect(!poisoned, "\(context): a save landed in a store that had said it refuses saves")
                landed[worker] += 1
                figures.landed += 1
                figures.landedAfterSpaceFreed += 1
            } catch let error as DataStoreError where error.code == .storeUnusable && poisoned {
                figures.refusedAfterSpaceFreed += 1
            } catch {
                Issue.record("\(context): with space free again, a save threw \(error)")
            }
            logStore?.waitForAutomaticCompaction()
            let open = plan.check(try rows(of: container))
            #expect(open.problems.isEmpty, "\(context), the open store: \(open.problems.prefix(5))")
            #expect(
                open.lastSave == landed, "\(context), the open store holds saves \(open.lastSave), landed \(landed)")
            figures.compactions += logStore?.compactionCount ?? 0
            (container.storesForTesting.first as? LogStore)?.close()
            (container.storesForTesting.first as? JSONStore)?.close()

            // Afresh from the files, through the real file system.
            let reopened = try Self.open(kind, storeURL, fileSystem: nil)
            let rows = try rows(of: reopened)
            let (lastSave, problems) = plan.check(rows)
            (reopened.storesForTesting.first as? LogStore)?.close()
            (reopened.storesForTesting.first as? JSONStore)?.close()
            figures.reopens += 1
            #expect(problems.isEmpty, "\(context), reopened: \(problems.prefix(5))")
            #expect(lastSave == landed, "\(context), reopened: the files hold saves \(lastSave), landed \(landed)")
            let directory = storeURL.deletingLastPathComponent().path
            let names = Set((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [])
            let name = storeURL.lastPathComponent
            let expected: Set<String> =
                kind == .log
                ? Set([name, name + ".lock"]).union(names.contains(name + ".blobs") ? [name + ".blobs"] : [])
                : [name, name + ".lock"]
            #expect(names == expected, "\(context): files left beside the store: \(names.subtracting(expected))")
            if kind == .log {
                let files = (try? FileManager.default.contentsOfDirectory(atPath: storeURL.path + ".blobs")) ?? []
                let values = rows.filter { !$0.blob.isEmpty }.count
                #expect(files.count == values, "\(context): \(files.count) external files, \(values) values")
            }
            if !problems.isEmpty || lastSave != landed || !open.problems.isEmpty || open.lastSave != landed {
                throw DataStoreError(.corruptStore, "\(context): stopping at the first loss")
            }
            container = try Self.open(kind, storeURL, fileSystem: disk.fileSystem)
            poisoned = false
        }

        /// The files as the full disk left them, before a save rewrites them (a JSON save
        /// writes the whole document from memory): copied elsewhere and opened there, they hold
        /// exactly the saves that returned.
        func checkCopyOfTheFiles(_ context: String) throws {
            let copy = LogTestDirectory.fresh()
            defer { copy.remove() }
            let url = copy.url.appendingPathComponent(storeURL.lastPathComponent)
            try FileManager.default.copyItem(at: storeURL, to: url)
            let blobs = URL(fileURLWithPath: storeURL.path + ".blobs")
            if FileManager.default.fileExists(atPath: blobs.path) {
                try FileManager.default.copyItem(at: blobs, to: URL(fileURLWithPath: url.path + ".blobs"))
            }
            let opened = try Self.open(kind, url, fileSystem: nil)
            let (lastSave, problems) = plan.check(try rows(of: opened))
            (opened.storesForTesting.first as? LogStore)?.close()
            (opened.storesForTesting.first as? JSONStore)?.close()
            #expect(problems.isEmpty, "\(context), the files as the full disk left them: \(problems.prefix(5))")
            #expect(
                lastSave == landed,
                "\(context), the files as the full disk left them hold saves \(lastSave), landed \(landed)")
            if !problems.isEmpty || lastSave != landed {
                throw DataStoreError(.corruptStore, "\(context): stopping at the first loss")
            }
        }

        /// `steps` steps, the disk changing every few, space freed and everything checked
        /// every few dozen and whenever the store refuses saves.
        func run(steps: Int) throws {
            let start = Date()
            var nextWeather = 0
            var nextCheck = Int.random(in: 10...40, using: &random)
            for step in 0..<steps {
                let context = "\(kind) store, seed \(seed), step \(step)"
                if step == nextWeather {
                    // Roomy three times in ten; otherwise tight (up to 96 KiB free: a large
                    // batch's external values, a compaction's new file or a JSON document
                    // may not fit) or full; metadata calls failing while full now and then.
                    let weather = Int.random(in: 0..<10, using: &random)
                    let odds = [0, 0, 2, 8][Int.random(in: 0..<4, using: &random)]
                    if weather < 3 {
                        try disk.freeUp()
                    } else if weather < 7 {
                        try disk.tighten(
                            free: Int64.random(in: 0...96 << 10, using: &random), metadataFailureOdds: odds)
                    } else {
                        try disk.tighten(free: 0, metadataFailureOdds: odds)
                    }
                    nextWeather = step + Int.random(in: 1...12, using: &random)
                }
                let failed = self.step(context)
                // Now and then, right after a failure, while the disk is still full: the
                // files hold exactly the saves that returned (a failed save that damaged them
                // would otherwise be hidden by the next save that rewrites them).
                if failed, Int.random(in: 0..<4, using: &random) == 0 {
                    logStore?.waitForAutomaticCompaction()
                    try checkCopyOfTheFiles(context)
                    figures.checkedWhileFull += 1
                }
                if step + 1 == steps || step >= nextCheck || poisoned {
                    try freeUpAndCheck(context)
                    nextCheck = step + Int.random(in: 10...40, using: &random)
                    nextWeather = step + 1
                }
            }
            figures.injected = disk.injected
            figures.seconds = Date().timeIntervalSince(start)
            (container.storesForTesting.first as? LogStore)?.close()
            (container.storesForTesting.first as? JSONStore)?.close()
        }
    }

    /// Steps of a run: a few dozen in CI (a log store step syncs each external value's file,
    /// some 25 to 250 ms a step on the 2-core machine), thousands with `STOWAGE_SOAK=1`.
    static func steps(_ kind: Kind) -> Int {
        let soak = ProcessInfo.processInfo.environment["STOWAGE_SOAK"] == "1"
        return switch kind {
        case .log: soak ? 3000 : 80
        case .json: soak ? 3000 : 150
        }
    }

    /// Runs `kind` on the fake disk and checks that the disk really was full: saves threw
    /// for lack of space, saves landed, and (over the soak's length) space ran out in
    /// checkpoints and compactions too.
    func runOnTheFakeDisk(_ kind: Kind) throws {
        var random = SeededRandom.fromEnvironment(test: "\(kind) store on a full disk")
        let seed = random.seed
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let url = directory.url.appendingPathComponent(kind == .log ? "store.stowlog" : "store.json")
        let disk = FakeDisk(root: directory.url, seed: random.next())
        let run = try Run(kind: kind, seed: seed, storeURL: url, disk: disk)
        try run.run(steps: Self.steps(kind))
        let figures = run.figures
        print("DiskFullTests \(kind) store, seed \(seed): \(figures)")
        // Of the saves tried (two a step), a tenth or more landed and a tenth or more threw.
        let tried = 2 * Self.steps(kind)
        #expect(figures.landed > tried / 10, "seed \(seed): \(figures)")
        #expect(figures.threwNoSpace > tried / 10, "seed \(seed): \(figures)")
        #expect(figures.reopens >= 2, "seed \(seed): \(figures)")
        #expect(figures.injected["pwrite", default: 0] > 0, "seed \(seed): \(figures)")
        if kind == .log {
            #expect(figures.compactions > 0, "seed \(seed): \(figures)")
            #expect(figures.checkpoints > 0, "seed \(seed): \(figures)")
        }
    }

    @Test func logStoreSavesLandOrThrowClearlyAndReopenWhole() throws {
        try runOnTheFakeDisk(.log)
    }

    @Test func jsonStoreSavesLandOrThrowClearlyAndReopenWhole() throws {
        try runOnTheFakeDisk(.json)
    }

    /// The same on a real small file system, when `STOWAGE_FULL_DISK` names a directory on
    /// one that the run may fill (`Scripts/soak` mounts a tmpfs for it); skipped otherwise.
    @Test(
        .enabled(if: ProcessInfo.processInfo.environment["STOWAGE_FULL_DISK"] != nil),
        arguments: [Kind.log, .json])
    func savesOnARealFullDisk(kind: Kind) throws {
        let mount = URL(fileURLWithPath: ProcessInfo.processInfo.environment["STOWAGE_FULL_DISK"] ?? "/nonexistent")
        let random = SeededRandom.fromEnvironment(test: "\(kind) store on a real full disk")
        let seed = random.seed
        let directory = mount.appendingPathComponent("stowage-\(kind)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let disk = RealDisk(mount: mount)
        defer {
            try? disk.freeUp()
            try? FileManager.default.removeItem(at: directory)
        }
        let url = directory.appendingPathComponent(kind == .log ? "store.stowlog" : "store.json")
        let run = try Run(kind: kind, seed: seed, storeURL: url, disk: disk)
        try run.run(steps: Self.steps(kind))
        let figures = run.figures
        print("DiskFullTests \(kind) store on a real full disk at \(mount.path), seed \(seed): \(figures)")
        #expect(figures.landed > 2 * Self.steps(kind) / 5, "seed \(seed): \(figures)")
        #expect(figures.threwNoSpace > 0, "seed \(seed): \(figures)")
    }
}
