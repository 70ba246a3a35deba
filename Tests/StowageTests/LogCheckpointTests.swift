import Foundation
import IndexKey
import StowageTestSupport
import Testing

@_spi(Testing) @testable import Stowage

@Suite("LogStore checkpoints (format version 3)")
struct LogCheckpointTests {
    static let schema = Schema([Person.self, Chore.self])

    static func configuration(
        _ url: URL, minimumCommitBytes: Int64? = 0, version: UInt16? = nil, fileSystem: (any StoreFileSystem)? = nil,
        recovery: LogStoreConfiguration.Recovery = .pointInTime, chunk: Int? = nil
    ) -> LogStoreConfiguration {
        var configuration = LogStoreConfiguration(schema: schema, url: url, recovery: recovery)
        if let chunk { configuration.commitChunkBytes = chunk }
        configuration.checkpoints = minimumCommitBytes.map { .init(minimumCommitBytes: $0) }
        configuration.automaticCompaction = nil
        if let version { configuration.newFileFormatVersion = version }
        if let fileSystem { configuration.fileSystem = fileSystem }
        return configuration
    }

    /// A container on a log store, and the store.
    struct Opened {
        let container: ModelContainer
        let store: LogStore
    }

    static func open(
        _ url: URL, minimumCommitBytes: Int64? = 0, version: UInt16? = nil, fileSystem: (any StoreFileSystem)? = nil,
        recovery: LogStoreConfiguration.Recovery = .pointInTime, chunk: Int? = nil
    ) throws -> Opened {
        let container = try ModelContainer(
            for: schema,
            configurations: [
                configuration(
                    url, minimumCommitBytes: minimumCommitBytes, version: version, fileSystem: fileSystem,
                    recovery: recovery, chunk: chunk)
            ])
        return Opened(container: container, store: try #require(container.storesForTesting.first as? LogStore))
    }

    /// Saves people and chores through a context, then updates and deletes some.
    static func fill(_ opened: Opened, people: Int = 60, chores: Int = 80) throws {
        try PeopleAndChores.insert(
            into: ModelContext(opened.container), people: people, chores: chores, updated: 20, deleted: 10)
    }

    /// Every index's entries and every entity's keys: what a checkpoint must reproduce.
    static func indexes(_ store: LogStore) -> [String: [[String]]] {
        store.withTable { table in
            table.entities.mapValues { records in
                [records.rows.map { "\($0.key)" }]
                    + records.indexes.map { index in index.tree.map { "\($0.key.bytes) \($0.value)" } }
            }
        }
    }

    /// The results of queries that use each index, in order.
    static func queries(_ opened: Opened) throws -> [String] {
        let context = ModelContext(opened.container)
        var lines: [String] = []
        let name = "Name 3"
        lines += try context.fetch(
            FetchDescriptor<Person>(predicate: #Predicate { $0.name == name }, sortBy: [SortDescriptor(\.age)])
        ).map { "\($0.email) \($0.age)" }
        lines += try context.fetch(FetchDescriptor<Person>(predicate: #Predicate { $0.age > 50 })).map(\.email)
        lines += try context.fetch(FetchDescriptor<Chore>(predicate: #Predicate { $0.isCompleted && $0.priority >= 2 }))
            .map { "\($0.seq)" }
        var due = FetchDescriptor<Chore>(sortBy: [SortDescriptor(\.dueDate, order: .reverse)])
        due.fetchLimit = 10
        lines += try context.fetch(due).map { "\($0.seq)" }
        return lines
    }

    @Test func closingWritesACheckpointThatTheNextOpenLoads() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let storeOpened = try Self.open(directory.storeURL)
        let store = storeOpened.store
        #expect(!store.openedFromCheckpoint)
        try Self.fill(storeOpened)
        #expect(store.checkpointState.bytes == 0)
        let indexes = Self.indexes(store)
        let answers = try Self.queries(storeOpened)
        let length = store.fileLength
        store.close()
        // Closing appended one checkpoint record after the last commit.
        let offsets = try LogStore.recordOffsets(ofFileAt: directory.storeURL)
        #expect(offsets.last.map { $0 > length } == true)
        #expect(try Data(contentsOf: directory.storeURL)[8] == LogFormat.version.rawValue)

        let reopenedOpened = try Self.open(directory.storeURL)
        let reopened = reopenedOpened.store
        #expect(reopened.openedFromCheckpoint)
        #expect(reopened.checkpointState.endsWithCheckpoint)
        #expect(Self.indexes(reopened) == indexes)
        #expect(try Self.queries(reopenedOpened) == answers)
        // The unique index loaded from the checkpoint finds the record an insert with the
        // same email replaces (SwiftData's upsert).
        let context = ModelContext(reopenedOpened.container)
        let count = try context.fetchCount(FetchDescriptor<Person>())
        context.insert(Person(email: "p0@example.com", name: "Someone"))
        try context.save()
        let email = "p0@example.com"
        let found = try ModelContext(reopenedOpened.container).fetch(
            FetchDescriptor<Person>(predicate: #Predicate { $0.email == email }))
        #expect(found.map(\.name) == ["Someone"])
        #expect(try context.fetchCount(FetchDescriptor<Person>()) == count)
    }

    @Test func closingWithoutEnoughNewCommitsWritesNone() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let storeOpened = try Self.open(directory.storeURL, minimumCommitBytes: 1 << 30)
        let store = storeOpened.store
        try Self.fill(storeOpened)
        let length = store.fileLength
        store.close()
        #expect(try LogStore.recordOffsets(ofFileAt: directory.storeURL).last == length)
        let offOpened = try Self.open(directory.storeURL, minimumCommitBytes: nil)
        let off = offOpened.store
        #expect(!off.openedFromCheckpoint)
        off.close()
        #expect(try LogStore.recordOffsets(ofFileAt: directory.storeURL).last == length)
    }

    /// Version 3 uses a checkpoint only when it ends the file; version 4 applies the
    /// commits after it (`LogBlockReadTests` checks that more closely).
    @Test(arguments: [UInt16(3), 4])
    func aCommitAfterTheLastCheckpoint(version: UInt16) throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let storeOpened = try Self.open(directory.storeURL, minimumCommitBytes: nil, version: version)
        let store = storeOpened.store
        try Self.fill(storeOpened, people: 30, chores: 30)
        try store.checkpoint()
        #expect(store.checkpointState.endsWithCheckpoint)
        // A save after the checkpoint, and no checkpoint on close: as after a crash.
        let context = ModelContext(storeOpened.container)
        context.insert(Person(email: "late@example.com", name: "Name 3", age: 33))
        try context.save()
        #expect(!store.checkpointState.endsWithCheckpoint)
        let indexes = Self.indexes(store)
        let answers = try Self.queries(storeOpened)
        store.close()
        let reopenedOpened = try Self.open(directory.storeURL, minimumCommitBytes: nil)
        let reopened = reopenedOpened.store
        #expect(reopened.openedFromCheckpoint == (version >= 4))
        #expect(Self.indexes(reopened) == indexes)
        #expect(try Self.queries(reopenedOpened) == answers)
    }

    /// Appends a checkpoint record with a valid checksum to a closed store's file.
    static func appendForged(_ checkpoint: LogCheckpoint, to url: URL) throws {
        let fs = POSIXStoreFileSystem()
        let fd = try #require(try fs.open(url.path, mode: .existing))
        defer { fs.close(fd) }
        let size = try fs.size(fd)
        guard case .success(let header) = LogFormat.decodeFileHeader(try fs.read(fd, count: 32, at: 0), fileSize: size)
        else {
            Issue.record("no header")
            return
        }
        try fs.write(
            fd, LogFormat.frame(type: .checkpoint, payload: checkpoint.encode(), salt: header.salt, offset: size),
            at: size)
    }

    /// Version 3's check at open compares a checkpoint with the replayed records. (Version
    /// 4 does not decode the commits before it: `LogBlockReadTests` forges one there.)
    @Test(arguments: ["a different key", "a wrong primary key in an index", "a wrong next key", "a wrong transaction"])
    func aCheckpointThatDisagreesWithTheCommitsIsIgnored(fault: String) throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let storeOpened = try Self.open(directory.storeURL, version: 3)
        let store = storeOpened.store
        try Self.fill(storeOpened, people: 20, chores: 20)
        let indexes = Self.indexes(store)
        let answers = try Self.queries(storeOpened)
        var checkpoint = try store.withTable { try LogCheckpoint($0, transactionID: 3, map: store.map) }
        store.close()
        switch fault {
        case "a different key":
            checkpoint.entities[0].keys[checkpoint.entities[0].keys.count - 1] += 1000
        case "a wrong primary key in an index":
            checkpoint.entities[0].indexes[1].primaryKeys[0] += 1000
        case "a wrong next key":
            checkpoint.nextPrimaryKey += 1
        default:
            checkpoint.transactionID += 1
        }
        try Self.appendForged(checkpoint, to: directory.storeURL)
        let reopenedOpened = try Self.open(directory.storeURL, minimumCommitBytes: nil, recovery: .strict)
        let reopened = reopenedOpened.store
        #expect(!reopened.openedFromCheckpoint)
        #expect(Self.indexes(reopened) == indexes)
        #expect(try Self.queries(reopenedOpened) == answers)
    }

    @Test func theForgingHelperWritesACheckpointTheStoreAccepts() throws {
        // The control for the test above: the same record, unchanged, is loaded.
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let storeOpened = try Self.open(directory.storeURL, minimumCommitBytes: nil, version: 3)
        let store = storeOpened.store
        try Self.fill(storeOpened, people: 20, chores: 20)
        let checkpoint = try store.withTable { try LogCheckpoint($0, transactionID: 3, map: store.map) }
        let indexes = Self.indexes(store)
        store.close()
        try Self.appendForged(checkpoint, to: directory.storeURL)
        let reopenedOpened = try Self.open(directory.storeURL, minimumCommitBytes: nil, recovery: .strict)
        let reopened = reopenedOpened.store
        #expect(reopened.openedFromCheckpoint)
        #expect(Self.indexes(reopened) == indexes)
    }

    @Test func aTornCheckpointIsCutOffAndLosesNoCommit() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let storeOpened = try Self.open(directory.storeURL)
        let store = storeOpened.store
        try Self.fill(storeOpened, people: 20, chores: 20)
        let length = store.fileLength
        let indexes = Self.indexes(store)
        store.close()
        let whole = try Data(contentsOf: directory.storeURL)
        #expect(whole.count > Int(length) + 16)
        for cut in [Int(length) + 5, Int(length) + 16, whole.count - 1] {
            try whole.prefix(cut).write(to: directory.storeURL)
            #expect(throws: DataStoreError.self) {
                _ = try Self.open(directory.storeURL, minimumCommitBytes: nil, recovery: .strict)
            }
            let reopenedOpened = try Self.open(directory.storeURL, minimumCommitBytes: nil)
            let reopened = reopenedOpened.store
            #expect(reopened.lastRecovery?.validLength == length)
            #expect(!reopened.openedFromCheckpoint)
            #expect(Self.indexes(reopened) == indexes)
            reopened.close()
        }
    }

    @Test func aFlippedByteInACheckpointIsDamage() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let storeOpened = try Self.open(directory.storeURL)
        let store = storeOpened.store
        try Self.fill(storeOpened, people: 20, chores: 20)
        let length = store.fileLength
        store.close()
        var bytes = try Data(contentsOf: directory.storeURL)
        bytes[bytes.count - 3] ^= 0x20
        try bytes.write(to: directory.storeURL)
        do {
            _ = try Self.open(directory.storeURL, recovery: .strict)
            Issue.record("strict recovery opened a damaged checkpoint")
        } catch let error as DataStoreError {
            #expect(error.code == .corruptStore)
            #expect(error.message.contains("offset \(length)"), "\(error)")
        }
        let reopenedOpened = try Self.open(directory.storeURL, minimumCommitBytes: nil)
        let reopened = reopenedOpened.store
        #expect(reopened.lastRecovery?.validLength == length)
        #expect(reopened.withTable { $0.count } == 30)
    }

    @Test func compactionEndsTheFileWithACheckpoint() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let storeOpened = try Self.open(directory.storeURL, minimumCommitBytes: nil)
        let store = storeOpened.store
        try Self.fill(storeOpened)
        let indexes = Self.indexes(store)
        try store.compact()
        #expect(store.checkpointState.endsWithCheckpoint)
        #expect(store.deadBytes == 0)
        store.close()
        let reopenedOpened = try Self.open(directory.storeURL, minimumCommitBytes: nil)
        let reopened = reopenedOpened.store
        #expect(reopened.openedFromCheckpoint)
        #expect(Self.indexes(reopened) == indexes)
    }

    @Test func supersededCheckpointsAreDeadBytes() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let storeOpened = try Self.open(directory.storeURL, minimumCommitBytes: nil)
        let store = storeOpened.store
        let context = ModelContext(storeOpened.container)
        for i in 0..<50 { context.insert(Person(email: "\(i)", name: "N", age: i)) }
        try context.save()
        #expect(store.deadBytes == 0)
        try store.checkpoint()
        let first = store.checkpointState.bytes
        #expect(first > 0)
        #expect(store.deadBytes == 0)
        try store.checkpoint()
        #expect(store.checkpointState.bytes == 2 * first)
        #expect(store.deadBytes == first)
        try store.compact()
        #expect(store.deadBytes == 0)
        #expect(store.checkpointState.bytes == first)
    }

    @Test func aVersionTwoFileGetsCheckpointsOnlyOnceCompactionRewritesIt() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let storeOpened = try Self.open(directory.storeURL, version: 2)
        let store = storeOpened.store
        try Self.fill(storeOpened, people: 20, chores: 20)
        do {
            try store.checkpoint()
            Issue.record("a version 2 file took a checkpoint")
        } catch let error as DataStoreError {
            #expect(error.code == .unsupportedFeature)
            #expect(error.message.contains("compact()"))
        }
        let length = store.fileLength
        store.close()
        #expect(try Data(contentsOf: directory.storeURL)[8] == 2)
        #expect(try LogStore.recordOffsets(ofFileAt: directory.storeURL).last == length)

        let againOpened = try Self.open(directory.storeURL)
        let again = againOpened.store
        #expect(!again.openedFromCheckpoint)
        try again.compact()
        again.close()
        #expect(try Data(contentsOf: directory.storeURL)[8] == LogFormat.version.rawValue)
        #expect(try Self.open(directory.storeURL).store.openedFromCheckpoint)
    }

    @Test(arguments: [FaultInjectingFileSystem.Operation.write, .sync])
    func aFailedCheckpointWriteOrSync(operation: FaultInjectingFileSystem.Operation) throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let fs = FaultInjectingFileSystem()
        let storeOpened = try Self.open(directory.storeURL, minimumCommitBytes: nil, fileSystem: fs)
        let store = storeOpened.store
        try Self.fill(storeOpened, people: 20, chores: 20)
        let length = store.fileLength
        fs.arm(operation, failOn: 1)
        do {
            try store.checkpoint()
            Issue.record("the checkpoint did not fail")
        } catch let error as DataStoreError {
            #expect(error.code == .ioFailure, "\(error)")
        }
        fs.disarm()
        let context = ModelContext(storeOpened.container)
        context.insert(Person(email: "after@example.com", name: "After"))
        if operation == .write {
            // The record was cut back off, and the store goes on.
            #expect(store.fileLength == length)
            try context.save()
        } else {
            // A failed sync is never retried: the store refuses saves until reopened.
            #expect(throws: DataStoreError.self) { try context.save() }
        }
        store.close()
        let reopenedOpened = try Self.open(directory.storeURL, minimumCommitBytes: nil, recovery: .strict)
        let reopened = reopenedOpened.store
        // 10 people and 20 chores, and the one saved after a failed write.
        #expect(reopened.withTable { $0.count } == 30 + (operation == .write ? 1 : 0))
    }

    /// A checkpoint larger than `commitChunkBytes` goes to the file in pieces, raw, frame
    /// last, whether closing or compaction writes it: its payload is the one written whole,
    /// and the next open loads it. Pieces of 256 bytes make a small store's checkpoint take
    /// that path. (Built whole, a million records' checkpoint held 44 MiB and its 34 MiB
    /// compressed copy at once.)
    @Test(arguments: [false, true])
    func aCheckpointWrittenInPiecesIsRawAndTheNextOpenLoadsIt(compacting: Bool) throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let opened = try Self.open(directory.storeURL, chunk: 256)
        let store = opened.store
        try Self.fill(opened)
        let indexes = Self.indexes(store)
        let answers = try Self.queries(opened)
        if compacting {
            try store.compact()
            #expect(store.checkpointState.endsWithCheckpoint)
        }
        let (transaction, versions, external) = store.writer.withLock {
            ($0.lastCommitTransaction, $0.versions, $0.external)
        }
        let expected = try store.withTable { table in
            try LogCheckpoint.payload(
                of: table, transactionID: transaction, map: store.map, versions: versions, external: external)
        }
        #expect(expected.count > 4 * 256, "the checkpoint takes several pieces")
        let length = store.fileLength
        store.close()
        let bytes = [UInt8](try Data(contentsOf: directory.storeURL))
        // The record offsets, then the end: the checkpoint is the last record. Closing
        // appends it after the last commit; after a compaction it is there already.
        let offsets = try LogStore.recordOffsets(ofFileAt: directory.storeURL)
        #expect(offsets.last == Int64(bytes.count))
        let start = try #require(offsets.dropLast().last)
        #expect(compacting ? Int64(bytes.count) == length : start == length)
        let offset = Int(start)
        let frame = Array(bytes[offset..<offset + LogFormat.frameSize])
        let stored = frame[0..<4].reversed().reduce(0) { $0 << 8 | Int($1) }
        #expect(frame[4] == LogFormat.RecordType.checkpoint.rawValue)
        #expect(frame[5] & 1 == 0, "a checkpoint written in pieces is raw")
        let payloadStart = offset + LogFormat.frameSize
        #expect(payloadStart + stored == bytes.count)
        let same =
            payloadStart + stored <= bytes.count && Array(bytes[payloadStart..<payloadStart + stored]) == expected
        #expect(same, "the record's payload is the table's checkpoint")

        let reopened = try Self.open(directory.storeURL, recovery: .strict, chunk: 256)
        #expect(reopened.store.openedFromCheckpoint)
        #expect(Self.indexes(reopened.store) == indexes)
        #expect(try Self.queries(reopened) == answers)
    }

    /// Runs `operation` on a store of 20 people and 20 chores whose large records go in
    /// pieces of 256 bytes: once to count its writes, then once with each of them failing.
    /// Each time `operation` must fail with `.ioFailure` and leave the file's length and the
    /// indexes as they were (`failed` checks more), the store must go on saving, and a
    /// strict reopen must find every save (`reopened` checks more).
    static func failingEachWrite(
        of operation: (LogStore) throws -> Void, _ what: String, minimumWrites: Int,
        failed: (LogStore, URL, Int) -> Void, reopened: (LogStore, Int) -> Void
    ) throws {
        let calls: Int
        do {
            let directory = LogTestDirectory.fresh()
            defer { directory.remove() }
            let fs = FaultInjectingFileSystem()
            let opened = try open(directory.storeURL, minimumCommitBytes: nil, fileSystem: fs, chunk: 256)
            try fill(opened, people: 20, chores: 20)
            let before = fs.calls(.write)
            try operation(opened.store)
            calls = fs.calls(.write) - before
        }
        #expect(calls > minimumWrites, "\(what) was written in \(calls) pieces")
        for n in 1...calls {
            let directory = LogTestDirectory.fresh()
            defer { directory.remove() }
            let fs = FaultInjectingFileSystem()
            let opened = try open(directory.storeURL, minimumCommitBytes: nil, fileSystem: fs, chunk: 256)
            let store = opened.store
            try fill(opened, people: 20, chores: 20)
            let indexes = indexes(store)
            let length = store.fileLength
            fs.arm(.write, failOn: n)
            do {
                try operation(store)
                Issue.record("n \(n): \(what) did not fail")
            } catch let error as DataStoreError {
                #expect(error.code == .ioFailure, "n \(n): \(error)")
            }
            fs.disarm()
            #expect(store.fileLength == length, "n \(n)")
            #expect(Self.indexes(store) == indexes, "n \(n)")
            failed(store, directory.storeURL, n)
            let context = ModelContext(opened.container)
            context.insert(Person(email: "after@example.com", name: "After"))
            try context.save()
            store.close()
            let again = try open(directory.storeURL, minimumCommitBytes: nil, recovery: .strict)
            #expect(again.store.withTable { $0.count } == 31, "n \(n)")
            reopened(again.store, n)
        }
    }

    /// A write that fails anywhere in a compaction whose checkpoint goes in pieces fails
    /// `compact()` and leaves the old file, and no temporary file.
    @Test func aFailedWriteInACompactionsCheckpointPiecesLeavesTheOldFile() throws {
        try Self.failingEachWrite(
            of: { try $0.compact() }, "the compaction", minimumWrites: 5,
            failed: { _, url, n in
                #expect(!FileManager.default.fileExists(atPath: url.path + ".compact"), "n \(n)")
            },
            reopened: { _, _ in })
    }

    /// A write that fails anywhere in a checkpoint written in pieces fails `checkpoint()`
    /// and cuts the pieces back off: the file does not end with a checkpoint, and the next
    /// open does not load one.
    @Test func aFailedWriteInACheckpointWrittenInPiecesCutsItOff() throws {
        try Self.failingEachWrite(
            of: { try $0.checkpoint() }, "the checkpoint", minimumWrites: 3,
            failed: { store, _, n in #expect(!store.checkpointState.endsWithCheckpoint, "n \(n)") },
            reopened: { store, n in #expect(!store.openedFromCheckpoint, "n \(n)") })
    }

    /// The payload a store writes, straight from its table, is the bytes of the checkpoint
    /// copied out of that table: for several entities after updates and deletes, with and
    /// without the key directory (versions 4 and 3), and with external value references.
    @Test func thePayloadWrittenFromTheTableIsTheCheckpointsEncoding() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let opened = try Self.open(directory.storeURL)
        try Self.fill(opened, people: 70, chores: 90)
        let store = opened.store
        for version: LogFormatVersion in [3, 4] {
            let map = store.map.with(formatVersion: version)
            try store.withTable { table in
                let checkpoint = try LogCheckpoint(table, transactionID: 9, map: map, versions: 321)
                let payload = try LogCheckpoint.payload(of: table, transactionID: 9, map: map, versions: 321)
                let same = payload == checkpoint.encode()
                #expect(same, "version \(version): \(payload.count) bytes written from the table")
                #expect(
                    try LogCheckpoint.decode(payload, schema: store.storedSchema, formatVersion: version) == checkpoint)
                #expect(checkpoint.entities.count == 2)
                #expect(checkpoint.entities.allSatisfy { !$0.indexes.isEmpty && !$0.keys.isEmpty })
                #expect((checkpoint.entities.first?.locations?.isEmpty == false) == (version == 4))
            }
        }

        let blobs = directory.url.appendingPathComponent("blobs.store")
        let schema = Schema([IndexedBlob.self])
        let container = try ModelContainer(
            for: schema, configurations: [LogStoreConfiguration(schema: schema, url: blobs)])
        let blobStore = try #require(container.storesForTesting.first as? LogStore)
        let context = ModelContext(container)
        for i in 0..<5 {
            context.insert(IndexedBlob(label: "blob \(i)", bytes: LogExternalStorageTests.payload(UInt8(i))))
        }
        try context.save()
        let external = blobStore.writer.withLock { $0.external }
        #expect(external.count == 5)
        try blobStore.withTable { table in
            let checkpoint = try LogCheckpoint(table, transactionID: 2, map: blobStore.map, external: external)
            let references = checkpoint.entities.first?.external?.flatMap { $0 }.compactMap { $0 }
            #expect(references?.count == 5)
            let payload = try LogCheckpoint.payload(of: table, transactionID: 2, map: blobStore.map, external: external)
            let same = payload == checkpoint.encode()
            #expect(same, "\(payload.count) bytes written from the table")
        }
    }

    @Test func theCodecRoundTripsAndRefusesBadPayloads() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let storeOpened = try Self.open(directory.storeURL)
        let store = storeOpened.store
        try Self.fill(storeOpened, people: 40, chores: 40)
        let checkpoint = try store.withTable { try LogCheckpoint($0, transactionID: 3, map: store.map) }
        let payload = checkpoint.encode()
        #expect(try LogCheckpoint.decode(payload, schema: store.storedSchema) == checkpoint)
        // Every cut short payload is refused, never a crash.
        for cut in 0..<payload.count {
            #expect(throws: (any Error).self) {
                try LogCheckpoint.decode(Array(payload[0..<cut]), schema: store.storedSchema)
            }
        }
        var descending = checkpoint
        descending.entities[0].indexes[0].keys.swapAt(0, 1)
        #expect(throws: (any Error).self) { try LogCheckpoint.decode(descending.encode(), schema: store.storedSchema) }
        var missingIndex = checkpoint
        missingIndex.entities[0].indexes.removeLast()
        #expect(throws: (any Error).self) {
            try LogCheckpoint.decode(missingIndex.encode(), schema: store.storedSchema)
        }
        var unknownEntity = checkpoint
        unknownEntity.entities[1].entityIndex = 7
        #expect(throws: (any Error).self) {
            try LogCheckpoint.decode(unknownEntity.encode(), schema: store.storedSchema)
        }
    }
}

extension LogCheckpointTests {
    /// An erased store's file has no commit: its checkpoint records transaction 0, as
    /// `Formats/log.md` says, and the next open loads it.
    @Test func aCheckpointAfterEraseRecordsNoTransaction() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let storeOpened = try Self.open(directory.storeURL, minimumCommitBytes: nil)
        let store = storeOpened.store
        try Self.fill(storeOpened, people: 10, chores: 10)
        try store.erase()
        try store.checkpoint()
        store.close()
        let bytes = try Data(contentsOf: directory.storeURL)
        let offsets = try LogStore.recordOffsets(ofFileAt: directory.storeURL)
        // The header record, then the checkpoint alone.
        #expect(offsets.count == 3)
        let checkpointStart = Int(offsets[1])
        let payload = Array(bytes[(checkpointStart + 16)...])
        let decoded = try LogCheckpoint.decode(payload, schema: store.storedSchema)
        #expect(decoded.transactionID == 0)
        #expect(decoded.entities.isEmpty)
        let reopened = try Self.open(directory.storeURL, minimumCommitBytes: nil, recovery: .strict)
        #expect(reopened.store.openedFromCheckpoint)
        #expect(reopened.store.withTable { $0.count } == 0)
    }
}
