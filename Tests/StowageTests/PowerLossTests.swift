import Foundation
import StowageTestSupport
import Testing

@_spi(Testing) @testable import Stowage

/// A keepsake with a unique name, an indexed number and an external value.
@Model final class Keepsake {
    @Attribute(.unique) var name: String
    var number: Int
    @Attribute(.externalStorage) var picture: Data?
    #Index<Keepsake>([\.number])

    init(name: String, number: Int, picture: Data? = nil) {
        self.name = name
        self.number = number
        self.picture = picture
    }
}

/// Power cuts, not only process deaths: each store runs a series of saves (and
/// checkpoints, compactions) on `PowerLossFileSystem`, which records every change; then
/// every state a power cut could have left at every point between changes is opened as a
/// fresh store, which must hold exactly the state after one save: at least the last one
/// acknowledged before the cut, at most the one in progress. `STOWAGE_POWERLOSS_RANDOM`
/// sets the random subsets tried at each point (default 4), `STOWAGE_SEED` replays them.
@Suite("Power loss")
struct PowerLossTests {
    /// A store's contents, comparable: name, number and picture of each keepsake.
    typealias Contents = [String: String]

    static func contents(_ container: ModelContainer) throws -> Contents {
        var result: Contents = [:]
        for keepsake in try ModelContext(container).fetch(FetchDescriptor<Keepsake>()) {
            result[keepsake.name] = "\(keepsake.number)/\(keepsake.picture.map { Array($0).description } ?? "-")"
        }
        return result
    }

    /// The workload's steps and what each leaves: the recorded point where it began, the
    /// point where it returned, and the contents after it.
    struct Run {
        var steps: [(began: Int, returned: Int, contents: Contents)] = []
        let directory: URL
        let fs: PowerLossFileSystem
    }

    /// Runs the workload, a step at a time, on a container made by `open` over `fs`.
    static func run(
        _ open: (PowerLossFileSystem) throws -> ModelContainer,
        maintenance: ((ModelContainer, Int) throws -> Void)? = nil
    ) throws -> Run {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("stowage-powerloss-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let fs = try PowerLossFileSystem(recordingUnder: directory)
        var run = Run(directory: directory, fs: fs)
        // Opening (creating the store) is step 0: its contents are empty.
        let began = fs.mark
        var container: ModelContainer? = try open(fs)
        run.steps.append((began, fs.mark, [:]))
        let context = ModelContext(container!)
        var held: [Keepsake] = []
        for step in 1...10 {
            let began = fs.mark
            switch step % 4 {
            case 1:
                for i in 0..<3 {
                    let keepsake = Keepsake(
                        name: "k\(step)-\(i)", number: step * 10 + i,
                        picture: i == 0 ? Data((0..<40).map { UInt8(($0 + step) % 256) }) : nil)
                    context.insert(keepsake)
                    held.append(keepsake)
                }
            case 2:
                for keepsake in held.suffix(4) { keepsake.number += 100 }
                held.last?.picture = Data([UInt8(step), 1, 2, 3])
            case 3:
                if let first = held.first {
                    context.delete(first)
                    held.removeFirst()
                }
                context.insert(Keepsake(name: "k1-1", number: step))  // meets a stored name: an upsert
            default:
                context.insert(Keepsake(name: "big\(step)", number: step, picture: Data(repeating: 7, count: 3000)))
            }
            try context.save()
            held = try context.fetch(FetchDescriptor<Keepsake>(sortBy: [SortDescriptor(\.name)]))
            run.steps.append((began, fs.mark, try contents(container!)))
            if let maintenance {
                let began = fs.mark
                try maintenance(container!, step)
                run.steps.append((began, fs.mark, try contents(container!)))
            }
        }
        // Closing (which may write a checkpoint) is the last step.
        let closing = fs.mark
        let last = run.steps.last!.contents
        held = []
        _ = context
        container = nil
        run.steps.append((closing, fs.mark, last))
        return run
    }

    /// Opens every crash state of `run` with `open` and checks its contents; returns the
    /// number of states and the failures. With `relaxed` durability an acknowledged step
    /// may be lost, but the contents must still be those after some step begun by then.
    static func check(_ run: Run, relaxed: Bool = false, open: (URL) throws -> ModelContainer) throws -> (
        states: Int, failures: [String]
    ) {
        var random = SeededRandom.fromEnvironment()
        let subsets = ProcessInfo.processInfo.environment["STOWAGE_POWERLOSS_RANDOM"].flatMap(Int.init) ?? 4
        var failures: [String] = []
        let scratch = run.directory.appendingPathComponent("..").appendingPathComponent(
            "stowage-powerloss-open-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let states = try run.fs.crashStates(randomSubsets: subsets, random: &random) { point, image in
            guard failures.count < 5 else { return }
            try? FileManager.default.removeItem(at: scratch)
            try image.materialize(at: scratch)
            // Steps acknowledged by this point must be there; steps begun may be.
            let acknowledged = relaxed ? 0 : run.steps.lastIndex { $0.returned <= point } ?? 0
            let begun = run.steps.lastIndex { $0.began < point } ?? 0
            let allowed = run.steps[acknowledged...max(acknowledged, begun)].map(\.contents)
            do {
                let container = try open(scratch)
                let found = try contents(container)
                if !allowed.contains(found) {
                    failures.append(
                        "at event \(point) (after step \(acknowledged), up to \(begun)): found \(found.sorted { $0.key < $1.key }), "
                            + "expected one of \(allowed.count) states; files \(image.files.mapValues(\.count))")
                }
            } catch {
                failures.append(
                    "at event \(point) (after step \(acknowledged)): opening failed: \(error); files \(image.files.mapValues(\.count))"
                )
            }
        }
        return (states, failures)
    }

    static func logConfiguration(
        _ directory: URL, fs: (any StoreFileSystem)? = nil, durability: LogStoreConfiguration.Durability = .full
    ) -> LogStoreConfiguration {
        var configuration = LogStoreConfiguration(
            schema: Schema([Keepsake.self]), url: directory.appendingPathComponent("store.stowlog"),
            durability: durability)
        if let fs { configuration.fileSystem = fs }
        return configuration
    }

    @Test func theLogStoreKeepsEveryAcknowledgedSaveThroughCheckpointsAndCompaction() throws {
        let run = try Self.run(
            { fs in
                try ModelContainer(
                    for: Schema([Keepsake.self]), configurations: [Self.logConfiguration(fs.rootURL, fs: fs)])
            },
            maintenance: { container, step in
                let store = try #require(container.storesForTesting.first as? LogStore)
                if step == 4 { try store.checkpoint() }
                if step == 7 { try store.compact() }
            })
        defer { try? FileManager.default.removeItem(at: run.directory) }
        let (states, failures) = try Self.check(run) { directory in
            try ModelContainer(for: Schema([Keepsake.self]), configurations: [Self.logConfiguration(directory)])
        }
        print("power loss, log store: \(run.fs.mark) changes recorded, \(states) crash states opened")
        #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
        #expect(states > run.fs.mark)
    }

    /// With `.relaxed` durability nothing is synced after a save, so a power cut may keep
    /// any part of the saves since the last sync, in any order: the store may lose the
    /// last saves, but opens, with no half save and nothing out of order.
    @Test func theLogStoreWithRelaxedDurabilityLosesOnlyWholeLastSaves() throws {
        let run = try Self.run(
            { fs in
                try ModelContainer(
                    for: Schema([Keepsake.self]),
                    configurations: [Self.logConfiguration(fs.rootURL, fs: fs, durability: .relaxed)])
            },
            maintenance: { container, step in
                let store = try #require(container.storesForTesting.first as? LogStore)
                if step == 6 { try store.checkpoint() }
            })
        defer { try? FileManager.default.removeItem(at: run.directory) }
        let (states, failures) = try Self.check(run, relaxed: true) { directory in
            try ModelContainer(for: Schema([Keepsake.self]), configurations: [Self.logConfiguration(directory)])
        }
        print(
            "power loss, log store, relaxed durability: \(run.fs.mark) changes recorded, \(states) crash states opened")
        #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
        #expect(states > run.fs.mark)
    }

    @Test func theJSONStoreKeepsEveryAcknowledgedSave() throws {
        func configuration(_ directory: URL, fs: (any StoreFileSystem)? = nil) -> JSONStoreConfiguration {
            var configuration = JSONStoreConfiguration(
                name: "json", schema: Schema([Keepsake.self]), fileURL: directory.appendingPathComponent("store.json"))
            if let fs { configuration.fileSystem = fs }
            return configuration
        }
        let run = try Self.run { fs in
            try ModelContainer(for: Schema([Keepsake.self]), configurations: [configuration(fs.rootURL, fs: fs)])
        }
        defer { try? FileManager.default.removeItem(at: run.directory) }
        let (states, failures) = try Self.check(run) { directory in
            try ModelContainer(for: Schema([Keepsake.self]), configurations: [configuration(directory)])
        }
        print("power loss, JSON store: \(run.fs.mark) changes recorded, \(states) crash states opened")
        #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
        #expect(states > run.fs.mark)
    }

    /// A migration (`ParcelPlan`: a stage that deletes in willMigrate, converts a property
    /// and fills a new one in didMigrate, over records with external values) cut by a power
    /// loss at any point: reopening with the plan gives the migrated store, whole, every
    /// time, whether the cut left the old store or the new one.
    @Test(arguments: MigrationStoreKind.allCases)
    func aMigrationCutAnywhereEndsMigratedOnTheNextOpen(_ kind: MigrationStoreKind) throws {
        let parcels = 30
        func configuration(_ schema: Schema, _ directory: URL, fs: (any StoreFileSystem)? = nil)
            -> any DataStoreConfiguration
        {
            switch kind {
            case .log:
                var configuration = LogStoreConfiguration(
                    schema: schema, url: directory.appendingPathComponent("p.stowlog"))
                if let fs { configuration.fileSystem = fs }
                return configuration
            case .json:
                var configuration = JSONStoreConfiguration(
                    name: "parcels", schema: schema, fileURL: directory.appendingPathComponent("p.json"))
                if let fs { configuration.fileSystem = fs }
                return configuration
            }
        }
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("stowage-powerloss-\(UUID().uuidString)", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let v1 = Schema(versionedSchema: ParcelV1.self)
        do {
            let container = try ModelContainer(for: v1, configurations: [configuration(v1, directory)])
            let context = ModelContext(container)
            for code in 1...parcels { context.insert(ParcelV1.Parcel(code: code, weight: ParcelV1.weight(code))) }
            try context.save()
        }
        let v2 = Schema(versionedSchema: ParcelV2.self)
        let fs = try PowerLossFileSystem(recordingUnder: directory)
        _ = try ModelContainer(
            for: v2, migrationPlan: ParcelPlan.self, configurations: [configuration(v2, directory, fs: fs)])
        #expect(fs.events.contains { if case .link = $0 { true } else { false } } == (kind == .log))

        var random = SeededRandom.fromEnvironment()
        var failures: [String] = []
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent(
            "stowage-powerloss-open-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: scratch) }
        // Every point takes about two minutes here (1,519 states), so CI takes about 40
        // points spread over the migration; STOWAGE_SOAK=1 takes them all.
        let every = ProcessInfo.processInfo.environment["STOWAGE_SOAK"] == "1" ? 1 : max(1, fs.mark / 40)
        let points = Array(Set(Array(stride(from: 0, through: fs.mark, by: every)) + [fs.mark])).sorted()
        let states = try fs.crashStates(at: points, randomSubsets: 2, random: &random) { point, image in
            guard failures.count < 5 else { return }
            try? FileManager.default.removeItem(at: scratch)
            try image.materialize(at: scratch)
            do {
                let container = try ModelContainer(
                    for: v2, migrationPlan: ParcelPlan.self, configurations: [configuration(v2, scratch)])
                let found = try ModelContext(container).fetch(FetchDescriptor<ParcelV2.Parcel>())
                let wrong = found.filter {
                    $0.code % 10 == 0 || $0.grams != ParcelV1.weight($0.code) * 1000
                        || $0.weight != "\(ParcelV1.weight($0.code)) kg" || $0.label != ParcelV1.label($0.code)
                }
                if found.count != parcels - parcels / 10 || !wrong.isEmpty {
                    failures.append("at event \(point): \(found.count) parcels, \(wrong.count) wrong")
                }
            } catch {
                failures.append(
                    "at event \(point): opening with the plan failed: \(error); files \(image.files.mapValues(\.count))"
                )
            }
        }
        print("power loss, \(kind) migration: \(fs.mark) changes recorded, \(states) crash states opened")
        #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
        #expect(states > points.count)
    }
}
