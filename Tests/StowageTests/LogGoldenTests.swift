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
        #expect(try Data(contentsOf: directory.url.appendingPathComponent("trips-v1.stowlog"))[8] == 1)
    }

    static func blobNames(_ directory: URL) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory.path + "/photos-v2.stowlog.blobs").sorted()
    }

    @Test func theWriterReproducesTheVersion2Sample() throws {
        if ProcessInfo.processInfo.environment["STOWAGE_WRITE_SAMPLES"] == "1" {
            try LogSamples.writeVersion2(to: Self.samples)
        }
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        try LogSamples.writeVersion2(to: directory.url)
        let fresh = try Data(contentsOf: directory.url.appendingPathComponent("photos-v2.stowlog"))
        #expect(fresh == (try Data(contentsOf: Self.samples.appendingPathComponent("photos-v2.stowlog"))))
        #expect(fresh[8] == 2)
        let names = try Self.blobNames(directory.url)
        #expect(names == (try Self.blobNames(Self.samples)))
        // Harbour's bytes and thumbnail, and both versions of the glacier's bytes.
        #expect(names.count == 4)
        for name in names {
            let path = "photos-v2.stowlog.blobs/" + name
            #expect(
                try Data(contentsOf: directory.url.appendingPathComponent(path))
                    == (try Data(contentsOf: Self.samples.appendingPathComponent(path))), "\(path) differs")
        }
    }

    @Test func theVersion2SampleOpensWithItsExternalValues() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        for name in ["photos-v2.stowlog", "photos-v2.stowlog.blobs"] {
            try FileManager.default.copyItem(
                at: Self.samples.appendingPathComponent(name), to: directory.url.appendingPathComponent(name))
        }
        let url = directory.url.appendingPathComponent("photos-v2.stowlog")
        var configuration = LogStoreConfiguration(url: url, recovery: .strict)
        configuration.automaticCompaction = nil
        let container = try ModelContainer(for: LogSamples.photoSchema, configurations: [configuration])
        let photos = try ModelContext(container).fetch(FetchDescriptor<Photo>(sortBy: [SortDescriptor(\.title)]))
        #expect(photos.map(\.title) == ["Glacier", "Harbour"])
        #expect(photos.map(\.caption) == ["", "Bergen, 6 a.m."])
        #expect(photos[0].bytes == LogSamples.photoBytes(4, count: 512))
        #expect(photos[0].thumbnail == nil)
        #expect(photos[1].bytes == LogSamples.photoBytes(1, count: 2048))
        #expect(photos[1].thumbnail == LogSamples.photoBytes(2, count: 96))
        // Opening deleted the replaced glacier file, which no live record refers to.
        #expect(try Self.blobNames(directory.url).count == 3)
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
        #expect(try store.allSnapshots(of: "LogSampleTrip").count == 2)
        #expect(try store.allSnapshots(of: "LogSampleItem").count == 21)
    }

    @Test func theWriterReproducesTheVersion3Sample() throws {
        if ProcessInfo.processInfo.environment["STOWAGE_WRITE_SAMPLES"] == "1" {
            try LogSamples.writeVersion3(to: Self.samples)
        }
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        try LogSamples.writeVersion3(to: directory.url)
        let url = directory.url.appendingPathComponent("trips-v3.stowlog")
        let fresh = try Data(contentsOf: url)
        #expect(fresh == (try Data(contentsOf: Self.samples.appendingPathComponent("trips-v3.stowlog"))))
        #expect(fresh[8] == 3)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path) == ["trips-v3.stowlog"])
        // The header record, four commits, a checkpoint, a commit, a checkpoint; then the end.
        let offsets = try LogStore.recordOffsets(ofFileAt: url)
        #expect(offsets.count == 9)
        #expect(offsets.last == Int64(fresh.count))
        let types = offsets.dropLast().map { fresh[Int($0) + 4] }
        #expect(types == [1, 2, 2, 2, 2, 3, 2, 3])
        // Up to the first checkpoint it is the version 1 sample, but for the file header
        // (the version, and so its checksum): the same salt, header record and commits.
        let v1 = try Data(contentsOf: Self.samples.appendingPathComponent("trips-v1.stowlog"))
        #expect(offsets[5] == Int64(v1.count))
        #expect(fresh[32..<v1.count] == v1[32...])
    }

    @Test func theVersion3SampleOpensFromItsLastCheckpoint() throws {
        let (directory, url) = try Self.copy("trips-v3.stowlog")
        defer { directory.remove() }
        let size = try Data(contentsOf: url).count
        var configuration = LogStoreConfiguration(url: url, recovery: .strict)
        configuration.automaticCompaction = nil
        configuration.checkpoints = nil
        let container = try ModelContainer(for: LogSamples.schema, configurations: [configuration])
        let store = try #require(container.storesForTesting.first as? LogStore)
        #expect(store.openedFromCheckpoint)
        #expect(store.lastRecovery == nil)
        #expect(store.checkpointState.endsWithCheckpoint)
        let context = ModelContext(container)
        let trips = try context.fetch(FetchDescriptor<LogSampleTrip>(sortBy: [SortDescriptor(\.name)]))
        #expect(trips.map(\.name) == ["Kyoto", "Lisbon", "Oslo"])
        #expect(trips.map(\.budget) == [2400.5, 1250, 0])
        #expect(trips[1].items.map(\.name) == ["Passport"])
        #expect(trips[2].items.count == 19)
        #expect(trips[2].items.map(\.quantity).reduce(0, +) == 190)
        #expect(try context.fetchCount(FetchDescriptor<LogSampleItem>()) == 20)
        #expect(trips.allSatisfy { $0.persistentModelID.storeIdentifier == LogSamples.storeIdentifier })
        #expect(store.createdAt == LogSamples.firstTimestamp)
        // Opening and reading wrote nothing.
        #expect(try Data(contentsOf: url).count == size)
    }
}
