import Foundation
import StowageTestSupport
import Testing

@_spi(Testing) @testable import Stowage

/// A log with a known state after every commit, for cutting and damaging.
struct LogFixture {
    let bytes: [UInt8]
    /// Record starts: the header record, then each commit; then the end of the file.
    let offsets: [Int64]
    /// The state after 0, 1, 2 … commits.
    let states: [[String: [DefaultSnapshot]]]

    var commitOffsets: ArraySlice<Int64> { offsets.dropFirst().dropLast() }

    /// Six commits: inserts, an LZ4-compressed batch, an update, a delete.
    static func make(in directory: LogTestDirectory) throws -> LogFixture {
        let url = directory.url.appendingPathComponent("fixture.stowlog")
        var states: [[String: [DefaultSnapshot]]] = []
        do {
            let store = try LogTest.open(url)
            states.append(try LogTest.state(store))
            let a = try LogTest.insertTrip(store, "Alpha")
            states.append(try LogTest.state(store))
            try LogTest.insertTrip(store, "Bravo", destination: String(repeating: "fjord ", count: 40))
            states.append(try LogTest.state(store))
            let c = try LogTest.insertTrip(store, "Charlie")
            states.append(try LogTest.state(store))
            try LogTest.updateBudget(store, a, 77)
            states.append(try LogTest.state(store))
            try LogTest.deleteTrip(store, c)
            states.append(try LogTest.state(store))
            try LogTest.insertTrip(store, "Delta", destination: "Tokyo")
            states.append(try LogTest.state(store))
        }
        let bytes = Array(try Data(contentsOf: url))
        let offsets = try LogStore.recordOffsets(ofFileAt: url)
        return LogFixture(bytes: bytes, offsets: offsets, states: states)
    }

    /// How many whole commits the first `length` bytes hold.
    func commitsWithin(_ length: Int64) -> Int {
        commitOffsets.indices.filter { offsets[$0 + 1] <= length }.count
    }
}

@Suite("LogStore recovery")
struct LogRecoveryTests {
    /// Version 5 frames commits raw and compresses the writes of their blocks one by one:
    /// the fixture must have both raw and LZ4 writes, so that the sweeps below hit LZ4
    /// bytes and block tables too.
    @Test func theFixtureHasRawAndCompressedBlocks() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let fixture = try LogFixture.make(in: directory)
        #expect(fixture.commitOffsets.count == 6)
        #expect(fixture.commitOffsets.allSatisfy { fixture.bytes[Int($0) + 5] == 0 })
        let store = try LogTest.open(directory.storeURL)
        defer { store.close() }
        var blockFlags: Set<UInt8> = []
        var writesCompressed: Set<Bool> = []
        for (position, offset) in fixture.commitOffsets.enumerated() {
            let start = Int(offset) + LogFormat.frameSize
            let end = Int(fixture.offsets[fixture.offsets.firstIndex(of: offset)! + 1])
            let commit = try LogCodec.decodeCommit(
                Array(fixture.bytes[start..<end]), map: store.map, recordOffset: offset)
            #expect(commit.locations.count == commit.writes.count, "commit \(position)")
            for location in commit.locations {
                let at = Int(location.blockOffset)
                blockFlags.insert(fixture.bytes[at + 10])
                let header = try LogBlocks.header(
                    fixture.bytes[at..<at + LogBlocks.headerSize], available: end - at - LogBlocks.headerSize,
                    version: 5)
                let stored = at + LogBlocks.headerSize
                let table = try LogBlocks.table(header, stored: fixture.bytes[stored..<stored + header.storedLength])
                writesCompressed.insert(!table.lengths.isEmpty && table.lengths[location.slot] > 0)
            }
        }
        #expect(fixture.bytes[8] == 6)
        #expect(blockFlags == [2])
        #expect(writesCompressed == [false, true])
    }

    @Test func aTornTailAtEveryByteOfTheLastThreeCommitsRecoversTheWholePrefix() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let fixture = try LogFixture.make(in: directory)
        let url = directory.url.appendingPathComponent("torn.stowlog")
        let start = fixture.offsets[fixture.offsets.count - 4]
        let end = fixture.offsets[fixture.offsets.count - 1]
        for cut in start..<end {
            let whole = fixture.commitsWithin(cut)
            let atBoundary = fixture.offsets.contains(cut)
            try Data(fixture.bytes.prefix(Int(cut))).write(to: url)
            do {
                let strict = try LogTest.open(url, recovery: .strict)
                #expect(atBoundary, "strict opened a file cut at \(cut)")
                #expect(try LogTest.state(strict) == fixture.states[whole])
            } catch let error as DataStoreError {
                #expect(!atBoundary && error.code == .corruptStore, "cut \(cut): \(error)")
                #expect(error.message.contains("offset \(fixture.offsets[whole + 1])"), "cut \(cut): \(error)")
            }
            #expect(Int64(try Data(contentsOf: url).count) == cut, "strict must not change the file")
            let store = try LogTest.open(url)
            #expect(try LogTest.state(store) == fixture.states[whole], "cut at \(cut)")
            let kept = fixture.offsets[whole + 1]
            if atBoundary {
                #expect(store.lastRecovery == nil)
            } else {
                #expect(store.lastRecovery?.validLength == kept)
                #expect(store.lastRecovery?.droppedBytes == cut - kept)
            }
            #expect(store.fileLength == kept)
            // The recovered store takes new saves, and they survive another reopen.
            try LogTest.insertTrip(store, "After \(cut)")
            store.close()
            let again = try LogTest.open(url)
            #expect(again.lastRecovery == nil)
            #expect(again.recordCount == fixture.states[whole].values.map(\.count).reduce(0, +) + 1)
            again.close()
        }
    }

    @Test func bitFlipsAreAlwaysDetected() throws {
        var random = SeededRandom.fromEnvironment()
        let seed = random.seed
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let fixture = try LogFixture.make(in: directory)
        let url = directory.url.appendingPathComponent("flipped.stowlog")
        let headerRecordEnd = Int(fixture.offsets[1])
        for position in 0..<fixture.bytes.count {
            var bytes = fixture.bytes
            bytes[position] ^= UInt8(1) << UInt8.random(in: 0...7, using: &random)
            try Data(bytes).write(to: url)
            if position < headerRecordEnd {
                // The file header or the header record: nothing can be trusted; both modes refuse.
                for recovery in [LogStoreConfiguration.Recovery.pointInTime, .strict] {
                    do {
                        _ = try LogTest.open(url, recovery: recovery)
                        Issue.record("seed \(seed): a flip at \(position) went unnoticed")
                    } catch let error as DataStoreError {
                        #expect(
                            [.corruptStore, .wrongFormat].contains(error.code), "seed \(seed), \(position): \(error)")
                    }
                }
                #expect(Array(try Data(contentsOf: url)) == bytes, "seed \(seed): the file changed")
                continue
            }
            let record = fixture.offsets.lastIndex { $0 <= Int64(position) }!
            let damagedAt = fixture.offsets[record]
            do {
                _ = try LogTest.open(url, recovery: .strict)
                Issue.record("seed \(seed): strict opened a flip at \(position)")
            } catch let error as DataStoreError {
                #expect(
                    error.code == .corruptStore && error.message.contains("offset \(damagedAt)"),
                    "seed \(seed), \(position): \(error)")
            }
            let store = try LogTest.open(url)
            #expect(try LogTest.state(store) == fixture.states[record - 1], "seed \(seed): flip at \(position)")
            #expect(store.lastRecovery?.validLength == damagedAt, "seed \(seed): flip at \(position)")
            store.close()
        }
    }

    @Test func aStoreWithOnlyItsHeaderOpensEmpty() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let fixture = try LogFixture.make(in: directory)
        let url = directory.url.appendingPathComponent("header-only.stowlog")
        for cut in [Int(fixture.offsets[1]), Int(fixture.offsets[1]) + 3] {
            try Data(fixture.bytes.prefix(cut)).write(to: url)
            #expect(try LogTest.open(url).recordCount == 0)
        }
        // Cut inside the header record: refused in either mode.
        try Data(fixture.bytes.prefix(Int(fixture.offsets[1]) - 1)).write(to: url)
        #expect(throws: DataStoreError.corruptStore) { _ = try LogTest.open(url) }
    }
}
