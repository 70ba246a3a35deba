import Foundation
import StowageTestSupport
import Testing

@_spi(Testing) @testable import Stowage

/// Helpers shared by the JSON store tests.
enum JSONStoreTesting {
    static let schema = JSONSamples.schema
    static let trip = schema.entitiesByName["JSONSampleTrip"]!
    static let item = schema.entitiesByName["JSONSampleItem"]!

    static func names(_ store: JSONStore, _ entity: String = "JSONSampleTrip") throws -> [String] {
        let e = schema.entitiesByName[entity]!
        return try store.allSnapshots(of: entity).compactMap {
            if case .string(let name)? = $0.value(forKey: "name", in: e) { return name }
            return nil
        }.sorted()
    }

    static func trip(_ name: String, budget: Double = 0) -> DefaultSnapshot {
        JSONTest.snapshot(
            schema, "JSONSampleTrip",
            [
                "name": .string(name), "startDate": .date(Date(timeIntervalSince1970: 0)), "budget": .double(budget),
                "code": .uuid(UUID(uuidString: "00000000-0000-0000-0000-000000000002")!), "photo": .data(Data()),
                "price": .decimal(0), "visitors": .int(0), "capacity": .uint(0), "tags": .array([]),
            ])
    }

    static func bytes(_ url: URL) -> [UInt8] {
        (try? Data(contentsOf: url)).map { Array($0) } ?? []
    }
}

@Suite("JSONStore")
struct JSONStoreTests {
    typealias T = JSONStoreTesting

    /// Through a symbolic link, a save replaces the file the link leads to (its temporary
    /// file and rename beside that file), the link stays a link, and an open through the
    /// target is locked out while the store is open.
    @Test func aStoreOpenedThroughALinkSavesIntoTheFileItLeadsTo() throws {
        let url = JSONTest.freshURL()
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        try JSONTest.open(url, schema: T.schema).close()
        let links = url.deletingLastPathComponent().appendingPathComponent("links", isDirectory: true)
        try FileManager.default.createDirectory(at: links, withIntermediateDirectories: true)
        let link = links.appendingPathComponent("linked.json")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: url)
        let store = try JSONTest.open(link, schema: T.schema)
        #expect(throws: DataStoreError.storeLocked) { _ = try JSONTest.open(url, schema: T.schema) }
        try JSONTest.save(store, inserted: [T.trip("A")])
        let kind = try FileManager.default.attributesOfItem(atPath: link.path)[.type] as? FileAttributeType
        #expect(kind == .typeSymbolicLink, "the save replaced the link with a file")
        store.close()
        #expect(try T.names(try JSONTest.open(url, schema: T.schema)) == ["A"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: links.path) == ["linked.json"])
    }

    @Test func aSaveSurvivesReopeningWithStableIdentifiers() throws {
        let url = JSONTest.freshURL()
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        var ids: [PersistentIdentifier] = []
        let storeIdentifier: String
        do {
            let store = try JSONTest.open(url, schema: T.schema)
            storeIdentifier = store.identifier
            let map = try JSONTest.save(store, inserted: [T.trip("A"), T.trip("B")])
            ids = Array(map.values).sorted()
            store.close()
        }
        let reopened = try JSONTest.open(url, schema: T.schema)
        #expect(reopened.identifier == storeIdentifier)
        #expect(try T.names(reopened) == ["A", "B"])
        #expect(try reopened.snapshots(for: ids).count == 2)
        // New keys continue after the stored ones.
        let more = try JSONTest.save(reopened, inserted: [T.trip("C")])
        #expect(more.values.first!.primaryKey! > ids.map { $0.primaryKey! }.max()!)
    }

    @Test func externalStorageValuesStayInlineAndReopen() throws {
        let url = JSONTest.freshURL()
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        let schema = Schema([Photo.self])
        let bytes = Data((0..<700).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        do {
            let container = try ModelContainer(
                for: schema, configurations: [JSONStoreConfiguration(name: "photos", schema: schema, fileURL: url)])
            let context = ModelContext(container)
            context.insert(Photo(title: "Inline", bytes: bytes))
            try context.save()
        }
        let container = try ModelContainer(
            for: schema, configurations: [JSONStoreConfiguration(name: "photos", schema: schema, fileURL: url)])
        #expect(try ModelContext(container).fetch(FetchDescriptor<Photo>()).map(\.bytes) == [bytes])
        #expect(!FileManager.default.fileExists(atPath: url.path + ".blobs"))
    }

    @Test func twoSavesOfTheSameDataAreByteIdenticalAndOneFieldIsOneLine() throws {
        let a = LogTestDirectory.fresh()
        let b = LogTestDirectory.fresh()
        defer {
            a.remove()
            b.remove()
        }
        try JSONSamples.write(to: a.url)
        try JSONSamples.write(to: b.url)
        let first = T.bytes(a.url.appendingPathComponent(JSONSamples.fileName))
        #expect(!first.isEmpty && first == T.bytes(b.url.appendingPathComponent(JSONSamples.fileName)))

        // An update with the same values rewrites the same bytes; one changed field changes one line.
        let url = a.url.appendingPathComponent(JSONSamples.fileName)
        let store = try JSONTest.open(url, schema: T.schema)
        let lisbon = try store.allSnapshots(of: "JSONSampleTrip").first!
        try JSONTest.save(store, updated: [lisbon])
        #expect(T.bytes(url) == first)
        var changed = lisbon
        changed.values[T.trip.property(named: "budget")!.index] = .double(901)
        try JSONTest.save(store, updated: [changed])
        let before = String(decoding: first, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        let after = String(decoding: T.bytes(url), as: UTF8.self).split(
            separator: "\n", omittingEmptySubsequences: false)
        #expect(before.count == after.count)
        let differing = zip(before, after).filter { $0 != $1 }
        #expect(differing.count == 1)
        #expect(differing.first?.1.trimmingCharacters(in: .whitespaces) == "\"budget\": 901.0,")
    }

    @Test func aSecondOpenerGetsStoreLocked() throws {
        let url = JSONTest.freshURL()
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        let store = try JSONTest.open(url, schema: T.schema)
        #expect(throws: DataStoreError.storeLocked) { _ = try JSONTest.open(url, schema: T.schema) }
        store.close()
        _ = try JSONTest.open(url, schema: T.schema)
    }

    @Test func staleTemporaryFilesAreRemovedAtOpen() throws {
        let url = JSONTest.freshURL()
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        try JSONTest.open(url, schema: T.schema).close()
        let stale = url.path + ".tmp-deadbeef"
        try Data("{half a docu".utf8).write(to: URL(fileURLWithPath: stale))
        let store = try JSONTest.open(url, schema: T.schema)
        #expect(!FileManager.default.fileExists(atPath: stale))
        try JSONTest.save(store, inserted: [T.trip("A")])
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: url.deletingLastPathComponent().path)
        #expect(leftovers.sorted() == ["store.json", "store.json.lock"])
    }

    @Test func batchDeleteAndEraseRewriteTheDocument() throws {
        let url = JSONTest.freshURL()
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        let container = try ModelContainer(
            for: T.schema, configurations: [JSONTest.configuration(url, schema: T.schema)])
        let context = ModelContext(container)
        for name in ["a", "b", "c"] { context.insert(JSONSampleItem(name: name)) }
        try context.save()
        try context.delete(model: JSONSampleItem.self, where: #Predicate { $0.name != "b" })
        try context.save()
        #expect(try context.fetch(FetchDescriptor<JSONSampleItem>()).map(\.name) == ["b"])
        #expect(String(decoding: T.bytes(url), as: UTF8.self).contains("\"name\": \"b\""))
        #expect(!String(decoding: T.bytes(url), as: UTF8.self).contains("\"name\": \"a\""))
    }

    /// Random values of every kind survive a write and a read exactly.
    @Test func randomValuesRoundTripExactly() throws {
        var random = SeededRandom(seed: 0x4A53_4F4E)
        for _ in 0..<300 {
            let t = Double(bitPattern: random.next())
            let seconds = t.isFinite ? t : Double(Int64(bitPattern: random.next()) % 400_000_000_000) / 1000
            let date = Date(timeIntervalSinceReferenceDate: seconds)
            let double = Double(bitPattern: random.next())
            let values: [SnapshotValue] = [
                .date(date),
                .date(Date(timeIntervalSinceReferenceDate: Double(Int32(truncatingIfNeeded: random.next())) / 1000)),
                .double(double.isNaN ? 0 : double), .int(Int64(bitPattern: random.next())), .uint(random.next()),
                .string(
                    String(decoding: (0..<8).map { _ in UInt8(truncatingIfNeeded: random.next() % 128) }, as: UTF8.self)
                ),
                .data(Data((0..<Int(random.next() % 9)).map { _ in UInt8(truncatingIfNeeded: random.next()) })),
                .object(["$x": .int(1)]), .object(["a": .array([.null, .bool(true)])]),
                .decimal(Decimal(Int64(bitPattern: random.next())) / 1000),
            ]
            for value in values {
                var w = JSONWriter()
                JSONValueCodec.write(value, to: &w)
                let parsed = try JSONParser.parse(w.finish())
                let back = try JSONValueCodec.read(parsed, storeIdentifier: "s")
                #expect(back == value, "\(value)")
            }
        }
        #expect(JSONDates.iso8601(Date(timeIntervalSince1970: 1_234_567.875)) == "1970-01-15T06:56:07.875Z")
        #expect(JSONDates.parse("2000-02-29T23:59:59.5Z") == Date(timeIntervalSince1970: 951_868_799.5))
        #expect(JSONDates.parse("2001-02-29T00:00:00Z") == nil)
    }

    /// Save cost grows with the store (for the report; not a timing assertion).
    @Test func aSaveRewritesTheWholeDocument() throws {
        let url = JSONTest.freshURL()
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        let store = try JSONTest.open(url, schema: T.schema)
        try JSONTest.save(store, inserted: (0..<200).map { T.trip("T\($0)") })
        let size = T.bytes(url).count
        try JSONTest.save(store, inserted: [T.trip("one more")])
        #expect(T.bytes(url).count > size)
    }
}

/// Save cost at 1k, 10k and 100k rows, printed (`STOWAGE_JSON_BENCH=1 swift test --filter
/// JSONSaveCost`). Not run by default, and it asserts nothing about time.
@Suite("JSONStore save cost", .enabled(if: ProcessInfo.processInfo.environment["STOWAGE_JSON_BENCH"] == "1"))
struct JSONSaveCost {
    @Test func printSaveCost() throws {
        for rows in [1_000, 10_000, 100_000] {
            let url = JSONTest.freshURL()
            defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
            let store = try JSONTest.open(url, schema: JSONStoreTesting.schema)
            try JSONTest.save(
                store, inserted: (0..<rows).map { JSONStoreTesting.trip("Trip \($0)", budget: Double($0)) })
            let clock = ContinuousClock()
            let saves = 5
            let elapsed = try clock.measure {
                for i in 0..<saves { try JSONTest.save(store, inserted: [JSONStoreTesting.trip("extra \(i)")]) }
            }
            store.close()
            let open = try clock.measure { _ = try JSONTest.open(url, schema: JSONStoreTesting.schema) }
            let size = (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int) ?? 0
            print("JSONStore \(rows) rows: \(size) bytes, one-row save \(elapsed / saves), open \(open)")
        }
    }
}
