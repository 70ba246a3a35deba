import Foundation
import StowageTestSupport
import Testing

@_spi(Testing) @testable import Stowage

/// The committed sample files in `Formats/samples/` still read, and the writer still
/// produces them byte for byte. `STOWAGE_WRITE_SAMPLES=1 swift test --filter LogGolden`
/// rewrites them after a deliberate format change (bump the format version first).
@Suite("LogStore format samples")
struct LogGoldenTests {
    static let samples = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Formats/samples")

    /// A copy of a sample in a fresh directory (opening creates a lock file and may truncate).
    static func copy(_ name: String) throws -> (LogTestDirectory, URL) {
        let directory = LogTestDirectory.fresh()
        let url = directory.url.appendingPathComponent(name)
        try FileManager.default.copyItem(at: samples.appendingPathComponent(name), to: url)
        return (directory, url)
    }

    @Test func theWriterReproducesTheSamples() throws {
        if ProcessInfo.processInfo.environment["STOWAGE_WRITE_SAMPLES"] == "1" {
            try LogSamples.write(to: Self.samples)
        }
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        try LogSamples.write(to: directory.url)
        for name in ["trips-v1.stowlog", "trips-v1-torn.stowlog"] {
            let fresh = try Data(contentsOf: directory.url.appendingPathComponent(name))
            let committed = try Data(contentsOf: Self.samples.appendingPathComponent(name))
            #expect(fresh == committed, "\(name) differs from what the writer produces")
        }
    }

    @Test func theSampleHoldsFourCommitsRawAndCompressed() throws {
        let (directory, url) = try Self.copy("trips-v1.stowlog")
        defer { directory.remove() }
        let bytes = Array(try Data(contentsOf: url))
        #expect(Array(bytes.prefix(8)) == Array("STOWLOG\0".utf8))
        let offsets = try LogStore.recordOffsets(ofFileAt: url)
        #expect(offsets.count == 6)  // header record, four commits, end
        #expect(offsets.last == Int64(bytes.count))
        let flags = offsets.dropFirst().dropLast().map { bytes[Int($0) + 5] }
        #expect(flags.contains(0) && flags.contains(1))
    }

    @Test func theSampleOpensWithItsContents() throws {
        let (directory, url) = try Self.copy("trips-v1.stowlog")
        defer { directory.remove() }
        let container = try ModelContainer(
            for: LogSamples.schema, configurations: [LogStoreConfiguration(url: url, recovery: .strict)])
        let context = ModelContext(container)
        let trips = try context.fetch(FetchDescriptor<LogSampleTrip>(sortBy: [SortDescriptor(\.name)]))
        #expect(trips.map(\.name) == ["Kyoto", "Lisbon", "Oslo"])
        #expect(trips.map(\.budget) == [2400.5, 1250, 0])
        #expect(trips[0].note == "Temples")
        #expect(trips[1].items.map(\.name) == ["Passport"])
        #expect(trips[2].items.count == 20)
        #expect(trips[2].items.map(\.quantity).reduce(0, +) == 210)
        #expect(trips[1].startDate == Date(timeIntervalSince1970: 1_780_000_000))
        #expect(trips.allSatisfy { $0.persistentModelID.storeIdentifier == LogSamples.storeIdentifier })
        #expect(try context.fetchCount(FetchDescriptor<LogSampleItem>()) == 21)
        let store = try #require(container.storesForTesting.first as? LogStore)
        #expect(store.createdAt == LogSamples.firstTimestamp)
        #expect(store.lastRecovery == nil)
    }

    @Test func theTornSampleKeepsItsFirstThreeCommits() throws {
        let (directory, url) = try Self.copy("trips-v1-torn.stowlog")
        defer { directory.remove() }
        let size = Int64(try Data(contentsOf: url).count)
        do {
            _ = try LogStore(
                LogStoreConfiguration(schema: LogSamples.schema, url: url, recovery: .strict), migrationPlan: nil)
            Issue.record("strict recovery should refuse the torn sample")
        } catch let error as DataStoreError {
            #expect(error.code == .corruptStore)
            #expect(error.message.contains("offset"))
        }
        #expect(Int64(try Data(contentsOf: url).count) == size)
        let store = try LogStore(LogStoreConfiguration(schema: LogSamples.schema, url: url), migrationPlan: nil)
        let report = try #require(store.lastRecovery)
        #expect(report.commitsReplayed == 3)
        #expect(report.validLength + report.droppedBytes == size)
        #expect(Int64(try Data(contentsOf: url).count) == report.validLength)
        #expect(store.allSnapshots(of: "LogSampleTrip").count == 2)
        #expect(store.allSnapshots(of: "LogSampleItem").count == 21)
    }
}
