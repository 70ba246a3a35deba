import Foundation
import StowageTestSupport
import Synchronization
import Testing

@_spi(Testing) @testable import Stowage

/// Records read through a mapping of the log (`LogStoreConfiguration.readsThroughMapping`,
/// the default): no `pread` for a block, each block checked once while the cache keeps its
/// table, the cache's capacity spent on tables and decoded writes rather than bytes, a file
/// that grew after the mapping mapped again, and a location past the file's end an error
/// rather than a touch of a page past it.
@Suite("LogStore reads through a mapping of its file")
struct LogMappedReadTests {
    static let people = 5000

    static func withStore(cacheCapacity: Int, _ body: (ModelContainer, LogStore, Set<Int64>) throws -> Void) throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        try LogBlockReadTests.writePeople(people, at: directory.storeURL)
        let (container, store) = try LogBlockReadTests.open(directory.storeURL, cacheCapacity: cacheCapacity)
        try body(container, store, LogBlockReadTests.personBlocks(store))
    }

    static func person(_ store: LogStore, key: Int64) throws -> DefaultSnapshot? {
        try store.snapshots(for: [.permanent(entityName: "Person", storeIdentifier: store.identifier, primaryKey: key)])
            .values.first
    }

    static func email(_ snapshot: DefaultSnapshot?) -> String? {
        let entity = LogBlockReadTests.schema.entitiesByName["Person"]!
        if case .string(let email)? = snapshot?.value(forKey: "email", in: entity) { return email }
        return nil
    }

    static func mappingsMade(_ store: LogStore) throws -> Int {
        try #require(store.reader).cache.withLock { $0.mappings.made }
    }

    @Test func pointReadsMakeNoFileReadAndCheckEachBlockOnce() throws {
        try Self.withStore(cacheCapacity: 64 << 10) { _, store, blocks throws in
            let keys = stride(from: Int64(Self.people), to: 0, by: -250).map { $0 }
            for key in keys {
                #expect(Self.email(try Self.person(store, key: key)) == "p\(key - 1)@example.com")
            }
            #expect(store.readStatistics.blockReads == keys.count)
            #expect(store.readStatistics.fileReads == 0)
            #expect(try Self.mappingsMade(store) == 1)
            #expect(blocks.count > keys.count)
            // The blocks' tables stay cached: reading the same records again reads no block.
            for key in keys { #expect(try Self.person(store, key: key) != nil) }
            #expect(store.readStatistics.blockReads == keys.count)
        }
    }

    /// A scan past what the cache could hold as bytes keeps the blocks' tables (a mapped
    /// block costs the capacity no bytes), so a second scan checks few blocks again, where
    /// a cache of bytes would read most of them again; the cache stays within its capacity
    /// and, once the blocks come to more than it, holds less than the records read.
    @Test func aScanKeepsTablesNotBytesAndTheSecondScanReadsFewBlocks() throws {
        let capacity = 96 << 10
        try Self.withStore(cacheCapacity: capacity) { _, store, blocks throws in
            let emails = try LogBlockReadTests.emails(store)
            #expect(Set(emails) == Set((0..<Self.people).map { "p\($0)@example.com" }))
            let statistics = store.readStatistics
            #expect(statistics.blockReads == blocks.count)
            #expect(statistics.cachedBytes <= capacity)
            // 96 KiB of bytes would be fewer than 25 blocks.
            #expect(statistics.cachedBlocks >= blocks.count * 3 / 4, "\(statistics.cachedBlocks) of \(blocks.count)")
            #expect(statistics.fileReads == 0)
            let reader = try #require(store.reader)
            let (mapped, holdsLess) = reader.cache.withLock { ($0.mappedBytes, $0.holdsLess) }
            #expect(mapped > capacity && holdsLess)
            #expect(try LogBlockReadTests.emails(store) == emails)
            let again = store.readStatistics.blockReads - statistics.blockReads
            #expect(again <= blocks.count / 4, "\(again) of \(blocks.count) blocks checked again")
            #expect(store.readStatistics.cachedBytes <= capacity)
        }
    }

    /// A cache that holds the whole file keeps what it decodes, as it does reading with
    /// `pread`: the second scan decodes nothing.
    @Test func aCacheThatHoldsTheFileKeepsItsWritesDecoded() throws {
        try Self.withStore(cacheCapacity: 64 << 20) { _, store, blocks throws in
            let emails = try LogBlockReadTests.emails(store)
            #expect(emails.count == Self.people)
            let decoded = try LogBlockReadTests.cachedDecodedWrites(store, blocks)
            #expect(decoded.writes == Self.people && decoded.blocks == blocks.count)
            #expect(try LogBlockReadTests.emails(store) == emails)
            #expect(store.readStatistics.blockReads == blocks.count)
        }
    }

    /// Records saved after the file was mapped, past the end of the mapping, are read
    /// through a new one; the records read through the first still read.
    @Test func recordsSavedPastTheMappingAreReadThroughANewOne() throws {
        try Self.withStore(cacheCapacity: 0) { container, store, _ throws in
            let reader = try #require(store.reader)
            reader.cache.withLock { $0.mappings.headroom = 0 }
            #expect(Self.email(try Self.person(store, key: 17)) == "p16@example.com")
            #expect(try Self.mappingsMade(store) == 1)
            let context = ModelContext(container)
            for i in 0..<2000 {
                context.insert(Person(email: "late\(i)@example.com", name: "Late \(i)", age: i % 90))
            }
            try context.save()
            let late = try context.fetch(
                FetchDescriptor<Person>(predicate: #Predicate { $0.email == "late1999@example.com" }))
            #expect(late.map(\.age) == [1999 % 90])
            let all = try LogBlockReadTests.emails(store)
            #expect(all.count == Self.people + 2000)
            #expect(Set(all).contains("late0@example.com") && Set(all).contains("p4999@example.com"))
            #expect(try Self.mappingsMade(store) == 2)
            #expect(store.readStatistics.fileReads == 0)
        }
    }

    /// Past the cache, a count by an unindexed predicate and a full fetch read the records
    /// of each block together (`forEachSnapshot`), from one copy of its writes: they agree
    /// with the data, and with reading each record alone.
    @Test func runsReadABlockTogetherAndAgreeWithReadingEachRecordAlone() throws {
        try Self.withStore(cacheCapacity: 96 << 10) { container, store, _ throws in
            let context = ModelContext(container)
            let expected = (0..<Self.people).filter { "p\($0)@example.com".contains("7") && $0 % 90 > 40 }.count
            let partialBefore = store.readStatistics.partialReads
            for _ in 0..<2 {
                let counted = try context.fetchCount(
                    FetchDescriptor<Person>(predicate: #Predicate { $0.email.contains("7") && $0.age > 40 }))
                #expect(counted == expected)
            }
            #expect(store.readStatistics.partialReads - partialBefore >= Self.people)
            let reader = try #require(store.reader)
            #expect(reader.cache.withLock { $0.holdsLess })
            var seen = 0
            try context.enumerate(FetchDescriptor<Person>(sortBy: [SortDescriptor(\.email)]), batchSize: 700) {
                person in
                let i = try #require(Int(person.email.dropFirst().prefix { $0 != "@" }))
                #expect(person.age == i % 90 && person.name == "Name \(i % 97)")
                seen += 1
            }
            #expect(seen == Self.people)
            // Each record alone, by key, reads the same values.
            for key in stride(from: Int64(1), through: Int64(Self.people), by: 97) {
                #expect(Self.email(try Self.person(store, key: key)) == "p\(key - 1)@example.com")
            }
        }
    }

    /// Readers on several threads, every read through the mapping (no cache), while saves
    /// grow the file past it again and again: each read finds its record, old or just saved,
    /// whichever mapping it reads through, and the file is mapped again as it grows.
    @Test func concurrentReadsWhileSavesOutgrowTheMapping() throws {
        try Self.withStore(cacheCapacity: 0) { container, store, _ throws in
            let reader = try #require(store.reader)
            reader.cache.withLock { $0.mappings.headroom = 0 }
            // The first mapping ends where the file ends now, before any save below: every
            // record those saves write lies past it, however the threads are scheduled.
            #expect(Self.email(try Self.person(store, key: 1)) == "p0@example.com")
            #expect(try Self.mappingsMade(store) == 1)
            let writing = PosixMutex(true)
            let saved = PosixMutex<[(PersistentIdentifier, String)]>([])
            let failures = PosixMutex<[String]>([])
            DispatchQueue.concurrentPerform(iterations: 4) { thread in
                if thread == 0 {
                    defer { writing.withLock { $0 = false } }
                    let context = ModelContext(container)
                    do {
                        for save in 0..<20 {
                            let people = (0..<200).map {
                                Person(email: "s\(save)-\($0)@example.com", name: "Saved \(save) \($0)", age: $0 % 90)
                            }
                            people.forEach(context.insert)
                            try context.save()
                            let ids = people.map { ($0.persistentModelID, $0.email) }
                            saved.withLock { $0.append(contentsOf: ids) }
                        }
                    } catch {
                        failures.withLock { $0.append("save: \(error)") }
                    }
                    return
                }
                // Keys spread over the store, a different walk on each thread, and every
                // fourth read one of the records saved last.
                var reads = 0
                while writing.withLock({ $0 }) || reads < 200 {
                    do {
                        if reads % 4 == 3, let (id, expected) = saved.withLock({ $0.last }) {
                            let snapshot = try store.snapshots(for: [id]).values.first
                            let email = Self.email(snapshot)
                            if email != expected {
                                failures.withLock { $0.append("\(expected) read \(email ?? "nothing")") }
                            }
                        } else {
                            let key = Int64((thread * 7919 + reads * 104_729) % Self.people + 1)
                            let email = Self.email(try Self.person(store, key: key))
                            if email != "p\(key - 1)@example.com" {
                                failures.withLock { $0.append("key \(key) read \(email ?? "nothing")") }
                            }
                        }
                    } catch {
                        failures.withLock { $0.append("read: \(error)") }
                    }
                    reads += 1
                }
            }
            #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0.prefix(5) })")
            let all = try LogBlockReadTests.emails(store)
            #expect(all.count == Self.people + 20 * 200)
            #expect(Set(all).isSuperset(of: saved.withLock { $0.map(\.1) }))
            #expect(try Self.mappingsMade(store) >= 2)
        }
    }

    /// A location past the end of the file (a damaged key directory, say) fails the read
    /// with the store's error: the mapping reaches past the file, but no page past it is
    /// touched.
    @Test func aLocationPastTheFileEndIsAnErrorNotACrash() throws {
        try Self.withStore(cacheCapacity: 1 << 20) { _, store, _ throws in
            let reader = try #require(store.reader)
            #expect(Self.email(try Self.person(store, key: 1)) == "p0@example.com")
            let size = try #require(try FileManager.default.attributesOfItem(atPath: reader.path)[.size] as? Int)
            for offset in [Int64(size) + 4096, Int64(size) - 4] {
                let error = #expect(throws: DataStoreError.self) {
                    try reader.snapshot(entity: "Person", key: 1, at: RecordLocation(blockOffset: offset, slot: 0))
                }
                #expect(error?.code == .corruptStore)
            }
        }
    }
}
