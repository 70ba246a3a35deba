import Foundation
import StowageTestSupport
import Synchronization
import Testing

@_spi(Testing) @testable import Stowage

@Suite("LogStore external storage")
struct LogExternalStorageTests {
    static let schema = Schema([Photo.self])

    static func configuration(
        _ url: URL, fileSystem: (any StoreFileSystem)? = nil, version: UInt16 = 2
    ) -> LogStoreConfiguration {
        var configuration = LogStoreConfiguration(schema: schema, url: url)
        configuration.automaticCompaction = nil
        configuration.newFileFormatVersion = version
        if let fileSystem { configuration.fileSystem = fileSystem }
        return configuration
    }

    static func container(_ url: URL, fileSystem: (any StoreFileSystem)? = nil, version: UInt16 = 2) throws
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

    /// Version 2 holds records, with their external values, in memory: every damage is
    /// found at open. Version 4 reads records back when fetched: open checks that each file
    /// is there with its length, and the checksum is checked when the value is read.
    @Test(
        arguments: [("missing", 2), ("short", 2), ("flipped", 2), ("missing", 4), ("short", 4)] as [(String, UInt16)])
    func aMissingOrDamagedFileIsRefusedAtOpenNamingIt(_ damage: String, _ version: UInt16) throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let url = directory.storeURL
        try Self.write([Photo(title: "P", bytes: Self.payload(7))], to: url, version: version)
        let name = try #require(Self.blobs(url).first)
        try Self.damage(URL(fileURLWithPath: url.path + ".blobs/" + name), damage)
        let log = try Data(contentsOf: url)
        #expect(log[8] == version)
        #expect {
            _ = try Self.container(url)
        } throws: { error in
            (error as? DataStoreError)?.code == .corruptStore && "\(error)".contains(name)
        }
        #expect(try Data(contentsOf: url) == log)
    }

    static func damage(_ file: URL, _ damage: String) throws {
        switch damage {
        case "missing": try FileManager.default.removeItem(at: file)
        case "short": try Self.payload(7).prefix(100).write(to: file)
        default:
            var bytes = try Data(contentsOf: file)
            bytes[500] ^= 0x10
            try bytes.write(to: file)
        }
    }

    /// Opening a version 4 store reads none of its external values, with a checkpoint or
    /// by replaying its commits; a fetch reads the values of the records it returns.
    @Test(arguments: [false, true])
    func aVersionFourOpenReadsNoExternalValue(fromCheckpoint: Bool) throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let url = directory.storeURL
        let photos = (0..<3).map { Photo(title: "P\($0)", bytes: Self.payload(UInt8(20 + $0))) }
        do {
            var configuration = Self.configuration(url, version: LogFormat.version.rawValue)
            configuration.checkpoints = nil
            let container = try ModelContainer(for: Self.schema, configurations: [configuration])
            let context = ModelContext(container)
            for photo in photos { context.insert(photo) }
            try context.save()
            let store = try Self.store(container)
            if fromCheckpoint { try store.checkpoint() }
            store.close()
        }
        #expect(Self.blobs(url).count == 3)
        let fileSystem = BlobReadCountingFileSystem()
        let container = try Self.container(url, fileSystem: fileSystem, version: LogFormat.version.rawValue)
        #expect(try Self.store(container).openedFromCheckpoint == fromCheckpoint)
        #expect(fileSystem.blobBytesRead == 0)
        let context = ModelContext(container)
        let one = try context.fetch(FetchDescriptor<Photo>(predicate: #Predicate { $0.title == "P1" }))
        #expect(one.map(\.bytes) == [Self.payload(21)])
        #expect(fileSystem.blobBytesRead == Self.payload(21).count)
        let all = try context.fetch(FetchDescriptor<Photo>(sortBy: [SortDescriptor(\.title)]))
        #expect(all.map(\.bytes) == (0..<3).map { Self.payload(UInt8(20 + $0)) })
    }

    /// A version 4 file whose bytes changed but not its length opens; reading its value
    /// fails naming it, and every other record still reads.
    @Test func aFlippedFileInAVersionFourStoreFailsItsReadNotTheOpen() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let url = directory.storeURL
        try Self.write(
            [Photo(title: "Damaged", bytes: Self.payload(30)), Photo(title: "Whole", bytes: Self.payload(31))],
            to: url, version: LogFormat.version.rawValue)
        let before = Self.blobs(url)
        let log = try Data(contentsOf: url)
        // The damaged photo's file is the one holding its bytes.
        let name = try #require(
            before.first {
                (try? Data(contentsOf: URL(fileURLWithPath: url.path + ".blobs/" + $0))) == Self.payload(30)
            })
        try Self.damage(URL(fileURLWithPath: url.path + ".blobs/" + name), "flipped")
        let context = ModelContext(try Self.container(url, version: LogFormat.version.rawValue))
        #expect {
            _ = try context.fetch(FetchDescriptor<Photo>(predicate: #Predicate { $0.title == "Damaged" }))
        } throws: { error in
            (error as? DataStoreError)?.code == .corruptStore && "\(error)".contains(name)
        }
        let whole = try context.fetch(FetchDescriptor<Photo>(predicate: #Predicate { $0.title == "Whole" }))
        #expect(whole.map(\.bytes) == [Self.payload(31)])
        #expect(try context.fetchCount(FetchDescriptor<Photo>()) == 2)
        #expect(try Data(contentsOf: url) == log)
        #expect(Self.blobs(url) == before)
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

    /// Compaction keeps each live value's file as it is (`Formats/log.md`, "External
    /// values"): it copies none, so the files after it are those before it even when the
    /// last commit wrote none. And a compaction that fails at any write (the disk full, say)
    /// leaves every file the old log refers to, even those of values the last commit wrote,
    /// whose names a copy made by the compaction would take: the store reopens with every
    /// value. (Compaction once wrote every live value anew under the last transaction's
    /// number, first removing the file of that name: a failed write then removed a live
    /// value's only file, and the store no longer opened.)
    @Test func compactionKeepsTheFilesAndAFailedOneLosesNone() throws {
        let photos = (0..<3).map { (title: "P\($0)", bytes: Self.payload(UInt8(20 + $0), count: 3000 + $0)) }
        var failed = 0
        for n in 1...12 {
            let directory = LogTestDirectory.fresh()
            defer { directory.remove() }
            let url = directory.storeURL
            let fileSystem = FaultInjectingFileSystem()
            let container = try Self.container(url, fileSystem: fileSystem)
            let context = ModelContext(container)
            for photo in photos { context.insert(Photo(title: photo.title, bytes: photo.bytes)) }
            try context.save()
            let before = Self.blobs(url)
            let store = try Self.store(container)
            fileSystem.arm(.write, failOn: n)
            do {
                try store.compact()
                #expect(Self.blobs(url) == before, "n \(n): the files changed")
            } catch let error as DataStoreError {
                #expect(error.code == .ioFailure, "n \(n): \(error)")
                failed += 1
            }
            fileSystem.disarm()
            store.close()
            let reopened = try ModelContext(try Self.container(url)).fetch(
                FetchDescriptor<Photo>(sortBy: [SortDescriptor(\.title)]))
            #expect(reopened.map(\.title) == photos.map(\.title), "n \(n)")
            #expect(reopened.map(\.bytes) == photos.map(\.bytes), "n \(n)")
        }
        #expect(failed >= 2, "the compactions failed \(failed) times")

        // A later commit that wrote no value: the files keep their names through compaction.
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let container = try Self.container(directory.storeURL)
        let context = ModelContext(container)
        let photo = Photo(title: "kept", bytes: Self.payload(40))
        context.insert(photo)
        try context.save()
        photo.caption = "a change beside the value"
        try context.save()
        let before = Self.blobs(directory.storeURL)
        try Self.store(container).compact()
        #expect(Self.blobs(directory.storeURL) == before)
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
        #expect(new[8] == LogFormat.version.rawValue)
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

/// The real file system, counting the bytes read from external value files.
private final class BlobReadCountingFileSystem: StoreFileSystem {
    private let base = POSIXStoreFileSystem()
    private let state = PosixMutex((blobs: Set<Int32>(), bytes: 0))

    var blobBytesRead: Int { state.withLock { $0.bytes } }

    func open(_ path: String, mode: StoreFileOpenMode) throws -> Int32? {
        let fd = try base.open(path, mode: mode)
        if let fd, path.contains(".blobs/") { state.withLock { _ = $0.blobs.insert(fd) } }
        return fd
    }
    func size(_ fd: Int32) throws -> Int64 { try base.size(fd) }
    func read(_ fd: Int32, count: Int, at offset: Int64) throws -> [UInt8] {
        let bytes = try base.read(fd, count: count, at: offset)
        state.withLock { if $0.blobs.contains(fd) { $0.bytes += bytes.count } }
        return bytes
    }
    func write(_ fd: Int32, _ bytes: [UInt8], at offset: Int64) throws { try base.write(fd, bytes, at: offset) }
    func sync(_ fd: Int32) throws { try base.sync(fd) }
    func truncate(_ fd: Int32, to length: Int64) throws { try base.truncate(fd, to: length) }
    func rename(_ from: String, to: String) throws { try base.rename(from, to: to) }
    func syncDirectory(_ path: String) throws { try base.syncDirectory(path) }
    func remove(_ path: String) throws { try base.remove(path) }
    func lock(_ fd: Int32) throws -> Bool { try base.lock(fd) }
    func sharedLock(_ fd: Int32) throws -> Bool { try base.sharedLock(fd) }
    func close(_ fd: Int32) {
        state.withLock { _ = $0.blobs.remove(fd) }
        base.close(fd)
    }
}
