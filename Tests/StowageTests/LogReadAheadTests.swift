import Foundation
import StowageTestSupport
import Testing

@_spi(Testing) @testable import Stowage

/// A scan past the cache reads the log ahead in stretches (`ReadAhead`): one `pread` for
/// many blocks, while random reads still read one block each, and bytes read ahead never
/// decide what a read returns. These stores read with `pread`, not through a mapping
/// (`LogMappedReadTests`), which reads nothing ahead.
@Suite("LogStore reads ahead of a scan")
struct LogReadAheadTests {
    static let people = 5000

    /// A store of people in 1 KiB blocks, reopened with `cacheCapacity`.
    static func withStore(
        cacheCapacity: Int, _ body: (ModelContainer, LogStore, Set<Int64>) throws -> Void
    ) throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let (written, writtenStore) = try LogBlockReadTests.open(directory.storeURL, blockBytes: 1024)
        try LogBlockReadTests.insertPeople(people, into: written)
        writtenStore.close()
        let (container, store) = try LogBlockReadTests.open(
            directory.storeURL, cacheCapacity: cacheCapacity, blockBytes: 1024, mapsFile: false)
        try body(container, store, LogBlockReadTests.personBlocks(store))
    }

    static let allEmails = Set((0..<people).map { "p\($0)@example.com" })

    static func person(_ store: LogStore, key: Int64) throws -> DefaultSnapshot? {
        try store.snapshots(for: [.permanent(entityName: "Person", storeIdentifier: store.identifier, primaryKey: key)])
            .values.first
    }

    @Test func aScanPastTheCacheReadsTheFileInStretches() throws {
        try Self.withStore(cacheCapacity: 64 << 10) { _, store, blocks in
            #expect(blocks.count > 100)
            let emails = try LogBlockReadTests.emails(store)
            #expect(emails.count == Self.people && Set(emails) == Self.allEmails)
            let statistics = store.readStatistics
            // Every block is read once, but most come from a stretch read ahead: the first
            // block alone (two reads), then a stretch of 256 KiB for every 256 blocks or so.
            #expect(statistics.blockReads == blocks.count)
            #expect(statistics.fileReads >= 3)
            #expect(statistics.fileReads <= 2 + 2 * (blocks.count / 100 + 1), "\(statistics.fileReads)")
            // The second scan reads the same again, as a scan, and finds the same.
            #expect(try LogBlockReadTests.emails(store) == emails)
            #expect(store.readStatistics.fileReads - statistics.fileReads <= statistics.fileReads)
        }
    }

    @Test func readsOutOfOrderReadOneBlockEach() throws {
        try Self.withStore(cacheCapacity: 0) { _, store, blocks in
            // Keys far apart and going backwards: no read continues the one before it.
            let keys = stride(from: Int64(Self.people), to: 0, by: -250).map { $0 }
            for key in keys {
                let snapshot = try #require(try Self.person(store, key: key))
                #expect(snapshot.persistentIdentifier.primaryKey == key)
            }
            #expect(store.readStatistics.blockReads == keys.count)
            #expect(store.readStatistics.fileReads == 2 * keys.count)
            #expect(blocks.count > keys.count)
        }
    }

    /// Bytes read ahead that do not check out (as if read while a save was writing them)
    /// are not believed: the block is read again from the file.
    @Test func bytesReadAheadThatDoNotCheckOutAreReadAgain() throws {
        try Self.withStore(cacheCapacity: 0) { _, store, _ in
            // The first record of each of the first two blocks. With no cache each read
            // misses; the second continues the first and reads a stretch.
            let keys = try Self.firstKeysOfTheFirstTwoBlocks(store)
            let first = try #require(try Self.person(store, key: keys.0))
            let second = try #require(try Self.person(store, key: keys.1))
            let reader = try #require(store.reader)
            let stretched = reader.cache.withLock { !$0.readAhead.bytes.isEmpty }
            let reads = store.readStatistics.fileReads
            // Served from the stretch: no read of the file.
            #expect(try Self.person(store, key: keys.1)?.values == second.values)
            #expect(store.readStatistics.fileReads == reads)
            #expect(stretched)
            // Damage every byte read ahead: the read goes to the file and finds the record.
            reader.cache.withLock { cache in
                for i in cache.readAhead.bytes.indices { cache.readAhead.bytes[i] ^= 0x5A }
            }
            #expect(try Self.person(store, key: keys.1)?.values == second.values)
            #expect(try Self.person(store, key: keys.0)?.values == first.values)
            #expect(store.readStatistics.fileReads > reads)
        }
    }

    static func firstKeysOfTheFirstTwoBlocks(_ store: LogStore) throws -> (Int64, Int64) {
        let rows = store.withTable { table in
            (table.entities["Person"]?.rows ?? RowDirectory()).compactMap { row -> (Int64, Int64)? in
                guard case .location(let location) = row.value else { return nil }
                return (location.blockOffset, row.key)
            }
        }
        let offsets = Set(rows.map(\.0)).sorted()
        try #require(offsets.count >= 2)
        let firstKey = { (offset: Int64) in rows.filter { $0.0 == offset }.map(\.1).min() }
        return (try #require(firstKey(offsets[0])), try #require(firstKey(offsets[1])))
    }

    @Test func aSaveDropsTheBytesReadAhead() throws {
        try Self.withStore(cacheCapacity: 64 << 10) { container, store, _ in
            _ = try LogBlockReadTests.emails(store)
            let reader = try #require(store.reader)
            #expect(reader.cache.withLock { !$0.readAhead.bytes.isEmpty })
            let context = ModelContext(container)
            context.insert(Person(email: "new@example.com", name: "New", age: 1))
            try context.save()
            #expect(reader.cache.withLock { $0.readAhead.bytes.isEmpty })
            let emails = try LogBlockReadTests.emails(store)
            #expect(Set(emails) == Self.allEmails.union(["new@example.com"]))
        }
    }
}
