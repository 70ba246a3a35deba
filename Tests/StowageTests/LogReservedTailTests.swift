import Foundation
import StowageTestSupport
import Testing

@_spi(Testing) @testable import Stowage

/// The zeros a writer reserves after its last record (`Formats/log.md`, "Writing"): saves
/// write into them without growing the file, a crash leaves them behind, and opening reads
/// them as the end of the log in either recovery mode.
@Suite("LogStore reserved tail")
struct LogReservedTailTests {
    static func size(_ url: URL) throws -> Int64 {
        Int64(try Data(contentsOf: url).count)
    }

    static func names(_ count: Int) -> [String] { (0..<count).map { "T\($0)" } }

    /// Saves `names` in a store in `directory` and copies its file while it is open (what
    /// a crash would leave), then closes it: the copy, and the length of its valid prefix.
    static func crashCopy(saving names: [String], in directory: LogTestDirectory) throws -> (URL, length: Int64) {
        let store = try LogTest.open(directory.storeURL)
        for name in names { _ = try LogTest.insertTrip(store, name) }
        let copy = directory.url.appendingPathComponent("crashed.stowlog")
        try Data(contentsOf: directory.storeURL).write(to: copy)
        let length = store.fileLength
        store.close()
        return (copy, length)
    }

    @Test func savesWriteIntoReservedZerosAndCloseCutsThemOff() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let store = try LogTest.open(directory.storeURL)
        _ = try LogTest.insertTrip(store, "First")
        let reserved = try Self.size(directory.storeURL)
        // A small file reserves its minimum, 4 KiB.
        #expect(reserved == store.fileLength + 4096)
        for name in Self.names(20) { _ = try LogTest.insertTrip(store, name) }
        #expect(store.fileLength < reserved, "the saves should fit in the reserved zeros")
        // The saves went into the zeros: the file did not grow, and zeros still follow them.
        #expect(try Self.size(directory.storeURL) == reserved)
        let bytes = try Data(contentsOf: directory.storeURL)
        #expect(bytes[Int(store.fileLength)...].allSatisfy { $0 == 0 })
        let length = store.fileLength
        store.close()
        #expect(try Self.size(directory.storeURL) == length)
        let reopened = try LogTest.open(directory.storeURL, recovery: .strict)
        #expect(try LogTest.tripNames(reopened) == (["First"] + Self.names(20)).sorted())
    }

    @Test func aCrashLeavesZerosThatOpenAsTheEndInEitherMode() throws {
        for recovery in [LogStoreConfiguration.Recovery.strict, .pointInTime] {
            let directory = LogTestDirectory.fresh()
            defer { directory.remove() }
            let (copy, length) = try Self.crashCopy(saving: Self.names(5), in: directory)
            let size = try Self.size(copy)
            #expect(size > length + 1000)
            let reopened = try LogTest.open(copy, recovery: recovery)
            #expect(reopened.lastRecovery == nil)
            #expect(reopened.fileLength == length)
            #expect(try LogTest.tripNames(reopened) == Self.names(5))
            // The next saves go into the zeros the crash left.
            _ = try LogTest.insertTrip(reopened, "After")
            #expect(try Self.size(copy) == size)
            reopened.close()
            let again = try LogTest.open(copy, recovery: .strict)
            #expect(try LogTest.tripNames(again) == (Self.names(5) + ["After"]).sorted())
        }
    }

    @Test func theReservationIsAnEighthOfTheFileWithinItsBounds() {
        #expect(LogStore.reservation(after: 1000, most: 1 << 20) == 4096)
        #expect(LogStore.reservation(after: 800_000, most: 1 << 20) == 100_000)
        #expect(LogStore.reservation(after: 100 << 20, most: 1 << 20) == 1 << 20)
        #expect(LogStore.reservation(after: 100 << 20, most: 0) == 0)
        #expect(LogStore.reservation(after: 1000, most: 100) == 100)
    }

    /// Saves that outgrow the zeros grow the file and reserve again after their record.
    @Test func aGrowingStoreReservesAnEighthOfItsFile() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let store = try LogTest.open(directory.storeURL)
        // Random letters, which LZ4 cannot shrink: about 3 KiB a save, 600 KiB in all.
        var rng = SeededRandom.fromEnvironment()
        // Where the last save that grew the file ended, and the file's size then.
        var grown: (end: Int64, size: Int64) = (0, 0)
        for i in 0..<200 {
            let noise = String(
                (0..<3000).map { _ in Character(UnicodeScalar(UInt8.random(in: 97...122, using: &rng))) })
            try LogTest.insertTrip(store, "T\(i) " + noise)
            let size = try Self.size(directory.storeURL)
            if size != grown.size { grown = (store.fileLength, size) }
        }
        #expect(store.fileLength > 500_000)
        let size = try Self.size(directory.storeURL)
        #expect(size > store.fileLength)
        #expect(size <= store.fileLength + max(4096, size / 8 + 1))
        // The save that last grew the file wrote an eighth of the file's length as zeros
        // after its record, more than one write of 64 KiB of them.
        #expect(size == grown.size)
        #expect(grown.size == grown.end + grown.end / 8, "seed \(rng.seed): \(grown)")
        #expect(grown.end / 8 > 64 << 10)
        let bytes = try Data(contentsOf: directory.storeURL)
        #expect(bytes[Int(store.fileLength)...].allSatisfy { $0 == 0 })
    }

    @Test func fewerZerosThanAFrameAlsoEndTheLog() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let store = try LogTest.open(directory.storeURL)
        _ = try LogTest.insertTrip(store, "Only")
        store.close()
        let length = try Self.size(directory.storeURL)
        for count in [1, 7, 15, 16, 17] {
            var bytes = try Data(contentsOf: directory.storeURL).prefix(Int(length))
            bytes.append(Data(count: count))
            try bytes.write(to: directory.storeURL)
            let reopened = try LogTest.open(directory.storeURL, recovery: .strict)
            #expect(reopened.lastRecovery == nil, "\(count) zeros")
            #expect(try LogTest.tripNames(reopened) == ["Only"], "\(count) zeros")
            reopened.close()
            #expect(try Self.size(directory.storeURL) == length, "\(count) zeros")
        }
    }

    /// A record cut short inside the zeros has bytes that are not zero: a torn tail, which
    /// point-in-time recovery cuts off and strict recovery refuses, as without the zeros.
    @Test func aTornRecordInsideTheZerosIsATornTail() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let (copy, length) = try Self.crashCopy(saving: Self.names(3), in: directory)
        // The first 10 bytes of a commit's frame, then the zeros that were there.
        var bytes = try Data(contentsOf: copy)
        bytes.replaceSubrange(Int(length)..<Int(length) + 10, with: [0x40, 0, 0, 0, 2, 0, 0, 0, 0x40, 0])
        try bytes.write(to: copy)
        #expect {
            _ = try LogTest.open(copy, recovery: .strict)
        } throws: { error in
            let error = error as? DataStoreError
            return error?.code == .corruptStore && error?.message.contains("offset \(length)") == true
        }
        let recovered = try LogTest.open(copy, recovery: .pointInTime)
        #expect(recovered.lastRecovery?.validLength == length)
        #expect(recovered.lastRecovery?.droppedBytes == Int64(bytes.count) - length)
        #expect(try LogTest.tripNames(recovered) == Self.names(3))
    }

    @Test func aZeroReservationLeavesTheFileAtItsLastRecord() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        var configuration = LogTest.configuration(directory.storeURL)
        configuration.reservedTail = 0
        let store = try LogStore(configuration, migrationPlan: nil)
        for name in Self.names(4) {
            _ = try LogTest.insertTrip(store, name)
            #expect(try Self.size(directory.storeURL) == store.fileLength)
        }
    }
}
