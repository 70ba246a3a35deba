import Foundation
@_spi(Testing) import Stowage
import Synchronization

/// A trip in the log format samples (`Formats/samples/`). Kept apart from the other test
/// models so that the samples only change when the format does.
@Model
public final class LogSampleTrip {
    public var name: String
    public var startDate: Date
    public var budget: Double = 0
    public var note: String?
    @Relationship(deleteRule: .cascade, inverse: \LogSampleItem.trip) public var items: [LogSampleItem] = []

    public init(name: String, startDate: Date = Date(timeIntervalSince1970: 0)) {
        self.name = name
        self.startDate = startDate
    }
}

@Model
public final class LogSampleItem {
    public var name: String
    public var quantity: Int = 1
    public var trip: LogSampleTrip?

    public init(name: String, quantity: Int = 1) {
        self.name = name
        self.quantity = quantity
    }
}

/// The sample trips one lightweight change later, for the format version 6 sample
/// (`trips-v6.stowlog`): a trip gains a rating with a default, its note is renamed to a
/// remark, and a new entity, a stop, appears. Opening the version 5 layout with these
/// appends a layout record instead of rewriting the file.
public enum LogSamplesGrown {
    @Model
    public final class LogSampleTrip {
        public var name: String
        public var startDate: Date
        public var budget: Double = 0
        @Attribute(originalName: "note") public var remark: String?
        public var rating: Int = 3
        @Relationship(deleteRule: .cascade, inverse: \LogSampleItem.trip) public var items: [LogSampleItem] = []

        public init(name: String, startDate: Date = Date(timeIntervalSince1970: 0)) {
            self.name = name
            self.startDate = startDate
        }
    }

    @Model
    public final class LogSampleItem {
        public var name: String
        public var quantity: Int = 1
        public var trip: LogSampleTrip?

        public init(name: String, quantity: Int = 1) {
            self.name = name
            self.quantity = quantity
        }
    }

    @Model
    public final class LogSampleStop {
        public var name: String
        public init(name: String) { self.name = name }
    }

    public static let schema = Schema([LogSampleTrip.self, LogSampleItem.self, LogSampleStop.self])
}

/// Writes the log format samples deterministically: a fixed salt, store identifier and clock.
public enum LogSamples {
    public static let salt: UInt64 = 0x5354_4F57_4147_4531
    public static let storeIdentifier = "log-00000000-0000-0000-0000-000000005A11"
    public static let schema = Schema([LogSampleTrip.self, LogSampleItem.self])
    /// The first commit's timestamp; each later one is a second on.
    public static let firstTimestamp: Int64 = 1_767_225_600_000

    /// The schema of the version 2 sample, whose photos keep their bytes in external files.
    public static let photoSchema = Schema([Photo.self])

    /// Deterministic bytes for the version 2 sample's photos.
    public static func photoBytes(_ seed: UInt8, count: Int) -> Data {
        var state = seed
        return Data(
            (0..<count).map { _ in
                state = state &* 73 &+ 29
                return state
            })
    }

    /// A configuration that writes the same bytes every time.
    public static func configuration(url: URL, schema: Schema = schema, version: UInt16 = 1) -> LogStoreConfiguration {
        var configuration = LogStoreConfiguration(schema: schema, url: url)
        configuration.automaticCompaction = nil
        configuration.newFileFormatVersion = version
        configuration.fixedSalt = salt
        configuration.fixedStoreIdentifier = storeIdentifier
        configuration.historyWriter = (program: "stowage-samples", process: 4242)
        let tick = PosixMutex<Int64>(firstTimestamp - 1000)
        configuration.clock = {
            tick.withLock {
                $0 += 1000
                return $0
            }
        }
        return configuration
    }

    static func snapshot(_ entityName: String, _ values: [String: SnapshotValue], in schema: Schema = schema)
        -> DefaultSnapshot
    {
        let entity = schema.entitiesByName[entityName]!
        return DefaultSnapshot(
            persistentIdentifier: .temporaryForTesting(entityName: entityName),
            values: entity.properties.map {
                values[$0.name] ?? ($0.isRelationship && !$0.isOptional ? .array([]) : .null)
            })
    }

    /// Writes `photos-v2.stowlog` and its `photos-v2.stowlog.blobs/` directory: three
    /// commits of a version 2 log whose photos keep their bytes in external files.
    public static func writeVersion2(to directory: URL) throws {
        let url = directory.appendingPathComponent("photos-v2.stowlog")
        try? FileManager.default.removeItem(at: url)
        try? FileManager.default.removeItem(atPath: url.path + ".blobs")
        do {
            let container = try ModelContainer(
                for: photoSchema, configurations: [configuration(url: url, schema: photoSchema, version: 2)])
            let context = ModelContext(container)
            // 1: two photos, one with a thumbnail.
            let harbour = Photo(
                title: "Harbour", bytes: photoBytes(1, count: 2048), thumbnail: photoBytes(2, count: 96))
            harbour.caption = "Bergen at dawn"
            context.insert(harbour)
            context.insert(Photo(title: "Glacier", bytes: photoBytes(3, count: 1024)))
            try context.save()
            // 2: a new caption only: the files are referred to again, not rewritten.
            harbour.caption = "Bergen, 6 a.m."
            try context.save()
            // 3: the glacier's bytes replaced (the first file stays until a compaction).
            let glacier = try context.fetch(FetchDescriptor<Photo>(predicate: #Predicate { $0.title == "Glacier" }))
            glacier.first?.bytes = photoBytes(4, count: 512)
            try context.save()
        }
        try? FileManager.default.removeItem(at: directory.appendingPathComponent("photos-v2.stowlog.lock"))
    }

    /// Saves one change to `store` as a save request, and returns the identifiers it made
    /// permanent.
    private static func save(
        _ store: LogStore, _ inserted: [DefaultSnapshot], _ updated: [DefaultSnapshot] = [],
        _ deleted: [DefaultSnapshot] = [], author: String? = nil
    ) throws -> [PersistentIdentifier: PersistentIdentifier] {
        try store.save(
            DataStoreSaveChangesRequest<DefaultSnapshot>(
                editingState: EditingState(author: author), inserted: inserted, updated: updated, deleted: deleted)
        ).remappedIdentifiers
    }

    /// The trips samples' commits, up to but not including Kyoto: (1) Lisbon with two
    /// items, raw; (2) Oslo with twenty similar items, LZ4; (3) Lisbon's budget raised and
    /// its charger deleted.
    private static func saveLisbonAndOslo(_ store: LogStore) throws {
        // 1: a small trip with two items (raw records).
        let lisbon = snapshot(
            "LogSampleTrip",
            [
                "name": .string("Lisbon"), "startDate": .date(Date(timeIntervalSince1970: 1_780_000_000)),
                "budget": .double(900),
            ])
        let passport = snapshot(
            "LogSampleItem",
            ["name": .string("Passport"), "quantity": .int(1), "trip": .identifier(lisbon.persistentIdentifier)])
        let charger = snapshot(
            "LogSampleItem",
            ["name": .string("Charger"), "quantity": .int(2), "trip": .identifier(lisbon.persistentIdentifier)])
        var lisbonWithItems = lisbon
        lisbonWithItems.values[schema.entitiesByName["LogSampleTrip"]!.property(named: "items")!.index] =
            .array([.identifier(passport.persistentIdentifier), .identifier(charger.persistentIdentifier)])
        let first = try save(store, [lisbonWithItems, passport, charger])
        // 2: a trip with twenty similar items (compresses: an LZ4 record).
        let oslo = snapshot(
            "LogSampleTrip",
            [
                "name": .string("Oslo"), "startDate": .date(Date(timeIntervalSince1970: 1_790_000_000)),
                "budget": .double(0), "note": .string("Bring wool, wool and more wool."),
            ])
        let socks = (1...20).map { n in
            snapshot(
                "LogSampleItem",
                [
                    "name": .string("Wool socks, pair \(n)"), "quantity": .int(Int64(n)),
                    "trip": .identifier(oslo.persistentIdentifier),
                ])
        }
        var osloWithItems = oslo
        osloWithItems.values[schema.entitiesByName["LogSampleTrip"]!.property(named: "items")!.index] =
            .array(socks.map { .identifier($0.persistentIdentifier) })
        _ = try save(store, [osloWithItems] + socks)
        // 3: update Lisbon's budget and drop the charger.
        let lisbonID = first[lisbon.persistentIdentifier]!
        let chargerID = first[charger.persistentIdentifier]!
        let passportID = first[passport.persistentIdentifier]!
        var lisbonValues = try store.snapshots(for: [lisbonID])[lisbonID]!.values
        let tripEntity = schema.entitiesByName["LogSampleTrip"]!
        lisbonValues[tripEntity.property(named: "budget")!.index] = .double(1250)
        lisbonValues[tripEntity.property(named: "items")!.index] = .array([.identifier(passportID)])
        _ = try save(
            store, [], [DefaultSnapshot(persistentIdentifier: lisbonID, values: lisbonValues)],
            [try store.snapshots(for: [chargerID])[chargerID]!], author: "sampler")
    }

    /// Kyoto, the trips samples' last trip.
    private static func kyoto() -> DefaultSnapshot {
        snapshot(
            "LogSampleTrip",
            [
                "name": .string("Kyoto"), "startDate": .date(Date(timeIntervalSince1970: 1_800_000_000)),
                "budget": .double(2400.5), "note": .string("Temples"),
            ])
    }

    /// Writes `trips-v1.stowlog` (four commits) and `trips-v1-torn.stowlog` (the last
    /// commit cut in half) into `directory`.
    public static func write(to directory: URL) throws {
        let url = directory.appendingPathComponent("trips-v1.stowlog")
        try? FileManager.default.removeItem(at: url)
        do {
            let store = try LogStore(configuration(url: url), migrationPlan: nil)
            try saveLisbonAndOslo(store)
            // 4: one more trip.
            _ = try save(store, [kyoto()], author: "sampler")
        }
        try? FileManager.default.removeItem(at: directory.appendingPathComponent("trips-v1.stowlog.lock"))
        // The torn copy: the last commit cut in half.
        let bytes = try Data(contentsOf: url)
        let offsets = try LogStore.recordOffsets(ofFileAt: url)
        let last = offsets[offsets.count - 2]
        let cut = Int(last) + Int(offsets[offsets.count - 1] - last) / 2
        try bytes.prefix(cut).write(to: directory.appendingPathComponent("trips-v1-torn.stowlog"))
    }

    /// Writes `trips-v3.stowlog` into `directory`: a version 3 log with the four commits of
    /// `trips-v1.stowlog`, a checkpoint, one more commit (Oslo's twentieth pair of socks
    /// deleted and Oslo updated without it), and a second checkpoint; so it holds a
    /// superseded checkpoint and a last one, which ends the file. Closing adds nothing
    /// (`checkpoints` is off).
    public static func writeVersion3(to directory: URL) throws {
        try writeCheckpointed(version: 3, to: directory)
    }

    /// Writes `trips-v4.stowlog`: the same saves and checkpoints as `trips-v3.stowlog`, in
    /// format version 4 (commits in blocks, checkpoints with the key directory).
    public static func writeVersion4(to directory: URL) throws {
        try writeCheckpointed(version: 4, to: directory)
    }

    /// Writes `trips-v5.stowlog`: the same saves and checkpoints in format version 5 (each
    /// write of a block stored on its own, after the block's table of lengths).
    public static func writeVersion5(to directory: URL) throws {
        try writeCheckpointed(version: 5, to: directory)
    }

    /// Writes `trips-v6.stowlog`: the version 5 sample's records as version 6, then a
    /// layout record (opened with ``LogSamplesGrown``'s schema), then one commit in the new
    /// layout: a trip to Reykjavik rated 5, with a remark, and a stop.
    public static func writeVersion6(to directory: URL) throws {
        try writeCheckpointed(version: 6, to: directory)
        let url = directory.appendingPathComponent("trips-v6.stowlog")
        do {
            var configuration = configuration(url: url, schema: LogSamplesGrown.schema, version: 6)
            configuration.checkpoints = nil
            let store = try LogStore(configuration, migrationPlan: nil)
            let grown = LogSamplesGrown.schema
            _ = try save(
                store,
                [
                    snapshot(
                        "LogSampleTrip",
                        [
                            "name": .string("Reykjavik"),
                            "startDate": .date(Date(timeIntervalSince1970: 1_810_000_000)),
                            "budget": .double(990), "remark": .string("Lagoon"), "rating": .int(5),
                        ], in: grown),
                    snapshot("LogSampleStop", ["name": .string("Hallgrimskirkja")], in: grown),
                ], author: "sampler")
            store.close()
        }
        try? FileManager.default.removeItem(at: directory.appendingPathComponent("trips-v6.stowlog.lock"))
    }

    private static func writeCheckpointed(version: UInt16, to directory: URL) throws {
        let url = directory.appendingPathComponent("trips-v\(version).stowlog")
        try? FileManager.default.removeItem(at: url)
        do {
            var configuration = configuration(url: url, version: version)
            configuration.checkpoints = nil
            let store = try LogStore(configuration, migrationPlan: nil)
            try saveLisbonAndOslo(store)
            // 4: one more trip.
            _ = try save(store, [kyoto()], author: "sampler")
            try store.checkpoint()
            // 5: an update and a delete: Oslo's twentieth pair of socks goes.
            let tripEntity = schema.entitiesByName["LogSampleTrip"]!
            let items = tripEntity.property(named: "items")!.index
            let name = tripEntity.property(named: "name")!.index
            let oslo = try store.allSnapshots(of: "LogSampleTrip").first { $0.values[name] == .string("Oslo") }!
            let itemName = schema.entitiesByName["LogSampleItem"]!.property(named: "name")!.index
            let socks = try store.allSnapshots(of: "LogSampleItem").first {
                $0.values[itemName] == .string("Wool socks, pair 20")
            }!
            var osloValues = oslo.values
            if case .array(let references) = oslo.values[items] {
                osloValues[items] = .array(references.filter { $0 != .identifier(socks.persistentIdentifier) })
            }
            _ = try save(
                store, [], [DefaultSnapshot(persistentIdentifier: oslo.persistentIdentifier, values: osloValues)],
                [socks], author: "sampler")
            try store.checkpoint()
            store.close()
        }
        try? FileManager.default.removeItem(at: directory.appendingPathComponent("trips-v\(version).stowlog.lock"))
    }
}
