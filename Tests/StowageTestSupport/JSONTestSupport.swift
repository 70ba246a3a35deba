import Foundation
@_spi(Testing) import Stowage
import Synchronization

/// A place in the JSON sample: a composite attribute.
public struct JSONSamplePlace: Codable, Hashable, Sendable {
    public var latitude: Double
    public var longitude: Double
    public init(latitude: Double, longitude: Double) {
        self.latitude = latitude
        self.longitude = longitude
    }
}

/// A trip in the JSON format sample (`Formats/samples/json-v1.json`), with one property
/// of each kind the format maps. Kept apart from the other test models so that the sample
/// only changes when the format does.
@Model
public final class JSONSampleTrip {
    @Attribute(.unique) public var name: String
    public var startDate: Date
    public var budget: Double = 0
    public var rating: Float?
    public var note: String?
    public var code: UUID
    public var website: URL?
    public var photo: Data = Data()
    public var price: Decimal = 0
    public var visitors: Int64 = 0
    public var capacity: UInt64 = 0
    public var tags: [String] = []
    public var place: JSONSamplePlace?
    @Relationship(deleteRule: .cascade, inverse: \JSONSampleItem.trip) public var items: [JSONSampleItem] = []
    #Index<JSONSampleTrip>([\.startDate])

    public init(name: String, startDate: Date, code: UUID) {
        self.name = name
        self.startDate = startDate
        self.code = code
    }
}

@Model
public final class JSONSampleItem {
    /// Preserved on deletion: `json-v2.json`'s history holds a deleted item's name.
    @Attribute(.preserveValueOnDeletion) public var name: String
    public var quantity: Int = 1
    public var weight: Double = 0
    public var trip: JSONSampleTrip?

    public init(name: String, quantity: Int = 1) {
        self.name = name
        self.quantity = quantity
    }
}

/// Helpers for the JSON store tests.
public enum JSONTest {
    /// A document path in a fresh directory.
    public static func freshURL() -> URL {
        LogTestDirectory.fresh().url.appendingPathComponent("store.json")
    }

    public static func configuration(
        _ url: URL, schema: Schema, fileSystem: (any StoreFileSystem)? = nil, maximumFileSize: Int? = nil
    ) -> JSONStoreConfiguration {
        var configuration = JSONStoreConfiguration(
            name: "json", schema: schema, fileURL: url,
            maximumFileSize: maximumFileSize ?? JSONStoreConfiguration.defaultMaximumFileSize)
        if let fileSystem { configuration.fileSystem = fileSystem }
        return configuration
    }

    public static func open(
        _ url: URL, schema: Schema, fileSystem: (any StoreFileSystem)? = nil, maximumFileSize: Int? = nil
    ) throws -> JSONStore {
        try JSONStore(
            configuration(url, schema: schema, fileSystem: fileSystem, maximumFileSize: maximumFileSize),
            migrationPlan: nil)
    }

    /// A snapshot of `entityName` with a temporary identifier; unnamed properties are
    /// `nil` (or empty, for to-many relationships).
    public static func snapshot(_ schema: Schema, _ entityName: String, _ values: [String: SnapshotValue])
        -> DefaultSnapshot
    {
        let entity = schema.entitiesByName[entityName]!
        return DefaultSnapshot(
            persistentIdentifier: .temporaryForTesting(entityName: entityName),
            values: entity.properties.map {
                values[$0.name]
                    ?? ($0.isRelationship && $0.relationship?.isToOneRelationship == false ? .array([]) : .null)
            })
    }

    /// Saves through the store's own path.
    @discardableResult
    public static func save(
        _ store: JSONStore, inserted: [DefaultSnapshot] = [], updated: [DefaultSnapshot] = [],
        deleted: [DefaultSnapshot] = [], author: String? = nil
    ) throws -> [PersistentIdentifier: PersistentIdentifier] {
        try store.save(
            DataStoreSaveChangesRequest<DefaultSnapshot>(
                editingState: EditingState(author: author), inserted: inserted, updated: updated, deleted: deleted)
        ).remappedIdentifiers
    }
}

/// Writes the JSON format sample deterministically.
public enum JSONSamples {
    public static let storeIdentifier = "json-00000000-0000-0000-0000-00000000501E"
    public static let schema = Schema([JSONSampleTrip.self, JSONSampleItem.self])
    public static let fileName = "json-v1.json"

    public static let historyFileName = "json-v2.json"

    /// Writes `json-v2.json` into `directory`: the same first save as `json-v1.json` by a
    /// store that keeps history, then Oslo's budget set and the charger deleted by
    /// "sampler": three transactions, at 1,790,000,000,000 ms and a second apart.
    public static func writeVersion2(to directory: URL) throws {
        let url = directory.appendingPathComponent(historyFileName)
        try? FileManager.default.removeItem(at: url)
        let tick = PosixMutex<Int64>(1_789_999_999_000)
        let clock: @Sendable () -> Int64 = {
            tick.withLock {
                $0 += 1000
                return $0
            }
        }
        try write(to: directory, fileName: historyFileName) { configuration in
            configuration.keepsHistory = true
            configuration.clock = clock
            configuration.historyWriter = (program: "stowage-samples", process: 4242)
        }
        try applyVersion2Changes(url, clock: clock)
        try? FileManager.default.removeItem(at: directory.appendingPathComponent(historyFileName + ".lock"))
    }

    private static func applyVersion2Changes(_ url: URL, clock: @escaping @Sendable () -> Int64) throws {
        var configuration = JSONTest.configuration(url, schema: schema)
        configuration.clock = clock
        configuration.historyWriter = (program: "stowage-samples", process: 4242)
        let store = try JSONStore(configuration, migrationPlan: nil)
        defer { store.close() }
        let trip = schema.entitiesByName["JSONSampleTrip"]!
        let itemName = schema.entitiesByName["JSONSampleItem"]!.property(named: "name")!.index
        var oslo = try store.allSnapshots(of: "JSONSampleTrip").first {
            $0.values[trip.property(named: "name")!.index] == .string("Oslo")
        }!
        oslo.values[trip.property(named: "budget")!.index] = .double(1200)
        _ = try JSONTest.save(store, updated: [oslo], author: "sampler")
        let charger = try store.allSnapshots(of: "JSONSampleItem").first { $0.values[itemName] == .string("Charger") }!
        var lisbon = try store.allSnapshots(of: "JSONSampleTrip").first {
            $0.values[trip.property(named: "name")!.index] == .string("Lisbon")
        }!
        let items = trip.property(named: "items")!.index
        if case .array(let references) = lisbon.values[items] {
            lisbon.values[items] = .array(references.filter { $0 != .identifier(charger.persistentIdentifier) })
        }
        _ = try JSONTest.save(store, updated: [lisbon], deleted: [charger], author: "sampler")
    }

    /// Writes `json-v1.json` into `directory`: two trips (every value kind), three items.
    public static func write(
        to directory: URL, fileName: String = fileName,
        configure: (inout JSONStoreConfiguration) -> Void = { _ in }
    ) throws {
        let url = directory.appendingPathComponent(fileName)
        try? FileManager.default.removeItem(at: url)
        do {
            var configuration = JSONTest.configuration(url, schema: schema)
            configuration.fixedStoreIdentifier = storeIdentifier
            configure(&configuration)
            let store = try JSONStore(configuration, migrationPlan: nil)
            defer { store.close() }
            let lisbon = JSONTest.snapshot(
                schema, "JSONSampleTrip",
                [
                    "name": .string("Lisbon"), "startDate": .date(Date(timeIntervalSince1970: 1_780_000_000.25)),
                    "budget": .double(900.5), "rating": .double(4.5), "note": .string("Tram 28, \"early\"\n"),
                    "code": .uuid(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!),
                    "website": .url(URL(string: "https://example.com/lisbon?day=1")!),
                    "photo": .data(Data([0, 1, 2, 254, 255])), "price": .decimal(Decimal(string: "1234.5600")!),
                    "visitors": .int(9_007_199_254_740_993), "capacity": .uint(.max),
                    "tags": .array([.string("sea"), .string("café")]),
                    "place": .object(["latitude": .double(38.7223), "longitude": .double(-9.1393)]),
                ])
            let oslo = JSONTest.snapshot(
                schema, "JSONSampleTrip",
                [
                    "name": .string("Oslo"), "startDate": .date(Date(timeIntervalSinceReferenceDate: 0.1)),
                    "budget": .double(-.infinity), "rating": .double(.nan),
                    "code": .uuid(UUID(uuidString: "00000000-0000-0000-0000-000000000001")!),
                    "photo": .data(Data()), "price": .decimal(Decimal(string: "-0.000000000000000000001")!),
                    "visitors": .int(.min), "capacity": .uint(0), "tags": .array([]),
                ])
            let items = [("Passport", 1, 0.1), ("Charger", 2, 0.25), ("Wool socks", 3, 1e-5)].map { name, n, weight in
                JSONTest.snapshot(
                    schema, "JSONSampleItem",
                    [
                        "name": .string(name), "quantity": .int(Int64(n)), "weight": .double(weight),
                        "trip": .identifier((name == "Wool socks" ? oslo : lisbon).persistentIdentifier),
                    ])
            }
            let itemsIndex = schema.entitiesByName["JSONSampleTrip"]!.property(named: "items")!.index
            var lisbonWithItems = lisbon
            lisbonWithItems.values[itemsIndex] = .array(items.prefix(2).map { .identifier($0.persistentIdentifier) })
            var osloWithItems = oslo
            osloWithItems.values[itemsIndex] = .array([.identifier(items[2].persistentIdentifier)])
            try JSONTest.save(store, inserted: [lisbonWithItems, osloWithItems] + items)
        }
        try? FileManager.default.removeItem(at: directory.appendingPathComponent(fileName + ".lock"))
    }
}
