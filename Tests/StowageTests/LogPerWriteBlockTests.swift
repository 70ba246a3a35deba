import Foundation
import StowageTestSupport
import Testing

@_spi(Testing) @testable import Stowage

/// Format version 5: each write of a block stored on its own, raw or LZ4, after a table of
/// lengths, so that reading one record back decompresses that record and nothing else.
@Suite("LogStore blocks of writes stored one by one (format version 5)")
struct LogPerWriteBlockTests {
    /// Three writes, each `u8 kind` and some bytes: one that compresses, one of random
    /// bytes that does not, and one shorter than the 64 bytes worth compressing.
    static func threeWrites() -> (contents: [UInt8], starts: [Int32]) {
        var random = SeededRandom(seed: 5)
        let compressible = [0] + Array(String(repeating: "wool socks, ", count: 20).utf8)
        let incompressible = [1] + (0..<300).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        let tiny: [UInt8] = [0] + Array("tiny".utf8)
        return (
            compressible + incompressible + tiny,
            [0, Int32(compressible.count), Int32(compressible.count + incompressible.count)]
        )
    }

    static func block(_ contents: [UInt8], _ starts: [Int32], version: UInt16 = 5) -> [UInt8] {
        var w = LogByteWriter()
        LogBlocks.append(
            contents, starts: starts, version: LogFormatVersion(rawValue: version), stream: LZ4Block.Stream(), to: &w)
        return w.bytes
    }

    /// Parses `bytes` as one block: its header, table and contents.
    static func parse(_ bytes: [UInt8], version: UInt16 = 5) throws -> (LogBlocks.Header, [UInt8]) {
        let header = try LogBlocks.header(
            bytes[0..<LogBlocks.headerSize], available: bytes.count - LogBlocks.headerSize,
            version: LogFormatVersion(rawValue: version))
        let contents = try LogBlocks.contents(
            header, headerBytes: bytes[0..<LogBlocks.headerSize],
            stored: bytes[LogBlocks.headerSize..<LogBlocks.headerSize + header.storedLength])
        // Version 5 gives where each write ends, and they end where the contents do.
        #expect((contents.writeEnds?.last ?? contents.bytes.count) == contents.bytes.count)
        #expect((contents.writeEnds == nil) == (version < 5))
        return (header, contents.bytes)
    }

    /// Writes `stored` as a block's stored bytes with a valid checksum, so that only the
    /// table's own checks can find what is wrong with it.
    static func reframe(_ bytes: [UInt8], stored: [UInt8], uncompressedLength: Int? = nil) -> [UInt8] {
        var header = LogByteWriter()
        header.u32(UInt32(stored.count))
        header.u32(UInt32(uncompressedLength ?? Int(bytes[4]) | Int(bytes[5]) << 8))
        header.bytes.append(contentsOf: bytes[8..<12])
        header.u32(CRC32C.mask(CRC32C.update(CRC32C.update(0, header.bytes), stored)))
        return header.bytes + stored
    }

    @Test func eachWriteIsStoredOnItsOwnAndTheBlockReadsBack() throws {
        let (contents, starts) = Self.threeWrites()
        let bytes = Self.block(contents, starts)
        #expect(bytes[10] == 2, "flags: the writes one by one")
        let (header, read) = try Self.parse(bytes)
        #expect(header.perWrite && !header.compressed)
        #expect(header.uncompressedLength == contents.count && header.writes == 3)
        #expect(read == contents)
        let ends = try LogBlocks.contents(
            header, headerBytes: bytes[0..<LogBlocks.headerSize], stored: bytes[LogBlocks.headerSize...]
        ).writeEnds
        #expect(ends == [Int(starts[1]), Int(starts[2]), contents.count])
        let table = try LogBlocks.table(header, stored: bytes[LogBlocks.headerSize...])
        // Only the compressible write is compressed; each start is where the one before ends.
        #expect(table.lengths == [Int32(starts[1]), 0, 0])
        #expect(table.starts[0] == 0 && table.starts[1] < starts[1] / 2)
        #expect(Int(table.starts[2]) == Int(table.starts[1]) + 301)
        #expect(table.end + Int(table.starts[2]) + 5 == header.storedLength)
        // Version 4 compresses the block as a whole, and a version 4 reader refuses flag 2.
        let whole = Self.block(contents, starts, version: 4)
        #expect(whole[10] == 1)
        #expect(try Self.parse(whole, version: 4).1 == contents)
        #expect(throws: LogDecodeError.self) { try Self.parse(bytes, version: 4) }
        #expect(throws: LogDecodeError.self) { try Self.parse(whole, version: 5) }
    }

    /// After eight writes in a row that LZ4 could not shorten, a writer tries only every
    /// sixteenth write, until one compresses again; the block reads back the same.
    @Test func aRunOfIncompressibleWritesIsNotTriedOneByOne() throws {
        var random = SeededRandom(seed: 7)
        var contents: [UInt8] = []
        var starts: [Int32] = []
        for i in 0..<50 {
            starts.append(Int32(contents.count))
            contents.append(0)
            if i < 30 {
                contents += (0..<100).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            } else {
                contents += Array(String(repeating: "pair \(i) of socks, ", count: 6).utf8)
            }
        }
        let bytes = Self.block(contents, starts)
        let (header, read) = try Self.parse(bytes)
        #expect(read == contents)
        let table = try LogBlocks.table(header, stored: bytes[LogBlocks.headerSize...])
        let compressed = table.lengths.indices.filter { table.lengths[$0] > 0 }
        // Writes 0–7 were tried and failed; then 8 and 24 were tried; 30–39 were skipped
        // (compressible or not); 40 was tried, compressed, and every write after it too.
        #expect(compressed == Array(40..<50))
    }

    /// The count of writes that did not get shorter runs on from one block of a commit to
    /// the next (they share the commit's stream): a block of compressible writes after a
    /// block of 30 random ones tries its first write only at the count's next probe.
    @Test func theRunOfMissesCarriesOverToTheCommitsNextBlock() throws {
        var random = SeededRandom(seed: 11)
        func block(_ writes: [[UInt8]], _ stream: LZ4Block.Stream) throws -> [Int] {
            var contents: [UInt8] = []
            var starts: [Int32] = []
            for write in writes {
                starts.append(Int32(contents.count))
                contents += [0] + write
            }
            var w = LogByteWriter()
            LogBlocks.append(contents, starts: starts, version: 5, stream: stream, to: &w)
            let (header, read) = try Self.parse(w.bytes)
            #expect(read == contents)
            let table = try LogBlocks.table(header, stored: w.bytes[LogBlocks.headerSize...])
            return table.lengths.indices.filter { table.lengths[$0] > 0 }
        }
        let noise = (0..<30).map { _ in (0..<100).map { _ in UInt8(truncatingIfNeeded: random.next()) } }
        let socks = (0..<20).map { Array(String(repeating: "pair \($0) of socks, ", count: 6).utf8) }
        let stream = LZ4Block.Stream()
        #expect(try block(noise, stream).isEmpty)
        #expect(stream.misses == 30)
        // Misses 30–39 are the next block's writes 0–9, skipped; the 40th is tried.
        #expect(try block(socks, stream) == Array(10..<20))
        #expect(stream.misses == 0)
        // A new stream (a new commit) starts counting again.
        #expect(try block(socks, LZ4Block.Stream()) == Array(0..<20))
    }

    /// A table that does not add up is refused, checksum or not: lengths that overrun the
    /// stored bytes or leave some over, writes that add up to another length than the
    /// header's, an impossible uncompressed length, and LZ4 bytes that do not decompress to
    /// the length the table gives.
    @Test func aTableThatDoesNotAddUpIsRefused() throws {
        let (contents, starts) = Self.threeWrites()
        let bytes = Self.block(contents, starts)
        let stored = Array(bytes[LogBlocks.headerSize...])
        #expect(try Self.parse(Self.reframe(bytes, stored: stored)).1 == contents)
        var cases: [(String, [UInt8], Int?)] = []
        cases.append(("a byte over", stored + [0], nil))
        cases.append(("a byte short", Array(stored.dropLast()), nil))
        cases.append(("another total", stored, contents.count + 1))
        // The first entry's uncompressed length (its second varint, after a one- or
        // two-byte first) one more.
        var longer = stored
        let first = stored[0] < 0x80 ? 1 : 2
        longer[first] &+= 1
        cases.append(("a write longer than its LZ4 bytes make", longer, contents.count + 1))
        // The first entry made raw: its bytes are then not a write of the right length.
        var raw = stored
        raw[0] &= ~1
        cases.append(("a compressed write said to be raw", raw, nil))
        for (name, damaged, total) in cases {
            #expect(throws: LogDecodeError.self, "\(name)") {
                try Self.parse(Self.reframe(bytes, stored: damaged, uncompressedLength: total))
            }
        }
    }

    /// A write whose uncompressed length is larger than its block's is refused before it
    /// is kept: a table of 32-bit lengths would trap on one past 2 GiB (possible for a write
    /// stored in over 8.4 MB, since LZ4 expands at most 255 times).
    @Test func aWriteLongerThanItsBlockIsRefused() throws {
        var table = LogByteWriter()
        let writeStored = 9_000_000
        table.varint(UInt64(writeStored) << 1 | 1)
        table.varint(2_200_000_000)  // past Int32.max, within 255 × 9,000,000
        let stored = table.bytes + [UInt8](repeating: 0, count: writeStored)
        let header = LogBlocks.Header(
            storedLength: stored.count, uncompressedLength: 1 << 20, writes: 1, compressed: false, perWrite: true,
            checksum: 0)
        #expect(throws: LogDecodeError.self) { try LogBlocks.table(header, stored: stored[...]) }
    }

    /// Random damage to a block's stored bytes, with its checksum made right again, either
    /// fails with an error or reads as contents of the header's length; it never crashes.
    @Test func randomDamageBehindAGoodChecksumNeverCrashes() throws {
        let (contents, starts) = Self.threeWrites()
        let bytes = Self.block(contents, starts)
        let stored = Array(bytes[LogBlocks.headerSize...])
        var random = SeededRandom(seed: 55)
        var refused = 0
        for _ in 0..<2000 {
            var damaged = stored
            for _ in 0...(random.next() % 3) {
                let at = Int(random.next() % UInt64(damaged.count))
                damaged[at] ^= UInt8(truncatingIfNeeded: random.next() | 1)
            }
            do {
                let (header, read) = try Self.parse(Self.reframe(bytes, stored: damaged))
                #expect(read.count == header.uncompressedLength)
            } catch is LogDecodeError {
                refused += 1
            }
        }
        #expect(refused > 0)
    }

    // MARK: Stores

    /// People whose names repeat a phrase: about 100 bytes a record, which LZ4 shrinks.
    static func insertPeople(_ count: Int, into container: ModelContainer) throws {
        let context = ModelContext(container)
        for i in 0..<count {
            let name = String(repeating: "Name \(i % 97) ", count: 10)
            context.insert(Person(email: "p\(i)@example.com", name: name, age: i % 90))
        }
        try context.save()
    }

    static func open(_ url: URL, version: UInt16? = nil, cacheCapacity: Int = 1 << 20) throws -> (
        container: ModelContainer, store: LogStore
    ) {
        var configuration = LogStoreConfiguration(schema: LogBlockReadTests.schema, url: url)
        configuration.cacheCapacity = cacheCapacity
        configuration.automaticCompaction = nil
        configuration.checkpoints = .init(minimumCommitBytes: 0)
        if let version { configuration.newFileFormatVersion = version }
        let container = try ModelContainer(for: LogBlockReadTests.schema, configurations: [configuration])
        return (container, try #require(container.storesForTesting.first as? LogStore))
    }

    /// The header of the block at `offset` in the file at `url`.
    static func blockHeader(_ url: URL, at offset: Int64, version: UInt16) throws -> LogBlocks.Header {
        let bytes = Array(try Data(contentsOf: url))
        let start = Int(offset)
        return try LogBlocks.header(
            bytes[start..<start + LogBlocks.headerSize], available: bytes.count - start - LogBlocks.headerSize,
            version: LogFormatVersion(rawValue: version))
    }

    static func location(of email: String, in store: LogStore) throws -> RecordLocation {
        let entity = try #require(LogBlockReadTests.schema.entitiesByName["Person"])
        let snapshot = try #require(
            try store.allSnapshots(of: "Person").first {
                $0.value(forKey: "email", in: entity) == .string(email)
            })
        let key = try #require(snapshot.persistentIdentifier.primaryKey)
        return try store.withTable { table -> RecordLocation in
            guard case .location(let location)? = table.entities["Person"]?.rows.value(forKey: key) else {
                throw DataStoreError(.corruptStore, "no location for \(email)")
            }
            return location
        }
    }

    /// A version 5 block whose table puts the boundary between two writes one byte off, with
    /// every checksum made right again: the contents are the same bytes, so decoding the writes
    /// one after another would succeed, but each write must end where the table says. Opening
    /// finds the damage (strict refuses, naming its offset; point-in-time keeps the commits
    /// before it). Before this check, the store opened with both people and failed on reading
    /// one of them.
    @Test func writesMustEndWhereTheTableSays() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        do {
            var configuration = LogStoreConfiguration(schema: LogBlockReadTests.schema, url: directory.storeURL)
            configuration.checkpoints = nil
            configuration.automaticCompaction = nil
            let container = try ModelContainer(for: LogBlockReadTests.schema, configurations: [configuration])
            let context = ModelContext(container)
            context.insert(Person(email: "first@example.com", name: "First", age: 1))
            try context.save()
            context.insert(Person(email: "a@example.com", name: "A", age: 2))
            context.insert(Person(email: "b@example.com", name: "B", age: 3))
            try context.save()
        }
        var bytes = Array(try Data(contentsOf: directory.storeURL))
        let offsets = try LogStore.recordOffsets(ofFileAt: directory.storeURL)
        // The second commit: its payload holds one block of the two people, both raw.
        let commit = Int(offsets[2])
        let next = Int(offsets[3])
        var payload = Array(bytes[(commit + LogFormat.frameSize)..<next])
        // The block header: two writes (bytes 8 and 9), flags 2 (byte 10).
        func isBlockHeader(_ i: Int) -> Bool { payload[i + 8] == 2 && payload[i + 9] == 0 && payload[i + 10] == 2 }
        let at = try #require((0..<(payload.count - LogBlocks.headerSize)).first(where: isBlockHeader))
        let header = try LogBlocks.header(
            payload[at..<(at + LogBlocks.headerSize)], available: payload.count - at - LogBlocks.headerSize, version: 5)
        let storedStart = at + LogBlocks.headerSize
        let table = try LogBlocks.table(header, stored: payload[storedStart..<(storedStart + header.storedLength)])
        #expect(table.end == 2 && table.lengths.isEmpty)
        payload[storedStart] += 2  // the first write one byte longer,
        payload[storedStart + 1] -= 2  // the second one byte shorter
        let crc = CRC32C.mask(
            CRC32C.update(
                CRC32C.update(0, Array(payload[at..<(at + 12)])),
                Array(payload[storedStart..<(storedStart + header.storedLength)])))
        for i in 0..<4 { payload[at + 12 + i] = UInt8(truncatingIfNeeded: crc >> (8 * UInt32(i))) }
        let salt = bytes[12..<20].reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let framed = LogFormat.frame(
            type: .commit, payload: payload, salt: salt, offset: Int64(commit), compress: false)
        #expect(framed.count == next - commit)
        bytes.replaceSubrange(commit..<next, with: framed)
        try Data(bytes).write(to: directory.storeURL)

        var strict = LogStoreConfiguration(schema: LogBlockReadTests.schema, url: directory.storeURL)
        strict.recovery = .strict
        let error = #expect(throws: DataStoreError.self) { try LogStore(strict, migrationPlan: nil) }
        #expect(error?.code == .corruptStore)
        #expect(error?.description.contains("\(commit)") == true, "\(String(describing: error))")
        let store = try LogStore(
            LogStoreConfiguration(schema: LogBlockReadTests.schema, url: directory.storeURL), migrationPlan: nil)
        #expect(store.recordCount == 1)
        #expect(try LogBlockReadTests.emails(store) == ["first@example.com"])
        store.close()
    }

    /// The rule: a point fetch decompresses the one record it needs. In version 5 the
    /// bytes LZ4 produces for a fetch are one record's, though its block holds dozens; the
    /// next fetch from the same cached block decompresses only its own record. In version 4
    /// the same fetch decompressed the whole block.
    @Test(arguments: [UInt16(5), 4])
    func aPointFetchDecompressesOnlyTheRecordItNeeds(version: UInt16) throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let location: RecordLocation
        do {
            let (container, store) = try Self.open(directory.storeURL, version: version)
            try Self.insertPeople(2000, into: container)
            location = try Self.location(of: "p1234@example.com", in: store)
            store.close()
        }
        let header = try Self.blockHeader(directory.storeURL, at: location.blockOffset, version: version)
        #expect(header.writes >= 20 && header.uncompressedLength >= 2000, "\(header)")
        let (container, store) = try Self.open(directory.storeURL)
        let reader = try #require(store.reader)
        let context = ModelContext(container)
        let found = try context.fetch(
            FetchDescriptor<Person>(predicate: #Predicate { $0.email == "p1234@example.com" }))
        #expect(found.map(\.name) == [String(repeating: "Name \(1234 % 97) ", count: 10)])
        #expect(store.readStatistics.blockReads == 1)
        let first = reader.decompressedBytes
        if version >= 5 {
            #expect(header.perWrite)
            // One record: its kind, entity, key, count and three values, the name 80-odd bytes.
            #expect(first > 90 && first < 140, "\(first)")
        } else {
            #expect(first == header.uncompressedLength)
        }
        // A neighbour in the same block: no block read, and in version 5 one more record.
        let neighbour = try context.fetch(
            FetchDescriptor<Person>(predicate: #Predicate { $0.email == "p1235@example.com" }))
        #expect(neighbour.map(\.age) == [1235 % 90])
        #expect(store.readStatistics.blockReads == 1)
        if version >= 5 {
            #expect(reader.decompressedBytes > first && reader.decompressedBytes < 2 * first + 10)
        }
    }

    /// Every record of a version 5 store reads back, from blocks cached decoded, from blocks
    /// kept as bytes once a small cache has evicted, and after a compaction; a store opened
    /// on a version 4 file keeps writing version 4 until a compaction makes it the current version.
    @Test func recordsReadBackThroughEveryPathAndOldFilesKeepTheirVersion() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let expected: [String]
        do {
            let (container, store) = try Self.open(directory.storeURL, version: 4)
            try Self.insertPeople(3000, into: container)
            expected = try LogBlockReadTests.emails(store).sorted()
            store.close()
        }
        #expect(Array(try Data(contentsOf: directory.storeURL))[8] == 4)
        do {
            // Appends to a version 4 file are version 4.
            let (container, store) = try Self.open(directory.storeURL, cacheCapacity: 64 << 10)
            let context = ModelContext(container)
            context.insert(Person(email: "late@example.com", name: String(repeating: "late ", count: 30), age: 1))
            try context.save()
            let late = try Self.location(of: "late@example.com", in: store)
            #expect(try Self.blockHeader(directory.storeURL, at: late.blockOffset, version: 4).compressed)
            #expect(try LogBlockReadTests.emails(store).sorted() == (expected + ["late@example.com"]).sorted())
            try store.compact()
            let moved = try Self.location(of: "late@example.com", in: store)
            #expect(Array(try Data(contentsOf: directory.storeURL))[8] == LogFormat.version.rawValue)
            #expect(try Self.blockHeader(directory.storeURL, at: moved.blockOffset, version: 5).perWrite)
            store.close()
        }
        // Version 5 now: a small cache (bytes kept, each compressed write decompressed when
        // read) and a large one (writes kept decoded) read the same records.
        for capacity in [64 << 10, 64 << 20] {
            let (_, store) = try Self.open(directory.storeURL, cacheCapacity: capacity)
            #expect(try LogBlockReadTests.emails(store).sorted() == (expected + ["late@example.com"]).sorted())
            #expect(try LogBlockReadTests.emails(store).sorted() == (expected + ["late@example.com"]).sorted())
            let entity = try #require(LogBlockReadTests.schema.entitiesByName["Person"])
            let names = try store.allSnapshots(of: "Person").compactMap { snapshot -> String? in
                guard case .string(let name)? = snapshot.value(forKey: "name", in: entity) else { return nil }
                return name
            }
            #expect(names.count == 3001 && names.allSatisfy { $0.count >= 70 })
            store.close()
        }
    }
}
