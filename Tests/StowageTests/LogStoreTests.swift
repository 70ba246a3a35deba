import Foundation
import StowageTestSupport
import Testing

@_spi(Testing) @testable import Stowage

/// Helpers shared by the log store tests.
enum LogTest {
    static let schema = Schema([Trip.self])

    static func configuration(
        _ url: URL, schema: Schema = schema, recovery: LogStoreConfiguration.Recovery = .pointInTime,
        durability: LogStoreConfiguration.Durability = .full, fileSystem: (any StoreFileSystem)? = nil
    ) -> LogStoreConfiguration {
        var configuration = LogStoreConfiguration(schema: schema, url: url, durability: durability, recovery: recovery)
        if let fileSystem { configuration.fileSystem = fileSystem }
        return configuration
    }

    static func open(
        _ url: URL, schema: Schema = schema, recovery: LogStoreConfiguration.Recovery = .pointInTime,
        fileSystem: (any StoreFileSystem)? = nil
    ) throws -> LogStore {
        try LogStore(configuration(url, schema: schema, recovery: recovery, fileSystem: fileSystem), migrationPlan: nil)
    }

    static func container(_ url: URL, schema: Schema = schema) throws -> ModelContainer {
        try ModelContainer(for: schema, configurations: [configuration(url, schema: schema)])
    }

    /// Every record of every entity, for comparing whole states.
    static func state(_ store: LogStore) throws -> [String: [DefaultSnapshot]] {
        try Dictionary(
            uniqueKeysWithValues: store.schema.entities.map { ($0.name, try store.allSnapshots(of: $0.name)) })
    }

    static func tripNames(_ store: LogStore) throws -> [String] {
        let entity = store.schema.entitiesByName["Trip"]!
        return try store.allSnapshots(of: "Trip").compactMap {
            if case .string(let name)? = $0.value(forKey: "name", in: entity) { return name }
            return nil
        }.sorted()
    }

    /// Inserts a trip through the store's own save path.
    @discardableResult
    static func insertTrip(_ store: LogStore, _ name: String, destination: String = "") throws -> PersistentIdentifier {
        let entity = store.schema.entitiesByName["Trip"]!
        var values = entity.properties.map { p -> SnapshotValue in p.isRelationship ? .array([]) : .null }
        values[entity.property(named: "name")!.index] = .string(name)
        values[entity.property(named: "destination")!.index] = .string(destination)
        values[entity.property(named: "startDate")!.index] = .date(Date(timeIntervalSince1970: 0))
        values[entity.property(named: "budget")!.index] = .double(Double(name.count))
        values[entity.property(named: "isFavorite")!.index] = .bool(false)
        let temporary = PersistentIdentifier.temporaryForTesting(entityName: "Trip")
        let result = try store.save(
            DataStoreSaveChangesRequest<DefaultSnapshot>(
                editingState: EditingState(),
                inserted: [DefaultSnapshot(persistentIdentifier: temporary, values: values)],
                updated: [], deleted: []))
        return result.remappedIdentifiers[temporary]!
    }

    static func deleteTrip(_ store: LogStore, _ id: PersistentIdentifier) throws {
        let snapshot = try #require(try store.snapshots(for: [id])[id])
        _ = try store.save(
            DataStoreSaveChangesRequest<DefaultSnapshot>(
                editingState: EditingState(), inserted: [], updated: [], deleted: [snapshot]))
    }

    static func updateBudget(_ store: LogStore, _ id: PersistentIdentifier, _ budget: Double) throws {
        var snapshot = try #require(try store.snapshots(for: [id])[id])
        snapshot.values[store.schema.entitiesByName["Trip"]!.property(named: "budget")!.index] = .double(budget)
        _ = try store.save(
            DataStoreSaveChangesRequest<DefaultSnapshot>(
                editingState: EditingState(), inserted: [], updated: [snapshot], deleted: []))
    }

    static func fileMode(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path)[.posixPermissions]) as? NSNumber)?.intValue ?? -1
    }
}

@Suite("LogStore basics")
struct LogStoreTests {
    /// What a large store's closing calls: free pages in the middle of the heap go back to
    /// the system, which glibc's `free` alone does not do. Not under AddressSanitizer or
    /// ThreadSanitizer, whose allocators replace glibc's (`malloc_trim` has nothing to trim;
    /// AddressSanitizer holds freed memory in quarantine by design).
    @Test(.disabled(if: Sanitizers.address || Sanitizers.thread, "a sanitizer's allocator is not glibc's"))
    func releasingFreedMemoryLowersTheResidentSize() throws {
        func residentBytes() throws -> Int {
            let status = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
            let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") })
            return try #require(line.split(separator: " ").compactMap { Int($0) }.first) * 1024
        }
        var blocks: [[UInt8]] = (0..<200_000).map { i in [UInt8](repeating: UInt8(truncatingIfNeeded: i), count: 1000) }
        // A block made after them keeps the heap from shrinking at its top alone.
        let pin = [UInt8](repeating: 7, count: 1000)
        #expect(blocks.count == 200_000)
        blocks = []
        let before = try residentBytes()
        releaseFreedMemory()
        let after = try residentBytes()
        #expect(before - after > 100 << 20, "resident \(before >> 20) MiB before, \(after >> 20) MiB after")
        #expect(pin.count == 1000)
    }

    @Test func reopenKeepsEverythingWithStableIdentifiers() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        var tripID: PersistentIdentifier?
        var itemIDs: [PersistentIdentifier] = []
        do {
            let container = try LogTest.container(directory.storeURL)
            let context = ModelContext(container)
            let trip = Trip(name: "Lisbon", destination: "PT")
            trip.budget = 1200.5
            trip.place = Place(latitude: 38.7, longitude: -9.1)
            context.insert(trip)
            for name in ["Passport", "Charger", "Hat"] {
                context.insert(Item(name: name, category: .documents, trip: trip))
            }
            try context.save()
            tripID = trip.persistentModelID
            itemIDs = trip.items.map(\.persistentModelID).sorted()
            trip.budget = 1500
            context.delete(trip.items.first { $0.name == "Hat" }!)
            try context.save()
            itemIDs = trip.items.map(\.persistentModelID).sorted()
        }
        let reopened = try LogTest.container(directory.storeURL)
        let context = ModelContext(reopened)
        let trips = try context.fetch(FetchDescriptor<Trip>())
        #expect(trips.count == 1)
        let trip = try #require(trips.first)
        #expect(trip.persistentModelID == tripID)
        #expect(trip.budget == 1500)
        #expect(trip.place == Place(latitude: 38.7, longitude: -9.1))
        #expect(trip.items.map(\.name).sorted() == ["Charger", "Passport"])
        #expect(trip.items.map(\.persistentModelID).sorted() == itemIDs)
        // New keys never reuse old ones.
        context.insert(Trip(name: "Oslo"))
        try context.save()
        let keys =
            try context.fetch(FetchDescriptor<Item>()).compactMap(\.persistentModelID.primaryKey)
            + [
                try context.fetch(FetchDescriptor<Trip>(predicate: #Predicate { $0.name == "Oslo" })).first!
                    .persistentModelID.primaryKey!
            ]
        #expect(Set(keys).count == keys.count)
    }

    @Test func everyValueTypeSurvivesTheFile() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let schema = Schema([Sample.self])
        var before: [DefaultSnapshot] = []
        do {
            let container = try LogTest.container(directory.storeURL, schema: schema)
            let context = ModelContext(container)
            let sample = Sample()
            sample.int8 = -7
            sample.uint64 = .max
            sample.double = -.infinity
            sample.float = 1.5
            sample.string = "héllo ✈︎ \u{0}"
            sample.date = Date(timeIntervalSinceReferenceDate: 123_456.789)
            sample.data = Data([0, 1, 2, 255])
            sample.url = URL(string: "https://example.com/a%20b?q=1")!
            sample.decimal = Decimal(string: "-12345678901234567890.123")!
            sample.optionalInt = 42
            sample.array = ["a", "b"]
            sample.set = [3, 1, 2]
            sample.dictionary = ["x": 1, "y": 2]
            sample.intKeyed = [1: "one"]
            sample.category = .documents
            sample.reminder = .before(days: 3)
            sample.place = Place(latitude: 1, longitude: 2)
            sample.places = [Place(latitude: 3, longitude: 4)]
            context.insert(sample)
            context.insert(Sample())
            try context.save()
            let store = try #require(container.storesForTesting.first as? LogStore)
            before = try store.allSnapshots(of: "Sample")
        }
        let store = try LogTest.open(directory.storeURL, schema: schema)
        #expect(try store.allSnapshots(of: "Sample") == before)
    }

    /// A store opened through a symbolic link is the file the link leads to: an open through
    /// the target is locked out (with a lock beside each name both could write), and a
    /// compaction replaces the file, leaving the link a link.
    @Test func aStoreOpenedThroughALinkIsTheFileItLeadsTo() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let elsewhere = directory.url.appendingPathComponent("links", isDirectory: true)
        try FileManager.default.createDirectory(at: elsewhere, withIntermediateDirectories: true)
        let link = elsewhere.appendingPathComponent("linked.stowlog")
        let real = directory.storeURL
        try LogTest.open(real).close()
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: real)

        let store = try LogTest.open(link)
        for i in 0..<6 { try LogTest.insertTrip(store, "T\(i)") }
        do {
            _ = try LogTest.open(real)
            Issue.record("an open through the link's target should be locked out")
        } catch let error as DataStoreError {
            #expect(error.code == .storeLocked, "\(error)")
        }
        try store.compact()
        let kind = try FileManager.default.attributesOfItem(atPath: link.path)[.type] as? FileAttributeType
        #expect(kind == .typeSymbolicLink, "compaction replaced the link with a file")
        #expect(!FileManager.default.fileExists(atPath: link.path + ".lock"))
        store.close()
        let reopened = try LogTest.open(real)
        #expect(try LogTest.tripNames(reopened).sorted() == (0..<6).map { "T\($0)" })
    }

    @Test func aSecondOpenInTheSameProcessIsLocked() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let first = try LogTest.open(directory.storeURL)
        do {
            _ = try LogTest.open(directory.storeURL)
            Issue.record("the second open should have thrown")
        } catch let error as DataStoreError {
            #expect(error.code == .storeLocked)
            #expect(error.message.contains(directory.storeURL.path))
        }
        first.close()
        _ = try LogTest.open(directory.storeURL)
    }

    @Test func filesAreCreatedWithMode0600() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let store = try LogTest.open(directory.storeURL)
        try LogTest.insertTrip(store, "A")
        #expect(LogTest.fileMode(directory.storeURL.path) == 0o600)
        #expect(LogTest.fileMode(directory.storeURL.path + ".lock") == 0o600)
        try store.compact()
        #expect(LogTest.fileMode(directory.storeURL.path) == 0o600)
    }

    @Test(arguments: ["garbage", "empty", "sqlite", "future version", "short magic", "magic as text"])
    func aFileOfAnotherKindIsRefusedAndLeftUntouched(kind: String) throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        var random = SeededRandom(seed: 4)
        let bytes: [UInt8]
        switch kind {
        case "garbage": bytes = (0..<500).map { _ in UInt8.random(in: 0...255, using: &random) }
        case "empty": bytes = []
        case "sqlite": bytes = Array("SQLite format 3\0".utf8) + [UInt8](repeating: 0, count: 84)
        case "short magic": bytes = Array("STOW".utf8)
        // A text file that begins with the magic's letters: its newline is not the zero byte.
        case "magic as text": bytes = Array("STOWLOG\nnotes of a trip\n".utf8)
        default:
            var header = Array("STOWLOG\0".utf8) + [9, 0] + [UInt8](repeating: 0, count: 22)
            header += [0, 0, 0, 0]
            bytes = header
        }
        try Data(bytes).write(to: directory.storeURL)
        let expected: DataStoreError.Code = kind == "short magic" ? .corruptStore : .wrongFormat
        do {
            _ = try LogTest.open(directory.storeURL)
            Issue.record("opening \(kind) should have thrown")
        } catch let error as DataStoreError {
            #expect(error.code == expected, "\(error)")
            if kind == "magic as text" {
                // The error shows what the file starts with, so the near miss is plain.
                #expect(error.message.contains(#"starts with "STOWLOG\n""#), "\(error)")
                #expect(error.message.contains("zero byte"), "\(error)")
            }
        }
        #expect(try Data(contentsOf: directory.storeURL) == Data(bytes))
    }

    @Test func aDifferentSchemaIsRefusedNamingTheDifference() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        try LogTest.insertTrip(try LogTest.open(directory.storeURL), "A")
        do {
            _ = try LogTest.open(directory.storeURL, schema: Schema([Person.self]))
            Issue.record("should have thrown")
        } catch let error as DataStoreError {
            #expect(error.code == .schemaMismatch)
            #expect(error.message.contains("Person"))
        }
        do {
            _ = try LogTest.open(directory.storeURL, schema: Schema([Trip.self], version: Schema.Version(2, 0, 0)))
            Issue.record("should have thrown")
        } catch let error as DataStoreError {
            #expect(error.code == .schemaMismatch)
            #expect(error.message.contains("2.0.0"))
        }
        // Entity order does not matter.
        let reordered = try LogTest.open(directory.storeURL, schema: Schema([Badge.self, Item.self, Trip.self]))
        #expect(try LogTest.tripNames(reordered) == ["A"])
    }

    @Test func compactionKeepsLiveRecordsAndShrinksTheFile() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let store = try LogTest.open(directory.storeURL)
        var ids: [PersistentIdentifier] = []
        for i in 0..<40 {
            ids.append(try LogTest.insertTrip(store, "Trip \(i)", destination: String(repeating: "d", count: 50)))
        }
        for id in ids.prefix(30) { try LogTest.deleteTrip(store, id) }
        try LogTest.updateBudget(store, ids[35], 99)
        let before = try LogTest.state(store)
        let sizeBefore = store.fileLength
        try store.compact()
        #expect(store.fileLength < sizeBefore / 3)
        #expect(try LogTest.state(store) == before)
        #expect(!FileManager.default.fileExists(atPath: directory.storeURL.path + ".compact"))
        let next = try LogTest.insertTrip(store, "After")
        #expect(next.primaryKey! > ids.last!.primaryKey!)
        store.close()
        let reopened = try LogTest.open(directory.storeURL)
        var expected = before
        expected["Trip", default: []].append(try #require(try reopened.snapshots(for: [next])[next]))
        #expect(try LogTest.state(reopened) == expected)
        #expect(reopened.lastRecovery == nil)
        // Compacting a store whose records were all deleted keeps its next key.
        for id in ids.suffix(10) + [next] { try LogTest.deleteTrip(reopened, id) }
        try reopened.compact()
        reopened.close()
        let empty = try LogTest.open(directory.storeURL)
        #expect(empty.recordCount == 0)
        #expect(try LogTest.insertTrip(empty, "Fresh").primaryKey! > next.primaryKey!)
    }

    @Test func eraseEmptiesTheFileDurably() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let container = try LogTest.container(directory.storeURL)
        let context = ModelContext(container)
        context.insert(Trip(name: "Gone"))
        try context.save()
        try container.erase()
        #expect(try ModelContext(container).fetchCount(FetchDescriptor<Trip>()) == 0)
        let store = try #require(container.storesForTesting.first as? LogStore)
        store.close()
        #expect(try LogTest.open(directory.storeURL).recordCount == 0)
    }

    @Test func relaxedDurabilityStillSavesWholeCommits() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        do {
            let store = try LogStore(
                LogTest.configuration(directory.storeURL, durability: .relaxed), migrationPlan: nil)
            for i in 0..<5 { try LogTest.insertTrip(store, "R\(i)") }
        }
        #expect(try LogTest.tripNames(try LogTest.open(directory.storeURL)) == (0..<5).map { "R\($0)" })
    }

    @Test func concurrentSavesAllLand() async throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let store = try LogStore(LogTest.configuration(directory.storeURL, durability: .relaxed), migrationPlan: nil)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<4 {
                group.addTask {
                    for i in 0..<25 { try LogTest.insertTrip(store, "w\(worker)-\(i)") }
                }
            }
            try await group.waitForAll()
        }
        #expect(store.recordCount == 100)
        store.close()
        #expect(try LogTest.open(directory.storeURL).recordCount == 100)
    }

    @Test func aValueNestedTooDeeplyIsRefusedAtSave() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let store = try LogTest.open(directory.storeURL)
        let entity = store.schema.entitiesByName["Trip"]!
        var deep = SnapshotValue.null
        for _ in 0..<100 { deep = .array([deep]) }
        var values = entity.properties.map { _ in SnapshotValue.null }
        values[entity.property(named: "place")!.index] = deep
        #expect(throws: SwiftDataError.unsupportedValue) {
            _ = try store.save(
                DataStoreSaveChangesRequest<DefaultSnapshot>(
                    editingState: EditingState(),
                    inserted: [
                        DefaultSnapshot(persistentIdentifier: .temporaryForTesting(entityName: "Trip"), values: values)
                    ],
                    updated: [], deleted: []))
        }
        #expect(store.recordCount == 0)
        try LogTest.insertTrip(store, "Still fine")
    }
}

@Suite("LogStore encoding")
struct LogEncodingTests {
    @Test func crc32cMatchesKnownVectors() {
        #expect(CRC32C.checksum(Array("123456789".utf8)) == 0xE306_9283)
        #expect(CRC32C.checksum([UInt8](repeating: 0, count: 32)) == 0x8A91_36AA)
        #expect(CRC32C.checksum([UInt8](repeating: 0xFF, count: 32)) == 0x62A8_AB43)
        #expect(CRC32C.checksum(Array(0..<32)) == 0x46DD_794E)
        let split = CRC32C.update(CRC32C.update(0, Array("12345".utf8)), Array("6789".utf8))
        #expect(split == 0xE306_9283)
        for value: UInt32 in [0, 1, 0xE306_9283, .max] { #expect(CRC32C.unmask(CRC32C.mask(value)) == value) }
    }

    /// The CRC of two pieces combined is the CRC of the whole, for pieces of every small
    /// length and some large ones, empty ones included.
    @Test func crc32cCombinesPieces() {
        var rng = SeededRandom.fromEnvironment()
        let seed = rng.seed
        let bytes = (0..<70_000).map { _ in UInt8.random(in: 0...255, using: &rng) }
        let whole = CRC32C.checksum(bytes)
        for split in Array(0..<40) + [255, 256, 4097, 65_536, 69_999, 70_000] {
            let a = CRC32C.checksum(Array(bytes[..<split]))
            let b = CRC32C.checksum(Array(bytes[split...]))
            #expect(CRC32C.combine(a, b, lengthB: bytes.count - split) == whole, "seed \(seed), split at \(split)")
        }
        // Three pieces, combined left to right.
        let (x, y, z) = (Array(bytes[..<1000]), Array(bytes[1000..<1003]), Array(bytes[1003...]))
        let xy = CRC32C.combine(CRC32C.checksum(x), CRC32C.checksum(y), lengthB: y.count)
        #expect(CRC32C.combine(xy, CRC32C.checksum(z), lengthB: z.count) == whole, "seed \(seed)")
        // Lengths past 32 bits: shifting over 2L zero bytes is shifting over L twice.
        let crc: UInt32 = 0xE306_9283
        for length in [1 << 31, 3_000_000_007, 1 << 40] {
            let once = CRC32C.combine(crc, 0, lengthB: length)
            #expect(CRC32C.combine(once, 0, lengthB: length) == CRC32C.combine(crc, 0, lengthB: 2 * length))
            #expect(once != crc)
        }
    }

    /// The CPU's instruction and the tables agree at every length around the 8-byte steps,
    /// from every start within a word, and when a CRC is continued across pieces.
    @Test func crc32cInstructionMatchesTables() {
        var rng = SeededRandom.fromEnvironment()
        let seed = rng.seed
        let bytes = (0..<4200).map { _ in UInt8.random(in: 0...255, using: &rng) }
        bytes.withUnsafeBytes { all in
            for start in 0..<8 {
                for length in Array(0..<70) + [511, 4096, 4192] {
                    let piece = UnsafeRawBufferPointer(rebasing: all[start..<start + length])
                    #expect(
                        CRC32C.update(0, piece) == CRC32C.tableUpdate(0, piece),
                        "seed \(seed), start \(start), length \(length)")
                    let crc: UInt32 = 0x1234_5678
                    #expect(
                        CRC32C.update(crc, piece) == CRC32C.tableUpdate(crc, piece),
                        "seed \(seed), start \(start), length \(length)")
                }
            }
        }
        // A platform without the instruction runs the tables for both, and this test says nothing.
        if !CRC32C.usesHardware { print("CRC32C: no CRC instruction on this CPU; only the tables ran") }
    }

    /// Strings are read back by decoding and comparing (`LogByteReader.validString`): it
    /// must accept and refuse exactly what `String(validating:as:)` does, on ASCII, valid
    /// multi-byte text, and bad sequences (stray continuation bytes, truncated sequences,
    /// overlong encodings, surrogates, bytes past U+10FFFF), at every offset in a buffer.
    @Test func stringsAreValidatedAsTheStandardLibraryDoes() {
        let cases: [[UInt8]] = [
            [], Array("Wool socks".utf8), Array("Zürich ✈︎ 東京 🧳".utf8), [0x80], [0x41, 0xBF, 0x42], [0xC3],
            [0xE2, 0x9C], [0xF0, 0x9F, 0xA7], [0xC0, 0x80], [0xE0, 0x80, 0x80], [0xED, 0xA0, 0x80],
            [0xF4, 0x90, 0x80, 0x80], [0xFF], Array("eight by".utf8) + [0xC3] + Array("tes more".utf8),
        ]
        var random = SeededRandom(seed: 31)
        var all = cases
        for _ in 0..<3000 {
            // Mostly valid text with, now and then, a random byte in it.
            var bytes = Array(
                String(
                    (0..<Int.random(in: 0..<24, using: &random)).map { _ in "aZ9é✈東🧳".randomElement(using: &random)! }
                )
                .utf8)
            if !bytes.isEmpty, Bool.random(using: &random) {
                bytes[Int.random(in: 0..<bytes.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
            }
            all.append(bytes)
        }
        for bytes in all {
            let padded = [0x61, 0xE2] + bytes + [0x9C]
            let expected = String(validating: bytes, as: UTF8.self)
            #expect(LogByteReader.validString(padded, 2..<(2 + bytes.count)) == expected, "\(bytes)")
            #expect(bytes.withUnsafeBytes { LogByteReader.isASCII($0) } == bytes.allSatisfy { $0 < 0x80 })
        }
    }

    @Test func varintsAndZigzagRoundTrip() throws {
        var random = SeededRandom(seed: 11)
        var writer = LogByteWriter()
        var values: [Int64] = [0, 1, -1, 63, -64, 64, .max, .min]
        for _ in 0..<500 { values.append(Int64(bitPattern: random.next()) >> Int64.random(in: 0...63, using: &random)) }
        for v in values {
            writer.zigzag(v)
            writer.varint(UInt64(bitPattern: v))
        }
        var reader = LogByteReader(writer.bytes)
        for v in values {
            #expect(try reader.zigzag() == v)
            #expect(try reader.varint() == UInt64(bitPattern: v))
        }
        #expect(reader.isAtEnd)
        var overlong = LogByteReader([UInt8](repeating: 0xFF, count: 10) + [1])
        #expect(throws: LogDecodeError.self) { _ = try overlong.varint() }
        var lying = LogByteReader([0x90, 0x4E])  // a count of 10000 with 0 bytes left
        #expect(throws: LogDecodeError.self) { _ = try lying.count() }
    }

    static func randomValue(_ random: inout SeededRandom, depth: Int = 0, map: LogEntityMap) -> SnapshotValue {
        switch Int.random(in: 0..<(depth > 2 ? 13 : 16), using: &random) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &random))
        case 2: return .int(Int64(bitPattern: random.next()))
        case 3: return .uint(random.next())
        case 4: return .double(Double(bitPattern: random.next()))
        case 5:
            return .string(
                String((0..<Int.random(in: 0..<20, using: &random)).map { _ in "aé✈︎z".randomElement(using: &random)! }))
        case 6:
            return .date(
                Date(timeIntervalSinceReferenceDate: Double(Int32.random(in: .min ... .max, using: &random)) / 7))
        case 7:
            return .data(
                Data(
                    (0..<Int.random(in: 0..<30, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) })
            )
        case 8: return .uuid(UUID())
        case 9: return .url(URL(string: "https://h/\(random.next())")!)
        case 10: return .decimal(Decimal(Int.random(in: -100_000...100_000, using: &random)) / 1000)
        case 11:
            return .identifier(
                .permanent(
                    entityName: map.names[0], storeIdentifier: map.storeIdentifier,
                    primaryKey: Int64.random(in: 1...1000, using: &random)))
        case 12: return .identifier(.permanent(entityName: "Elsewhere", storeIdentifier: "other", primaryKey: 5))
        case 13, 14:
            return .array(
                (0..<Int.random(in: 0..<4, using: &random)).map { _ in randomValue(&random, depth: depth + 1, map: map)
                })
        default:
            var object: [String: SnapshotValue] = [:]
            for i in 0..<Int.random(in: 0..<4, using: &random) {
                object["k\(i)"] = randomValue(&random, depth: depth + 1, map: map)
            }
            return .object(object)
        }
    }

    /// `==`, except that doubles compare by bit pattern (a NaN, at any depth, equals
    /// itself) and NaN decimals equal each other.
    static func identical(_ a: SnapshotValue, _ b: SnapshotValue) -> Bool {
        switch (a, b) {
        case (.double(let x), .double(let y)): return x.bitPattern == y.bitPattern
        case (.decimal(let x), .decimal(let y)) where x.isNaN || y.isNaN: return x.isNaN && y.isNaN
        case (.array(let x), .array(let y)):
            return x.count == y.count && zip(x, y).allSatisfy { identical($0, $1) }
        case (.object(let x), .object(let y)):
            return x.count == y.count && x.allSatisfy { key, value in y[key].map { identical(value, $0) } ?? false }
        default: return a == b
        }
    }

    @Test func everyValueCaseRoundTripsThroughTheCodec() throws {
        var random = SeededRandom.fromEnvironment()
        let seed = random.seed
        let map = LogEntityMap(storeIdentifier: "log-test", description: StoredSchema(LogTest.schema))
        for _ in 0..<2000 {
            let value = Self.randomValue(&random, map: map)
            var writer = LogByteWriter()
            try LogCodec.encodeValue(value, into: &writer, map: map)
            var reader = LogByteReader(writer.bytes)
            let back = try LogCodec.decodeValue(&reader, map: map, depth: 0)
            let same = Self.identical(value, back)
            #expect(same && reader.isAtEnd, "seed \(seed): \(value) came back as \(back)")
            if !same { break }
        }
    }

    /// An identifier with a non-integer key has no encoding (`Formats/snapshot.md`): the
    /// codec refuses it, nested too, rather than write something that reads back wrong.
    @Test func aNonIntegerKeyedIdentifierIsRefusedNotWritten() throws {
        let map = LogEntityMap(storeIdentifier: "log-test", description: StoredSchema(LogTest.schema))
        let keyed = try PersistentIdentifier.identifier(for: "custom", entityName: "Trip", primaryKey: UUID())
        for value in [SnapshotValue.identifier(keyed), .array([.int(1), .identifier(keyed)])] {
            var writer = LogByteWriter()
            #expect(throws: DataStoreError.unsupportedFeature) {
                try LogCodec.encodeValue(value, into: &writer, map: map)
            }
        }
    }

    @Test func lz4RoundTripsAndRefusesBadInput() throws {
        let text = Array(String(repeating: "Wool socks, pair. ", count: 50).utf8)
        let compressed = try #require(LZ4Block.compress(text))
        #expect(compressed.count < text.count)
        #expect(LZ4Block.decompress(compressed, length: text.count) == text)
        #expect(LZ4Block.decompress(compressed, length: text.count - 1) == nil)
        #expect(LZ4Block.compress((0..<40).map { UInt8($0) }) == nil)
        var random = SeededRandom(seed: 3)
        for _ in 0..<200 {
            let junk = (0..<Int.random(in: 1..<100, using: &random)).map { _ in
                UInt8.random(in: 0...255, using: &random)
            }
            _ = LZ4Block.decompress(junk, length: Int.random(in: 0..<1000, using: &random))
        }
    }

    /// The writer's acceleration changes only how hard LZ4 looks for matches: blocks made
    /// at every acceleration, the old writer's 1 among them, decompress to the same bytes,
    /// and blocks of records (repeated names among random bytes) still get shorter.
    @Test func lz4BlocksOfEveryAccelerationReadBackTheSame() throws {
        var random = SeededRandom(seed: 11)
        var records: [UInt8] = []
        for i in 0..<300 {
            records += Array("Destination \(i % 100)".utf8)
            records += (0..<40).map { _ in UInt8.random(in: 97...122, using: &random) }
        }
        for acceleration: Int32 in [1, 2, LZ4Block.acceleration, 8] {
            let compressed = try #require(LZ4Block.compress(records, acceleration: acceleration))
            #expect(compressed.count < records.count, "acceleration \(acceleration)")
            #expect(LZ4Block.decompress(compressed, length: records.count) == records)
        }
        let written = try #require(LZ4Block.compress(records))
        #expect(LZ4Block.decompress(written, length: records.count) == records)
        #expect(LZ4Block.acceleration(forLength: records.count) == LZ4Block.acceleration)
        #expect(LZ4Block.acceleration(forLength: 4095) == 1)
    }
}
