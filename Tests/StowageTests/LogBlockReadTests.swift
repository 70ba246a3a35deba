import Foundation
import StowageTestSupport
import Testing

@_spi(Testing) @testable import Stowage

/// A model whose index covers an external-storage attribute.
@Model
final class IndexedBlob {
    var label: String
    @Attribute(.externalStorage) var bytes: Data
    #Index<IndexedBlob>([\.bytes])

    init(label: String, bytes: Data) {
        self.label = label
        self.bytes = bytes
    }
}

/// Format version 4: records held by location and read back one block at a time, through
/// a bounded cache; checkpoints that carry the key directory.
@Suite("LogStore reads by location (format version 4)")
struct LogBlockReadTests {
    static let schema = Schema([Person.self, Chore.self])

    static func open(
        _ url: URL, cacheCapacity: Int = 32 << 20, checkpointOnClose: Bool = true, blockBytes: Int? = nil,
        mapsFile: Bool = true
    ) throws -> (container: ModelContainer, store: LogStore) {
        var configuration = LogStoreConfiguration(schema: schema, url: url)
        configuration.cacheCapacity = cacheCapacity
        configuration.readsThroughMapping = mapsFile
        if let blockBytes { configuration.blockBytes = blockBytes }
        configuration.checkpoints = checkpointOnClose ? .init(minimumCommitBytes: 0) : nil
        configuration.automaticCompaction = nil
        let container = try ModelContainer(for: schema, configurations: [configuration])
        return (container, try #require(container.storesForTesting.first as? LogStore))
    }

    static func insertPeople(_ count: Int, into container: ModelContainer) throws {
        let context = ModelContext(container)
        for i in 0..<count {
            context.insert(Person(email: "p\(i)@example.com", name: "Name \(i % 97)", age: i % 90))
        }
        try context.save()
    }

    /// A store of `count` people, closed (so it ends with a checkpoint).
    static func writePeople(_ count: Int, at url: URL) throws {
        let (container, store) = try open(url)
        try insertPeople(count, into: container)
        store.close()
    }

    /// The blocks that hold the people, by file offset.
    static func personBlocks(_ store: LogStore) -> Set<Int64> {
        store.withTable { table in
            Set(
                table.entities["Person"]?.rows.compactMap { row -> Int64? in
                    guard case .location(let location) = row.value else { return nil }
                    return location.blockOffset
                } ?? [])
        }
    }

    /// The key and location of the first person stored by location in `slot` of its block.
    static func firstPerson(inSlot slot: Int, of store: LogStore) -> (Int64, RecordLocation)? {
        store.withTable { table in
            table.entities["Person"]?.rows.lazy.compactMap { row -> (Int64, RecordLocation)? in
                guard case .location(let location) = row.value, location.slot == slot else { return nil }
                return (row.key, location)
            }.first
        }
    }

    static func emails(_ store: LogStore) throws -> [String] {
        let entity = schema.entitiesByName["Person"]!
        return try store.allSnapshots(of: "Person").compactMap {
            if case .string(let email)? = $0.value(forKey: "email", in: entity) { return email }
            return nil
        }
    }

    @Test func aPointFetchReadsOneBlockAndTheCacheAnswersTheNext() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        try Self.writePeople(5000, at: directory.storeURL)
        let (container, store) = try Self.open(directory.storeURL, cacheCapacity: 1 << 20)
        #expect(store.openedFromCheckpoint)
        // Opening from the checkpoint decoded no record.
        #expect(store.readStatistics.blockReads == 0)
        let context = ModelContext(container)
        let found = try context.fetch(
            FetchDescriptor<Person>(predicate: #Predicate { $0.email == "p4321@example.com" }))
        #expect(found.map(\.age) == [4321 % 90])
        #expect(store.readStatistics.blockReads == 1)
        let neighbour = try context.fetch(
            FetchDescriptor<Person>(predicate: #Predicate { $0.email == "p4322@example.com" }))
        #expect(neighbour.map(\.age) == [4322 % 90])
        #expect(store.readStatistics.blockReads == 1)
        // 5000 records take many blocks: a point fetch read one of them.
        let byLocation = store.withTable { table in
            table.entities["Person"]?.rows.filter { if case .location = $0.value { true } else { false } }.count
        }
        #expect(byLocation == 5000)
        #expect(Self.personBlocks(store).count > 10)
    }

    /// Records read in order for a batch: those the cache holds decoded come from it under
    /// one lock, the others are read one by one; either way, the answer is what looking each
    /// identifier up gives, through runs of two entities, missing records and a cache too
    /// small to keep decoded records. A cached record that is not the one its location
    /// should hold is read again, and reported as damage.
    @Test(arguments: [64 << 20, 48 << 10])
    func snapshotsInOrderMatchOneByOneLookUps(cacheCapacity: Int) throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        do {
            let (container, store) = try Self.open(directory.storeURL)
            try Self.insertPeople(2000, into: container)
            let context = ModelContext(container)
            for i in 0..<300 {
                context.insert(
                    Chore(seq: i, title: "Chore \(i)", priority: i % 5, isCompleted: i % 2 == 0, dueDate: nil))
            }
            try context.save()
            store.close()
        }
        let (_, store) = try Self.open(directory.storeURL, cacheCapacity: cacheCapacity)
        let (people, chores) = try store.withTable { table in
            (try #require(table.scopes["Person"]), try #require(table.scopes["Chore"]))
        }
        func person(_ key: Int64) -> PersistentIdentifier { .permanent(in: people, primaryKey: key) }
        func chore(_ key: Int64) -> PersistentIdentifier { .permanent(in: chores, primaryKey: key) }
        let personKeys = store.withTable { $0.entities["Person"]?.rows.map(\.key) ?? [] }
        let choreKeys = store.withTable { $0.entities["Chore"]?.rows.map(\.key) ?? [] }
        #expect(personKeys.count == 2000 && choreKeys.count == 300)
        // Some records read (and, in the large cache, kept decoded) before the batch.
        for key in personKeys.prefix(700) where key % 3 == 0 {
            _ = try store.withTable { try $0.snapshot(for: person(key)) }
        }
        var ids: [PersistentIdentifier] = []
        for (i, key) in personKeys.enumerated() {
            ids.append(person(key))
            if i % 10 == 0, i / 10 < choreKeys.count { ids.append(chore(choreKeys[i / 10])) }
            if i % 250 == 0 { ids.append(person(9_999_999)) }
        }
        let expected = try store.withTable { table in try ids.map { try table.snapshot(for: $0) } }
        #expect(expected.filter { $0 == nil }.count == 8)
        let inOrder = try store.withTable { try $0.snapshotsInOrder(for: ids) }
        #expect(inOrder == expected)

        // A decoded record cached where another one's location points.
        let reader = try #require(store.reader)
        let (key, location) = try #require(Self.firstPerson(inSlot: 0, of: store))
        let impostor = try #require(expected.compactMap { $0 }.first { $0.persistentIdentifier.primaryKey != key })
        reader.cache.withLock { cache in
            cache.put(location.blockOffset, CachedBlock(length: 100, slots: [0], decoded: [impostor]))
        }
        #expect(throws: DataStoreError.self) {
            try store.withTable { try $0.snapshotsInOrder(for: [person(key), chore(choreKeys[0])]) }
        }
    }

    /// A block a save wrote is cached with its writes decoded and without its bytes: every
    /// read of the saved records is answered from it, with no block read, and a write
    /// missing from such a block is read from the file.
    @Test func savedBlocksAreCachedDecodedWithoutTheirBytes() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let (container, store) = try Self.open(directory.storeURL, cacheCapacity: 64 << 20)
        try Self.insertPeople(3000, into: container)
        let expected = try Self.emails(store)
        #expect(expected.count == 3000)
        #expect(store.readStatistics.blockReads == 0)
        let reader = try #require(store.reader)
        let blocks = Self.personBlocks(store)
        #expect(blocks.count > 1)
        for offset in blocks {
            let block = try #require(reader.cache.withLock { $0.get(offset) })
            #expect(block.contents.isEmpty && !block.hasContents && block.slots.isEmpty)
            #expect(block.decoded.allSatisfy { $0 != nil })
        }
        // Take one write out of a cached block: reading it goes to the file.
        let (key, location) = try #require(Self.firstPerson(inSlot: 1, of: store))
        reader.cache.withLock { cache in
            guard var block = cache.get(location.blockOffset) else { return }
            block.decoded[1] = nil
            cache.put(location.blockOffset, block)
        }
        let snapshot = try reader.snapshot(entity: "Person", key: key, at: location)
        #expect(store.readStatistics.blockReads == 1)
        #expect(snapshot.persistentIdentifier.primaryKey == key)
        #expect(try Self.emails(store) == expected)
    }

    /// The decoded writes held in the cached blocks among `offsets`, and the blocks.
    static func cachedDecodedWrites(_ store: LogStore, _ offsets: Set<Int64>) throws -> (writes: Int, blocks: Int) {
        let reader = try #require(store.reader)
        return reader.cache.withLock { cache in
            var writes = 0
            var blocks = 0
            for offset in offsets {
                guard let block = cache.get(offset) else { continue }
                blocks += 1
                writes += block.decoded.count { $0 != nil }
            }
            return (writes, blocks)
        }
    }

    /// A scan past the cache's capacity stays within it and reads each block once. Once the
    /// cache has had to evict, the scan keeps the blocks it reads ahead beside the cached
    /// ones, one at a time and as bytes, so the blocks by use are still the first ones it
    /// read. A second scan reads the same records. (Read with `pread`: a mapped block costs
    /// the cache only its table, `LogMappedReadTests`.)
    @Test func aFullScanStaysWithinTheCacheCapacity() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        try Self.writePeople(5000, at: directory.storeURL)
        let capacity = 96 << 10
        let (_, store) = try Self.open(directory.storeURL, cacheCapacity: capacity, mapsFile: false)
        let blocks = Self.personBlocks(store)
        let emails = try Self.emails(store)
        #expect(emails.count == 5000)
        #expect(Set(emails) == Set((0..<5000).map { "p\($0)@example.com" }))
        let statistics = store.readStatistics
        #expect(statistics.cachedBytes <= capacity)
        #expect(statistics.cachedBlocks >= 1 && statistics.cachedBlocks < blocks.count / 2)
        // A scan in key order reads each block once.
        #expect(statistics.blockReads == blocks.count)
        #expect(blocks.count > 10)
        let reader = try #require(store.reader)
        let (cached, scanned) = reader.cache.withLock { $0.offsets }
        let inFileOrder = blocks.sorted()
        #expect(cached.count == statistics.cachedBlocks)
        #expect(cached.isSubset(of: inFileOrder.prefix(cached.count + 1)), "\(cached.sorted()) of \(inFileOrder)")
        #expect(scanned == inFileOrder.last)
        let scannedBlock = try #require(reader.cache.withLock { cache in scanned.flatMap { cache.get($0) } })
        #expect(scannedBlock.hasContents && scannedBlock.decoded.allSatisfy { $0 == nil })
        #expect(try Self.emails(store) == emails)
        #expect(store.readStatistics.blockReads <= 2 * blocks.count)
    }

    /// A cache that holds every record read keeps the writes it decoded: a second scan
    /// reads no block from the file.
    @Test func aCacheLargeEnoughForAScanKeepsItsWritesDecoded() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        try Self.writePeople(5000, at: directory.storeURL)
        let (_, store) = try Self.open(directory.storeURL, cacheCapacity: 64 << 20)
        let blocks = Self.personBlocks(store)
        let emails = try Self.emails(store)
        let reads = store.readStatistics.blockReads
        #expect(reads == blocks.count)
        let cached = try Self.cachedDecodedWrites(store, blocks)
        #expect(cached.blocks == blocks.count && cached.writes == 5000)
        #expect(try Self.emails(store) == emails)
        #expect(store.readStatistics.blockReads == reads)
    }

    /// The uncompressed length of each block that holds people, in file order: after a
    /// scan, with a cache that holds every block.
    static func blockLengths(_ store: LogStore) throws -> [Int] {
        let reader = try #require(store.reader)
        var lengths: [Int] = []
        for offset in personBlocks(store).sorted() {
            let block = try #require(reader.cache.withLock { $0.get(offset) })
            lengths.append(block.length)
        }
        return lengths
    }

    /// `blockBytes` sets where a save closes a block: with 4 KiB (the default) the same
    /// people take about four times the blocks of 16 KiB, none longer than 4 KiB plus one record;
    /// they read back the same, also after reopening with another size; compaction rewrites
    /// the blocks at the size configured then; and a size below 1 KiB is raised to 1 KiB.
    @Test func theBlockSizeIsWhereASaveClosesABlock() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let largeBlocks: Int
        do {
            let other = LogTestDirectory.fresh()
            defer { other.remove() }
            let (container, store) = try Self.open(other.storeURL, cacheCapacity: 64 << 20, blockBytes: 16 << 10)
            try Self.insertPeople(5000, into: container)
            largeBlocks = Self.personBlocks(store).count
            store.close()
        }
        let expected: [String]
        do {
            #expect(LogStoreConfiguration(schema: Self.schema, url: directory.storeURL).blockBytes == 4096)
            let (container, store) = try Self.open(directory.storeURL, cacheCapacity: 64 << 20)
            try Self.insertPeople(5000, into: container)
            let blocks = Self.personBlocks(store).count
            #expect(blocks >= 3 * largeBlocks && blocks <= 5 * largeBlocks, "\(blocks) vs \(largeBlocks)")
            expected = try Self.emails(store)
            store.close()
        }
        #expect(expected.count == 5000)
        let (_, store) = try Self.open(directory.storeURL, cacheCapacity: 64 << 20, blockBytes: 2048)
        #expect(try Self.emails(store) == expected)
        let lengths = try Self.blockLengths(store)
        #expect(lengths.allSatisfy { $0 < 4096 + 100 } && lengths.dropLast().allSatisfy { $0 >= 4096 })
        try store.compact()
        #expect(try Self.emails(store) == expected)
        let compacted = try Self.blockLengths(store)
        #expect(compacted.allSatisfy { $0 < 2048 + 100 } && compacted.dropLast().allSatisfy { $0 >= 2048 })
        store.close()

        let tiny = LogTestDirectory.fresh()
        defer { tiny.remove() }
        let (container, tinyStore) = try Self.open(tiny.storeURL, cacheCapacity: 64 << 20, blockBytes: 1)
        try Self.insertPeople(500, into: container)
        #expect(try Self.emails(tinyStore).count == 500)
        let tinyLengths = try Self.blockLengths(tinyStore)
        #expect(tinyLengths.count > 5)
        #expect(tinyLengths.dropLast().allSatisfy { $0 >= 1024 && $0 < 1024 + 100 }, "\(tinyLengths)")
    }

    @Test func aCheckpointFollowedByCommitsIsUsedAndTheCommitsApplied() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let expected: [String: [DefaultSnapshot]]
        let indexes: [String: [[String]]]
        do {
            let (container, store) = try Self.open(directory.storeURL, checkpointOnClose: false)
            try Self.insertPeople(300, into: container)
            try store.checkpoint()
            // After the checkpoint: updates (one changes a unique value), deletes, inserts.
            let context = ModelContext(container)
            let people = try context.fetch(FetchDescriptor<Person>(sortBy: [SortDescriptor(\.email)]))
            for person in people.prefix(40) { person.age += 1000 }
            people[41].email = "renamed@example.com"
            for person in people.suffix(25) { context.delete(person) }
            context.insert(Person(email: "late@example.com", name: "Late", age: 7))
            try context.save()
            try PeopleAndChores.insert(into: context, people: 0, chores: 50, updated: 0, deleted: 0)
            expected = try LogTest.state(store)
            indexes = LogCheckpointTests.indexes(store)
            store.close()
        }
        let (container, store) = try Self.open(directory.storeURL, checkpointOnClose: false)
        #expect(store.openedFromCheckpoint)
        #expect(try LogTest.state(store) == expected)
        #expect(LogCheckpointTests.indexes(store) == indexes)
        let context = ModelContext(container)
        #expect(try context.fetchCount(FetchDescriptor<Person>(predicate: #Predicate { $0.age >= 1000 })) == 40)
        #expect(
            try context.fetch(FetchDescriptor<Person>(predicate: #Predicate { $0.email == "renamed@example.com" }))
                .count == 1)
        // The same state when the checkpoint is ignored: a file without it.
        store.close()
    }

    @Test func aForgedCheckpointThatDisagreesIsIgnored() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let expected: [String: [DefaultSnapshot]]
        do {
            let (container, store) = try Self.open(directory.storeURL, checkpointOnClose: false)
            try Self.insertPeople(200, into: container)
            expected = try LogTest.state(store)
            // A checkpoint that counts one version too many: checksum-valid, but wrong.
            try store.writer.withLock { w in
                var checkpoint = try store.withTable {
                    try LogCheckpoint($0, transactionID: w.lastCommitTransaction, map: store.map, versions: w.versions)
                }
                checkpoint.versions = (checkpoint.versions ?? 0) + 1
                try store.append(&w, type: .checkpoint, payload: checkpoint.encode())
            }
            store.close()
        }
        let (_, store) = try Self.open(directory.storeURL)
        #expect(!store.openedFromCheckpoint)
        #expect(try LogTest.state(store) == expected)
    }

    /// Open cannot see swapped locations in a checkpoint that agrees on its counts
    /// (`Formats/log.md`); the read that follows one finds another record in the slot and
    /// says so instead of answering with it.
    @Test func aSwappedLocationIsCaughtByTheRead() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        do {
            let (container, store) = try Self.open(directory.storeURL, checkpointOnClose: false)
            try Self.insertPeople(200, into: container)
            try store.writer.withLock { w in
                var checkpoint = try store.withTable {
                    try LogCheckpoint($0, transactionID: w.lastCommitTransaction, map: store.map, versions: w.versions)
                }
                let person = try #require(checkpoint.entities.firstIndex { $0.keys.count == 200 })
                checkpoint.entities[person].locations?.swapAt(0, 1)
                try store.append(&w, type: .checkpoint, payload: checkpoint.encode())
            }
            store.close()
        }
        let (_, store) = try Self.open(directory.storeURL, checkpointOnClose: false)
        #expect(store.openedFromCheckpoint)
        let first = PersistentIdentifier.permanent(
            entityName: "Person", storeIdentifier: store.identifier, primaryKey: 1)
        let error = #expect(throws: DataStoreError.self) { try store.snapshots(for: [first]) }
        #expect(error?.code == .corruptStore)
        #expect(error?.description.contains("holds another record than Person 1") == true)
    }

    @Test(arguments: [true, false])
    func aBlockDamagedAfterOpenFailsTheReadNamingItsOffset(mapsFile: Bool) throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        try Self.writePeople(2000, at: directory.storeURL)
        let (container, store) = try Self.open(directory.storeURL, cacheCapacity: 1 << 20, mapsFile: mapsFile)
        let location = try store.withTable { table -> RecordLocation in
            guard case .location(let location)? = table.entities["Person"]?.rows.first?.value else {
                throw DataStoreError(.corruptStore, "no location")
            }
            return location
        }
        // Flip a byte in the block's stored bytes, behind the open store's back.
        let handle = try FileHandle(forUpdating: directory.storeURL)
        let at = UInt64(location.blockOffset) + UInt64(LogBlocks.headerSize) + 20
        try handle.seek(toOffset: at)
        let byte = try #require(try handle.read(upToCount: 1)?.first)
        try handle.seek(toOffset: at)
        try handle.write(contentsOf: [byte ^ 0x55])
        try handle.close()
        let context = ModelContext(container)
        let error = #expect(throws: DataStoreError.self) {
            try context.fetch(FetchDescriptor<Person>(sortBy: [SortDescriptor(\.email)]))
        }
        #expect(error?.code == .corruptStore)
        #expect(error?.description.contains("offset \(location.blockOffset)") == true)
        // Enumerating reads in batches: the damaged block fails it too, it does not skip.
        #expect(throws: DataStoreError.self) {
            try ModelContext(container).enumerate(FetchDescriptor<Person>()) { _ in }
        }
        // Nothing else broke: a record in another block still reads.
        let last = try store.withTable { table -> Int64 in try #require(table.entities["Person"]?.rows.last?.key) }
        #expect(
            try store.snapshots(for: [
                .permanent(entityName: "Person", storeIdentifier: store.identifier, primaryKey: last)
            ])
            .count == 1)
    }

    @Test func aSaveThatReplacesRecordsReadsThemBackForItsIndexes() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        try Self.writePeople(1000, at: directory.storeURL)
        // A tiny cache: the updated records are read from the file during the save.
        let (container, store) = try Self.open(directory.storeURL, cacheCapacity: 0)
        let context = ModelContext(container)
        let people = try context.fetch(FetchDescriptor<Person>(predicate: #Predicate { $0.age < 10 }))
        #expect(people.count == 1000 / 90 * 10 + 10)
        for person in people { person.age += 500 }
        try context.save()
        #expect(try context.fetchCount(FetchDescriptor<Person>(predicate: #Predicate { $0.age < 10 })) == 0)
        #expect(
            try context.fetchCount(FetchDescriptor<Person>(predicate: #Predicate { $0.age >= 500 })) == people.count)
        #expect(store.readStatistics.cachedBlocks == 0)
    }

    @Test func externalValuesComeFromTheCheckpointAndTheCommitsAfterIt() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let url = directory.storeURL
        func openContainer() throws -> ModelContainer {
            var configuration = LogStoreConfiguration(schema: Schema([Photo.self]), url: url)
            configuration.checkpoints = nil
            configuration.automaticCompaction = nil
            return try ModelContainer(for: Schema([Photo.self]), configurations: [configuration])
        }
        let a = LogExternalStorageTests.payload(1)
        let b = LogExternalStorageTests.payload(2)
        let c = LogExternalStorageTests.payload(3)
        let d = LogExternalStorageTests.payload(4)
        let e = LogExternalStorageTests.payload(5)
        do {
            let container = try openContainer()
            let store = try LogExternalStorageTests.store(container)
            let context = ModelContext(container)
            let photos = [
                Photo(title: "A", bytes: a), Photo(title: "B", bytes: b, thumbnail: c), Photo(title: "C", bytes: c),
            ]
            for photo in photos { context.insert(photo) }
            try context.save()
            try store.checkpoint()
            // After the checkpoint: a replaced value, a deleted record, a new one.
            photos[0].bytes = d
            context.delete(photos[1])
            context.insert(Photo(title: "E", bytes: e))
            try context.save()
            #expect(LogExternalStorageTests.blobs(url).count == 6)
            store.close()
        }
        let container = try openContainer()
        let store = try LogExternalStorageTests.store(container)
        #expect(store.openedFromCheckpoint)
        // Opening removed the files of A's old value and of B: nothing refers to them.
        #expect(LogExternalStorageTests.blobs(url).count == 3)
        let photos = try ModelContext(container).fetch(FetchDescriptor<Photo>(sortBy: [SortDescriptor(\.title)]))
        #expect(photos.map(\.title) == ["A", "C", "E"])
        #expect(photos.map(\.bytes) == [d, c, e])
        #expect(photos.map(\.thumbnail) == [nil, nil, nil])
        store.close()

        // A live value's file gone: opening from the checkpoint refuses, naming it.
        let live = try #require(LogExternalStorageTests.blobs(url).first)
        try FileManager.default.removeItem(atPath: url.path + ".blobs/" + live)
        let error = #expect(throws: DataStoreError.self) { _ = try openContainer() }
        #expect(error?.code == .corruptStore)
        #expect(error?.description.contains(live) == true)
    }

    /// Applying a commit after the checkpoint takes the replaced record's index entries out,
    /// and an index over an external value needs the old value's file, which the first
    /// reopen deletes: the second reopen replays the whole log instead, and loses nothing.
    @Test func anIndexedExternalValueReplacedAfterTheCheckpointStillOpens() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let url = directory.storeURL
        let schema = Schema([IndexedBlob.self])
        func openContainer() throws -> (ModelContainer, LogStore) {
            var configuration = LogStoreConfiguration(schema: schema, url: url)
            configuration.checkpoints = nil
            let container = try ModelContainer(for: schema, configurations: [configuration])
            return (container, try #require(container.storesForTesting.first as? LogStore))
        }
        let old = LogExternalStorageTests.payload(7, count: 500)
        let new = LogExternalStorageTests.payload(8, count: 600)
        do {
            let (container, store) = try openContainer()
            let context = ModelContext(container)
            let blobs = (0..<3).map {
                IndexedBlob(label: "blob \($0)", bytes: LogExternalStorageTests.payload(UInt8($0)))
            }
            blobs[0].bytes = old
            for blob in blobs { context.insert(blob) }
            try context.save()
            try store.checkpoint()
            blobs[0].bytes = new
            try context.save()
            store.close()
        }
        for round in 1...2 {
            let (container, store) = try openContainer()
            #expect(store.openedFromCheckpoint == (round == 1), "round \(round)")
            let context = ModelContext(container)
            let found = try context.fetch(FetchDescriptor<IndexedBlob>(predicate: #Predicate { $0.bytes == new }))
            #expect(found.map(\.label) == ["blob 0"], "round \(round)")
            #expect(
                try context.fetchCount(FetchDescriptor<IndexedBlob>(predicate: #Predicate { $0.bytes == old })) == 0,
                "round \(round)")
            store.close()
        }
    }
}
