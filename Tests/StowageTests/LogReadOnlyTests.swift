import Foundation
import StowageTestSupport
import Testing

@_spi(Testing) @testable import Stowage

#if canImport(Glibc)
    import Glibc
#endif

/// A store opened with `allowsSave: false` reads and changes nothing: it opens where
/// nothing may be written, shares its lock with other readers only, and refuses saves.
@Suite("LogStore read-only")
struct LogReadOnlyTests {
    static func readOnly(
        _ url: URL, schema: Schema = LogTest.schema, recovery: LogStoreConfiguration.Recovery = .pointInTime,
        fileSystem: (any StoreFileSystem)? = nil
    ) -> LogStoreConfiguration {
        var configuration = LogTest.configuration(url, schema: schema, recovery: recovery, fileSystem: fileSystem)
        configuration.allowsSave = false
        return configuration
    }

    /// A store of three trips, closed, with a torn record after them.
    static func tornStore(in directory: LogTestDirectory) throws -> (url: URL, torn: Int) {
        let url = directory.storeURL
        let store = try LogTest.open(url)
        for name in ["Kyoto", "Lima", "Oslo"] { try LogTest.insertTrip(store, name) }
        store.close()
        let handle = try FileHandle(forWritingTo: url)
        try handle.seekToEnd()
        try handle.write(contentsOf: Data([0xAB, 0xCD, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08]))
        try handle.close()
        // What a compaction that never reached its rename leaves behind.
        try Data("left by a compaction".utf8).write(to: URL(fileURLWithPath: url.path + ".compact"))
        return (url, 10)
    }

    @Test func aReadOnlyStoreReadsWhereNothingMayBeWrittenAndChangesNothing() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let (url, torn) = try Self.tornStore(in: directory)
        let before = directoryContents(directory.url)
        let fs = ReadOnlyFileSystem()

        // The file system refuses what a writer must do first.
        #expect(throws: DataStoreError.ioFailure) {
            try LogStore(LogTest.configuration(url, fileSystem: fs), migrationPlan: nil)
        }
        #expect(!fs.refusedCalls.isEmpty)
        let refusedByWriter = fs.refusedCalls.count

        let store = try LogStore(Self.readOnly(url, fileSystem: fs), migrationPlan: nil)
        #expect(try LogTest.tripNames(store) == ["Kyoto", "Lima", "Oslo"])
        let report = try #require(store.lastRecovery)
        #expect(report.leftInFile)
        #expect(report.droppedBytes == Int64(torn))
        #expect(report.commitsReplayed == 3)
        #expect(report.description.contains("left in the file"))

        let save = #expect(throws: DataStoreError.storeUnusable) { try LogTest.insertTrip(store, "Quito") }
        #expect(save?.message.contains("read-only") == true)
        #expect(throws: DataStoreError.storeUnusable) { try store.compact() }
        #expect(throws: DataStoreError.storeUnusable) { try store.checkpoint() }
        #expect(try LogTest.tripNames(store) == ["Kyoto", "Lima", "Oslo"])
        store.close()

        #expect(fs.refusedCalls.count == refusedByWriter, "the read-only store tried \(fs.refusedCalls)")
        #expect(directoryContents(directory.url) == before)
    }

    /// Real permissions: a store whose file and directory this process may only read. A
    /// test run as root (as CI is) is not stopped by file modes, so it takes the identity
    /// of `nobody` for file access, on this thread only (`setfsuid`), for the opens.
    @Test func aStoreThisProcessMayOnlyReadOpensReadOnly() throws {
        let directory = LogTestDirectory.fresh()
        defer {
            chmod(directory.url.path, 0o755)
            directory.remove()
        }
        let url = directory.storeURL
        let store = try LogTest.open(url)
        for name in ["Kyoto", "Lima"] { try LogTest.insertTrip(store, name) }
        store.close()
        let before = directoryContents(directory.url)
        #expect(before.keys.sorted() == ["store.stowlog", "store.stowlog.lock"])
        #expect(chmod(url.path, 0o444) == 0)
        #expect(chmod(directory.url.path, 0o555) == 0)

        try FileAccessIdentity.nobody {
            // The lock file is root's, mode 0600: it can be neither opened nor made again.
            let denied = #expect(throws: DataStoreError.ioFailure) { try LogTest.open(url) }
            #expect(denied?.description.contains("Permission denied") == true)
            let reader = try LogStore(Self.readOnly(url), migrationPlan: nil)
            #expect(try LogTest.tripNames(reader) == ["Kyoto", "Lima"])
            #expect(throws: DataStoreError.storeUnusable) { try LogTest.insertTrip(reader, "Oslo") }
            reader.close()
        }
        #expect(directoryContents(directory.url) == before)
    }

    /// Where there is no lock file and none can be made (a read-only directory), the store
    /// opens without one.
    @Test func withNoLockFileAndNoWayToMakeOneItOpensWithoutALock() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let (url, _) = try Self.tornStore(in: directory)
        try FileManager.default.removeItem(atPath: url.path + ".lock")
        let before = directoryContents(directory.url)
        let fs = ReadOnlyFileSystem()

        let store = try LogStore(Self.readOnly(url, fileSystem: fs), migrationPlan: nil)
        #expect(try LogTest.tripNames(store) == ["Kyoto", "Lima", "Oslo"])
        store.close()
        // It asked to create the lock file (refused) and nothing else.
        #expect(fs.refusedCalls == ["open(createOrOpen) \(url.path).lock"])
        #expect(directoryContents(directory.url) == before)
    }

    @Test func strictRecoveryStillRefusesADamagedStoreReadOnly() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let (url, _) = try Self.tornStore(in: directory)
        let before = directoryContents(directory.url)
        let error = #expect(throws: DataStoreError.corruptStore) {
            try LogStore(Self.readOnly(url, recovery: .strict, fileSystem: ReadOnlyFileSystem()), migrationPlan: nil)
        }
        #expect(error?.message.contains("strict recovery") == true)
        #expect(directoryContents(directory.url) == before)
    }

    @Test func aMissingStoreIsNotCreatedReadOnly() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let url = directory.url.appendingPathComponent("not-yet/store.stowlog")
        let error = #expect(throws: DataStoreError.ioFailure) {
            try LogStore(Self.readOnly(url), migrationPlan: nil)
        }
        #expect(error?.message.contains("never created") == true)
        #expect(!FileManager.default.fileExists(atPath: url.deletingLastPathComponent().path))

        let inPlace = directory.storeURL
        #expect(throws: DataStoreError.ioFailure) { try LogStore(Self.readOnly(inPlace), migrationPlan: nil) }
        #expect(directoryContents(directory.url).isEmpty)
    }

    /// Readers share the lock; a writer excludes them and they exclude a writer.
    @Test func readOnlyOpenersShareTheLockAndExcludeAWriter() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let url = directory.storeURL
        let writer = try LogTest.open(url)
        try LogTest.insertTrip(writer, "Kyoto")

        let locked = #expect(throws: DataStoreError.storeLocked) {
            try LogStore(Self.readOnly(url), migrationPlan: nil)
        }
        #expect(locked?.message.contains("open for writing elsewhere") == true)
        writer.close()

        let first = try LogStore(Self.readOnly(url), migrationPlan: nil)
        let second = try LogStore(Self.readOnly(url), migrationPlan: nil)
        #expect(try LogTest.tripNames(first) == ["Kyoto"])
        #expect(try LogTest.tripNames(second) == ["Kyoto"])
        #expect(throws: DataStoreError.storeLocked) { try LogTest.open(url) }
        first.close()
        #expect(throws: DataStoreError.storeLocked) { try LogTest.open(url) }
        second.close()

        let again = try LogTest.open(url)
        try LogTest.insertTrip(again, "Lima")
        #expect(try LogTest.tripNames(again) == ["Kyoto", "Lima"])
        again.close()
    }

    /// A reserved zero tail (a writer that was not closed) stays, and so does everything
    /// after a torn record once the store is opened for writing again.
    @Test func aWriterOpeningAfterwardsCutsWhatTheReaderLeft() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let (url, torn) = try Self.tornStore(in: directory)
        let size = try #require(try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? NSNumber)
        let reader = try LogStore(Self.readOnly(url), migrationPlan: nil)
        reader.close()
        #expect((try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? NSNumber) == size)

        let writer = try LogTest.open(url)
        let report = try #require(writer.lastRecovery)
        #expect(!report.leftInFile)
        #expect(report.droppedBytes == Int64(torn))
        #expect(writer.fileLength == size.int64Value - Int64(torn))
        writer.close()
    }

    /// `ModelConfiguration(url:allowsSave: false)`: a bundled, pre-filled store.
    @Test func aContainerWithAllowsSaveFalseFetchesAndRefusesSaves() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let url = directory.storeURL
        do {
            let container = try ModelContainer(for: Trip.self, configurations: ModelConfiguration(url: url))
            let context = ModelContext(container)
            for (name, budget) in [("Kyoto", 900.0), ("Lima", 400.0), ("Oslo", 1200.0)] {
                let trip = Trip(name: name, destination: name)
                trip.budget = budget
                context.insert(trip)
            }
            try context.save()
        }
        let before = directoryContents(directory.url)

        let container = try ModelContainer(
            for: Trip.self, configurations: ModelConfiguration(url: url, allowsSave: false))
        let context = ModelContext(container)
        let cheap = try context.fetch(
            FetchDescriptor<Trip>(predicate: #Predicate { $0.budget < 1000 }, sortBy: [SortDescriptor(\.name)]))
        #expect(cheap.map(\.name) == ["Kyoto", "Lima"])
        cheap[0].budget = 1
        context.insert(Trip(name: "Quito", destination: "Quito"))
        let error = #expect(throws: DataStoreError.unsupportedFeature) { try context.save() }
        #expect(error?.message.contains("does not allow saves") == true)
        let store = try #require(container.storesForTesting.first as? LogStore)
        #expect(store.configuration.allowsSave == false)
        store.close()
        #expect(directoryContents(directory.url) == before)
    }

    /// SwiftData's pattern of a read-only bundled store beside the user's own: saves go to
    /// the writable one, and a save that would change the bundled one saves nothing at all.
    @Test func aBundledReadOnlyStoreBesideAWritableOne() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let seedURL = directory.url.appendingPathComponent("seed/seed.store")
        let userURL = directory.url.appendingPathComponent("user/user.store")
        do {
            let container = try ModelContainer(
                for: Schema([Person.self]), configurations: ModelConfiguration(url: seedURL))
            let context = ModelContext(container)
            context.insert(Person(email: "ada@example.com", name: "Ada", age: 36))
            context.insert(Person(email: "alan@example.com", name: "Alan", age: 41))
            try context.save()
        }
        let seedBefore = directoryContents(seedURL.deletingLastPathComponent())
        func open() throws -> ModelContainer {
            try ModelContainer(
                for: Schema([Person.self, Chore.self]),
                configurations:
                    ModelConfiguration("SeedData", schema: Schema([Person.self]), url: seedURL, allowsSave: false),
                ModelConfiguration("User", schema: Schema([Chore.self]), url: userURL))
        }
        do {
            let context = ModelContext(try open())
            #expect(
                try context.fetch(FetchDescriptor<Person>(sortBy: [SortDescriptor(\.name)])).map(\.name) == [
                    "Ada", "Alan",
                ])
            context.insert(Chore(seq: 1, title: "Sweep", priority: 1, isCompleted: false, dueDate: nil))
            try context.save()

            context.insert(Chore(seq: 2, title: "Dust", priority: 2, isCompleted: false, dueDate: nil))
            context.insert(Person(email: "grace@example.com", name: "Grace"))
            let error = #expect(throws: DataStoreError.unsupportedFeature) { try context.save() }
            #expect(error?.message.contains("SeedData") == true)
        }
        let context = ModelContext(try open())
        #expect(try context.fetch(FetchDescriptor<Chore>()).map(\.title) == ["Sweep"])
        #expect(try context.fetchCount(FetchDescriptor<Person>()) == 2)
        #expect(directoryContents(seedURL.deletingLastPathComponent()) == seedBefore)
    }

    /// A version 1 file whose schema now has external storage is rewritten on a writable
    /// open; read-only, it is read as it is.
    @Test func aVersionOneFileIsReadAsItIsReadOnly() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let url = directory.storeURL
        try LogExternalStorageTests.write(
            [Photo(title: "Old", bytes: LogExternalStorageTests.payload(10))], to: url, version: 1)
        let before = directoryContents(directory.url)
        var configuration = LogExternalStorageTests.configuration(url)
        configuration.allowsSave = false
        configuration.fileSystem = ReadOnlyFileSystem()
        let container = try ModelContainer(for: LogExternalStorageTests.schema, configurations: [configuration])
        let photos = try ModelContext(container).fetch(FetchDescriptor<Photo>())
        #expect(photos.map(\.bytes) == [LogExternalStorageTests.payload(10)])
        try #require(container.storesForTesting.first as? LogStore).close()
        #expect(directoryContents(directory.url) == before)
    }

    /// Every sample file of every format version opens read-only in place of a copy, with
    /// its external values, reads as a writable open reads it, and is left byte for byte.
    @Test(arguments: [
        "trips-v1.stowlog", "trips-v1-torn.stowlog", "photos-v2.stowlog", "trips-v3.stowlog", "trips-v4.stowlog",
        "trips-v5.stowlog",
    ])
    func theSamplesOpenReadOnly(_ name: String) throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let schema = name.hasPrefix("photos") ? LogSamples.photoSchema : LogSamples.schema
        func copy(into folder: String) throws -> URL {
            let url = directory.url.appendingPathComponent(folder, isDirectory: true).appendingPathComponent(name)
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            for suffix in ["", ".blobs"] {
                let sample = LogGoldenTests.samples.appendingPathComponent(name + suffix)
                guard FileManager.default.fileExists(atPath: sample.path) else { continue }
                try FileManager.default.copyItem(at: sample, to: URL(fileURLWithPath: url.path + suffix))
            }
            return url
        }
        // What a writable open reads, from a copy of its own (it may cut a tail or write a
        // checkpoint).
        let writable = try LogTest.open(try copy(into: "writable"), schema: schema)
        let expected = try LogTest.state(writable)
        let recovery = writable.lastRecovery
        writable.close()

        let url = try copy(into: "read-only")
        let before = directoryContents(url.deletingLastPathComponent())
        let fs = ReadOnlyFileSystem()
        let store = try LogStore(Self.readOnly(url, schema: schema, fileSystem: fs), migrationPlan: nil)
        #expect(try LogTest.state(store) == expected)
        let records = expected.values.reduce(0) { $0 + $1.count }
        #expect(records > 0)
        #expect(store.lastRecovery?.droppedBytes == recovery?.droppedBytes)
        #expect(store.lastRecovery?.leftInFile == (recovery == nil ? nil : true))
        store.close()
        #expect(fs.refusedCalls == ["open(createOrOpen) \(url.path).lock"])
        #expect(directoryContents(url.deletingLastPathComponent()) == before)
    }
}

/// The JSON store opened with `allowsSave: false`.
@Suite("JSONStore read-only")
struct JSONReadOnlyTests {
    typealias T = JSONStoreTesting

    static func readOnly(_ url: URL, fileSystem: (any StoreFileSystem)? = nil) throws -> JSONStore {
        var configuration = JSONTest.configuration(url, schema: T.schema, fileSystem: fileSystem)
        configuration.allowsSave = false
        return try JSONStore(configuration, migrationPlan: nil)
    }

    @Test func aReadOnlyDocumentReadsAndChangesNothing() throws {
        let url = JSONTest.freshURL()
        let directory = url.deletingLastPathComponent()
        defer { try? FileManager.default.removeItem(at: directory) }
        let writer = try JSONTest.open(url, schema: T.schema)
        try JSONTest.save(writer, inserted: [T.trip("A"), T.trip("B")])
        // Readers are kept out while it is open.
        #expect(throws: DataStoreError.storeLocked) { try Self.readOnly(url) }
        writer.close()
        // What a save that crashed before its rename leaves behind.
        try Data("{".utf8).write(to: directory.appendingPathComponent("store.json.tmp-1f"))
        let before = directoryContents(directory)

        let fs = ReadOnlyFileSystem()
        let store = try Self.readOnly(url, fileSystem: fs)
        let second = try Self.readOnly(url)
        #expect(try T.names(store) == ["A", "B"])
        #expect(try T.names(second) == ["A", "B"])
        let error = #expect(throws: DataStoreError.storeUnusable) { try JSONTest.save(store, inserted: [T.trip("C")]) }
        #expect(error?.message.contains("read-only") == true)
        #expect(throws: DataStoreError.storeLocked) { try JSONTest.open(url, schema: T.schema) }
        store.close()
        second.close()
        #expect(fs.refusedCalls.isEmpty, "the read-only store tried \(fs.refusedCalls)")
        #expect(directoryContents(directory) == before)
        #expect(try T.names(try JSONTest.open(url, schema: T.schema)) == ["A", "B"])
    }

    @Test func aMissingDocumentIsNotCreatedReadOnly() throws {
        let url = JSONTest.freshURL()
        let directory = url.deletingLastPathComponent()
        defer { try? FileManager.default.removeItem(at: directory) }
        let error = #expect(throws: DataStoreError.ioFailure) { try Self.readOnly(url) }
        #expect(error?.message.contains("never created") == true)
        #expect(directoryContents(directory).isEmpty)
    }
}

/// Runs code with this thread's file-system identity (`setfsuid`, `setfsgid`) set to
/// `nobody`, so that file modes apply even to root; the identity is restored after.
enum FileAccessIdentity {
    private typealias SetID = @convention(c) (UInt32) -> Int32

    private static func function(_ name: String) -> SetID? {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else { return nil }
        return unsafeBitCast(symbol, to: SetID.self)
    }

    static func nobody(_ body: () throws -> Void) throws {
        guard geteuid() == 0 else { return try body() }
        let setfsuid = try #require(function("setfsuid"))
        let setfsgid = try #require(function("setfsgid"))
        let (uid, gid) = (getuid(), getgid())
        _ = setfsgid(65534)
        _ = setfsuid(65534)
        defer {
            _ = setfsuid(uid)
            _ = setfsgid(gid)
        }
        // Each call returns the identity before it: the second shows the first took.
        try #require(setfsuid(65534) == 65534, "setfsuid is not permitted here")
        try body()
    }
}
