import Foundation
import StowageTestSupport
import Testing

@_spi(Testing) @testable import Stowage

@Suite("LogStore external storage")
struct LogExternalStorageTests {
    static let schema = Schema([Photo.self])

    static func configuration(
        _ url: URL, fileSystem: (any LogFileSystem)? = nil, version: UInt16 = 2
    ) -> LogStoreConfiguration {
        var configuration = LogStoreConfiguration(schema: schema, url: url)
        configuration.automaticCompaction = nil
        configuration.newFileFormatVersion = version
        if let fileSystem { configuration.fileSystem = fileSystem }
        return configuration
    }

    static func container(_ url: URL, fileSystem: (any LogFileSystem)? = nil, version: UInt16 = 2) throws
        -> ModelContainer
    {
        try ModelContainer(
            for: schema, configurations: [configuration(url, fileSystem: fileSystem, version: version)])
    }

    /// Saves `photos` into a new store at `url` and closes it.
    static func write(_ photos: [Photo], to url: URL, version: UInt16 = 2) throws {
        let container = try container(url, version: version)
        let context = ModelContext(container)
        for photo in photos { context.insert(photo) }
        try context.save()
        try store(container).close()
    }

    static func store(_ container: ModelContainer) throws -> LogStore {
        try #require(container.storesForTesting.first as? LogStore)
    }

    static func blobs(_ url: URL) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: url.path + ".blobs")) ?? []).sorted()
    }

    /// Bytes that cannot appear in a log by chance.
    static func payload(_ seed: UInt8, count: Int = 20_000) -> Data {
        var generator = seed
        return Data(
            (0..<count).map { _ in
                generator = generator &* 37 &+ 11
                return generator
            })
    }

    static func contains(_ haystack: Data, _ needle: Data) -> Bool {
        haystack.range(of: needle.prefix(64)) != nil
    }

    @Test func valuesGoToFilesNamedByIdentifiersAndComeBack() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let url = directory.storeURL
        let big = Self.payload(1)
        do {
            let container = try Self.container(url)
            let context = ModelContext(container)
            context.insert(Photo(title: "Fjord; rm -rf /", bytes: big, thumbnail: Self.payload(2, count: 300)))
            context.insert(Photo(title: "Empty", bytes: Data()))
            try context.save()
            try Self.store(container).close()
        }
        let names = Self.blobs(url)
        #expect(names.count == 2)
        #expect(names.allSatisfy { LogExternalFiles.isValueFileName($0) })
        for name in names {
            #expect(LogTest.fileMode(url.path + ".blobs/" + name) == 0o600)
        }
        // The log holds references, not the bytes.
        let log = try Data(contentsOf: url)
        #expect(!Self.contains(log, big))
        #expect(log[8] == 2)
        let container = try Self.container(url)
        let photos = try ModelContext(container).fetch(FetchDescriptor<Photo>(sortBy: [SortDescriptor(\.title)]))
        #expect(photos.map(\.title) == ["Empty", "Fjord; rm -rf /"])
        #expect(photos[0].bytes.isEmpty && photos[0].thumbnail == nil)
        #expect(photos[1].bytes == big)
        #expect(photos[1].thumbnail == Self.payload(2, count: 300))
    }

    @Test func unchangedValuesKeepTheirFileAndReplacedOnesGoAtCompaction() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let url = directory.storeURL
        let container = try Self.container(url)
        let context = ModelContext(container)
        let photo = Photo(title: "A", bytes: Self.payload(3))
        let other = Photo(title: "B", bytes: Self.payload(4))
        context.insert(photo)
        context.insert(other)
        try context.save()
        let first = Self.blobs(url)
        #expect(first.count == 2)
        photo.caption = "only the caption changes"
        try context.save()
        #expect(Self.blobs(url) == first)
        photo.bytes = Self.payload(5)
        try context.save()
        #expect(Self.blobs(url).count == 3)  // the old file stays while the log refers to it
        context.delete(other)
        try context.save()
        let store = try Self.store(container)
        try store.compact()
        let after = Self.blobs(url)
        #expect(after.count == 1)
        #expect(!first.contains(after[0]))
        store.close()
        let reopened = try ModelContext(try Self.container(url)).fetch(FetchDescriptor<Photo>())
        #expect(reopened.map(\.bytes) == [Self.payload(5)])
        #expect(reopened.map(\.caption) == ["only the caption changes"])
    }

    @Test func openDeletesFilesNothingRefersToAndLeavesOthers() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let url = directory.storeURL
        try Self.write([Photo(title: "Kept", bytes: Self.payload(6))], to: url)
        // What a save that crashed after writing its file but before its commit leaves.
        let orphan = url.path + ".blobs/0-99-2-7"
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: orphan))
        let foreign = url.path + ".blobs/README.txt"
        try Data("mine".utf8).write(to: URL(fileURLWithPath: foreign))
        let container = try Self.container(url)
        #expect(!FileManager.default.fileExists(atPath: orphan))
        #expect(FileManager.default.fileExists(atPath: foreign))
        #expect(try ModelContext(container).fetch(FetchDescriptor<Photo>()).map(\.bytes) == [Self.payload(6)])
    }

    @Test(arguments: ["missing", "short", "flipped"])
    func aMissingOrDamagedFileIsRefusedNamingIt(_ damage: String) throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let url = directory.storeURL
        try Self.write([Photo(title: "P", bytes: Self.payload(7))], to: url)
        let name = try #require(Self.blobs(url).first)
        let file = URL(fileURLWithPath: url.path + ".blobs/" + name)
        switch damage {
        case "missing": try FileManager.default.removeItem(at: file)
        case "short": try Self.payload(7).prefix(100).write(to: file)
        default:
            var bytes = try Data(contentsOf: file)
            bytes[500] ^= 0x10
            try bytes.write(to: file)
        }
        let log = try Data(contentsOf: url)
        #expect {
            _ = try Self.container(url)
        } throws: { error in
            (error as? DataStoreError)?.code == .corruptStore && "\(error)".contains(name)
        }
        #expect(try Data(contentsOf: url) == log)
    }

    @Test(arguments: [FaultInjectingFileSystem.Operation.write, .sync, .syncDirectory])
    func aFailedFileWriteFailsTheSaveAndLeavesNothing(_ operation: FaultInjectingFileSystem.Operation) throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let url = directory.storeURL
        let fileSystem = FaultInjectingFileSystem()
        let container = try Self.container(url, fileSystem: fileSystem)
        let context = ModelContext(container)
        context.insert(Photo(title: "First", bytes: Self.payload(8)))
        try context.save()
        let store = try Self.store(container)
        let length = store.fileLength
        let files = Self.blobs(url)
        fileSystem.arm(operation, failOn: 1)
        context.insert(Photo(title: "Second", bytes: Self.payload(9)))
        #expect(throws: DataStoreError.self) { try context.save() }
        fileSystem.disarm()
        #expect(fileSystem.injected == [operation])
        #expect(store.fileLength == length)
        #expect(Self.blobs(url) == files)
        // The store goes on, and the retried save lands whole.
        try context.save()
        store.close()
        let photos = try ModelContext(try Self.container(url)).fetch(
            FetchDescriptor<Photo>(sortBy: [SortDescriptor(\.title)]))
        #expect(photos.map(\.title) == ["First", "Second"])
        #expect(photos.map(\.bytes) == [Self.payload(8), Self.payload(9)])
    }

    /// A version 1 file cannot refer to external files: opening rewrites it in the current
    /// version (3), which can.
    @Test func aVersionOneFileIsRewrittenInTheCurrentVersionOnOpen() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let url = directory.storeURL
        try Self.write([Photo(title: "Old", bytes: Self.payload(10))], to: url, version: 1)
        let old = try Data(contentsOf: url)
        #expect(old[8] == 1)
        #expect(Self.contains(old, Self.payload(10)))  // version 1 keeps the bytes inline
        let container = try Self.container(url)
        let new = try Data(contentsOf: url)
        #expect(new[8] == LogFormat.version)
        #expect(!Self.contains(new, Self.payload(10)))
        #expect(Self.blobs(url).count == 1)
        let context = ModelContext(container)
        #expect(try context.fetch(FetchDescriptor<Photo>()).map(\.bytes) == [Self.payload(10)])
        context.insert(Photo(title: "New", bytes: Self.payload(11)))
        try context.save()
        try Self.store(container).close()
        #expect(try ModelContext(try Self.container(url)).fetchCount(FetchDescriptor<Photo>()) == 2)
    }
}
