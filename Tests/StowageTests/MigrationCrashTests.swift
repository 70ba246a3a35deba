import Foundation
import StowageTestSupport
import Testing

@_spi(Testing) @testable import Stowage

#if canImport(Glibc)
    import Glibc
#endif

/// SIGKILL at random moments of a migration (the copy, willMigrate, the conversion,
/// didMigrate, the rename): the store is then either the old one, whole, which the plan
/// migrates on the next open, or the fully migrated one.
@Suite("Migration crash safety", .serialized)
struct MigrationCrashTests {
    static let parcels = 400

    static func configuration(_ kind: MigrationStoreKind, _ schema: Schema, _ url: URL) -> any DataStoreConfiguration {
        switch kind {
        case .log: LogStoreConfiguration(schema: schema, url: url)
        case .json: JSONStoreConfiguration(name: "parcels", schema: schema, fileURL: url)
        }
    }

    static func writeV1(_ kind: MigrationStoreKind, _ url: URL) throws {
        let schema = Schema(versionedSchema: ParcelV1.self)
        let container = try ModelContainer(for: schema, configurations: [configuration(kind, schema, url)])
        let context = ModelContext(container)
        for code in 1...parcels { context.insert(ParcelV1.Parcel(code: code, weight: ParcelV1.weight(code))) }
        try context.save()
    }

    /// Whether the store is the old one, whole (`false`), or the migrated one, whole (`true`).
    static func check(_ kind: MigrationStoreKind, _ url: URL, round: Int) throws -> Bool {
        let v1 = Schema(versionedSchema: ParcelV1.self)
        if let container = try? ModelContainer(for: v1, configurations: [configuration(kind, v1, url)]) {
            let parcels = try ModelContext(container).fetch(FetchDescriptor<ParcelV1.Parcel>())
            #expect(parcels.count == Self.parcels, "round \(round): the old store lost parcels")
            let wrong = parcels.filter { $0.weight != ParcelV1.weight($0.code) || $0.label != ParcelV1.label($0.code) }
            #expect(wrong.isEmpty, "round \(round): \(wrong.count) old parcels changed")
            return false
        }
        let v2 = Schema(versionedSchema: ParcelV2.self)
        let container = try ModelContainer(for: v2, configurations: [configuration(kind, v2, url)])
        let parcels = try ModelContext(container).fetch(FetchDescriptor<ParcelV2.Parcel>())
        #expect(
            parcels.count == Self.parcels - Self.parcels / 10, "round \(round): migrated store has \(parcels.count)")
        let wrong = parcels.filter {
            $0.code % 10 == 0 || $0.grams != ParcelV1.weight($0.code) * 1000
                || $0.weight != "\(ParcelV1.weight($0.code)) kg" || $0.label != ParcelV1.label($0.code)
        }
        #expect(wrong.isEmpty, "round \(round): \(wrong.count) migrated parcels are wrong")
        return true
    }

    @Test(arguments: MigrationStoreKind.allCases)
    func killNineLeavesTheOldStoreOrTheMigratedOne(_ kind: MigrationStoreKind) throws {
        let soak = ProcessInfo.processInfo.environment["STOWAGE_SOAK"] == "1"
        let rounds = soak ? 400 : 12
        var random = SeededRandom.fromEnvironment()
        let seed = random.seed
        // How long an unkilled migration takes, to spread the kills over it: the fastest of
        // three runs (the first pays for a cold start of the child, which the kills must not
        // be spread over, or they land after the migration every time).
        var duration = UInt32.max
        for _ in 0..<3 {
            let directory = LogTestDirectory.fresh()
            defer { directory.remove() }
            try Self.writeV1(kind, directory.storeURL)
            let start = DispatchTime.now().uptimeNanoseconds
            let output = try LogCrashTests.run(["migrate", directory.storeURL.path, kind.rawValue])
            duration = min(duration, UInt32(min((DispatchTime.now().uptimeNanoseconds - start) / 1000, 20_000_000)))
            #expect(output == "migrated \(Self.parcels - Self.parcels / 10)\n", "\(output)")
            #expect(try Self.check(kind, directory.storeURL, round: -1))
        }
        var old = 0
        var migrated = 0
        // After the planned rounds, up to twelve more aim at the side no kill has landed on yet
        // (before the rename, or after it), so that both are proven on a slow or fast machine.
        for round in 0..<(rounds + 12) {
            if round >= rounds, old > 0, migrated > 0 { break }
            let directory = LogTestDirectory.fresh()
            defer { directory.remove() }
            try Self.writeV1(kind, directory.storeURL)
            let process = Process()
            process.executableURL = LogCrashTests.child
            process.arguments = ["migrate", directory.storeURL.path, kind.rawValue]
            process.standardOutput = FileHandle.nullDevice
            try process.run()
            // Every third round aims at the end, around the rename (some land after it).
            let window: ClosedRange<UInt32> =
                if round >= rounds {
                    old == 0 ? 0...(duration / 2) : (duration * 2)...(duration * 3)
                } else {
                    round % 3 == 2 ? (duration * 9 / 10)...(duration * 3 / 2) : 0...duration
                }
            usleep(UInt32.random(in: window, using: &random))
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            if try Self.check(kind, directory.storeURL, round: round) {
                migrated += 1
            } else {
                old += 1
                // The plan runs again from the old store.
                let v2 = Schema(versionedSchema: ParcelV2.self)
                _ = try ModelContainer(
                    for: v2, migrationPlan: ParcelPlan.self,
                    configurations: [Self.configuration(kind, v2, directory.storeURL)])
                #expect(try Self.check(kind, directory.storeURL, round: round), "seed \(seed), round \(round)")
            }
            // The opens since removed what the killed one left beside the store.
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.url.path)
                .filter { $0.contains(".migrating") }
            #expect(leftovers.isEmpty, "seed \(seed), round \(round): \(leftovers)")
        }
        // Kills land both before and after the rename.
        #expect(old > 0 && migrated > 0, "seed \(seed): \(old) old, \(migrated) migrated")
    }
}
