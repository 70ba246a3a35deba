import Foundation
import StowageTestSupport
import Testing

@_spi(Testing) @testable import Stowage

/// A commit larger than `commitChunkBytes` goes to the file in pieces as it is encoded, its
/// frame last (`LogCommitSpill`). These tests spill after every block, so that small saves
/// take that path.
@Suite("LogStore commits written in pieces")
struct LogSpilledCommitTests {
    static func configuration(_ url: URL, chunk: Int?, fileSystem: (any StoreFileSystem)? = nil)
        -> LogStoreConfiguration
    {
        var configuration = LogTest.configuration(url, fileSystem: fileSystem)
        configuration.fixedSalt = 0x5EED
        configuration.fixedStoreIdentifier = "00000000-0000-0000-0000-00000000CAFE"
        configuration.clock = { 1_700_000_000_000 }
        if let chunk { configuration.commitChunkBytes = chunk }
        return configuration
    }

    static func open(_ url: URL, chunk: Int?, fileSystem: (any StoreFileSystem)? = nil) throws -> LogStore {
        try LogStore(configuration(url, chunk: chunk, fileSystem: fileSystem), migrationPlan: nil)
    }

    /// One save of `count` trips whose names start with `prefix`: several blocks of writes.
    static func insertTrips(_ store: LogStore, _ prefix: String, count: Int) throws {
        let entity = store.schema.entitiesByName["Trip"]!
        let inserted = (0..<count).map { i -> DefaultSnapshot in
            var values = entity.properties.map { p -> SnapshotValue in p.isRelationship ? .array([]) : .null }
            values[entity.property(named: "name")!.index] = .string(
                "\(prefix) \(i) " + String(repeating: "x", count: 90))
            values[entity.property(named: "destination")!.index] = .string("D\(i % 7)")
            values[entity.property(named: "startDate")!.index] = .date(Date(timeIntervalSince1970: Double(i)))
            values[entity.property(named: "budget")!.index] = .double(Double(i))
            values[entity.property(named: "isFavorite")!.index] = .bool(i % 2 == 0)
            return DefaultSnapshot(persistentIdentifier: .temporaryForTesting(entityName: "Trip"), values: values)
        }
        _ = try store.save(
            DataStoreSaveChangesRequest<DefaultSnapshot>(
                editingState: EditingState(), inserted: inserted, updated: [], deleted: []))
    }

    /// Written in pieces or whole, a commit is the same bytes: the same record, frame and
    /// checksum, at the same place.
    @Test func aCommitWrittenInPiecesIsTheSameBytes() throws {
        let whole = LogTestDirectory.fresh()
        let pieces = LogTestDirectory.fresh()
        defer {
            whole.remove()
            pieces.remove()
        }
        let a = try Self.open(whole.storeURL, chunk: nil)
        let b = try Self.open(pieces.storeURL, chunk: 1)
        for (store, label) in [(a, "whole"), (b, "pieces")] {
            try Self.insertTrips(store, "first", count: 600)
            try Self.insertTrips(store, "second", count: 3)
            try Self.insertTrips(store, "third", count: 450)
            #expect(try LogTest.tripNames(store).count == 1053, "\(label)")
        }
        let bytesA = try Data(contentsOf: whole.storeURL)
        let bytesB = try Data(contentsOf: pieces.storeURL)
        let blocks = b.withTable { table in
            Set(
                table.entities["Trip"]?.rows.compactMap { row -> Int64? in
                    guard case .location(let location) = row.value else { return nil }
                    return location.blockOffset
                } ?? [])
        }
        #expect(blocks.count >= 6, "the saves wrote several blocks each")
        #expect(bytesA == bytesB)
        let state = try LogTest.state(b)
        a.close()
        b.close()
        let reopened = try LogTest.open(pieces.storeURL, recovery: .strict)
        #expect(try LogTest.state(reopened) == state)
    }

    /// A write that fails anywhere in a commit written in pieces (a piece, the rest, the
    /// frame or the reserved zeros) fails the save with nothing applied, and the file is
    /// cut back: later saves work, and reopening strictly finds exactly the saves that
    /// were acknowledged.
    @Test func aFailedWriteInACommitWrittenInPiecesSavesNothing() throws {
        let saves = [("a", 400), ("b", 500), ("c", 2)]
        let calls: Int
        do {
            let directory = LogTestDirectory.fresh()
            defer { directory.remove() }
            let fs = FaultInjectingFileSystem()
            let store = try Self.open(directory.storeURL, chunk: 1, fileSystem: fs)
            let before = fs.calls(.write)
            for (prefix, count) in saves { try Self.insertTrips(store, prefix, count: count) }
            calls = fs.calls(.write) - before
            store.close()
        }
        #expect(calls > saves.count + 2, "the large saves wrote in several pieces")
        for n in 1...calls {
            let directory = LogTestDirectory.fresh()
            defer { directory.remove() }
            let fs = FaultInjectingFileSystem()
            let store = try Self.open(directory.storeURL, chunk: 1, fileSystem: fs)
            fs.arm(.write, failOn: n)
            var acknowledged = 0
            var failures = 0
            for (prefix, count) in saves {
                do {
                    try Self.insertTrips(store, prefix, count: count)
                    acknowledged += count
                } catch let error as DataStoreError {
                    failures += 1
                    #expect(error.code == .ioFailure, "n \(n): \(error)")
                }
                #expect(try LogTest.tripNames(store).count == acknowledged, "n \(n)")
            }
            #expect(failures == 1, "n \(n)")
            // The store still saves, and what it holds is what it acknowledged.
            try Self.insertTrips(store, "after", count: 5)
            acknowledged += 5
            let state = try LogTest.state(store)
            store.close()
            let reopened = try LogTest.open(directory.storeURL, recovery: .strict)
            #expect(try LogTest.state(reopened) == state, "n \(n)")
            #expect(try LogTest.tripNames(reopened).count == acknowledged, "n \(n)")
        }
    }

    /// A commit cut short anywhere after its pieces began (the process killed before its
    /// frame was written) is not there after reopening, and what came before it is.
    @Test func aCommitCutShortWhileWrittenInPiecesIsNotThere() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let store = try Self.open(directory.storeURL, chunk: 1)
        try Self.insertTrips(store, "kept", count: 50)
        let kept = try LogTest.state(store)
        let start = try Data(contentsOf: directory.storeURL).count
        try Self.insertTrips(store, "lost", count: 500)
        store.close()
        let full = try Data(contentsOf: directory.storeURL)
        // The frame is written last: the pieces without it, at every piece boundary and in
        // between, are a commit that never happened.
        let frameless =
            full.prefix(start) + Data(count: LogFormat.frameSize) + full.dropFirst(start + LogFormat.frameSize)
        for cut in stride(from: start + LogFormat.frameSize, through: full.count, by: 997) {
            try frameless.prefix(cut).write(to: directory.storeURL)
            let reopened = try LogTest.open(directory.storeURL, recovery: .pointInTime)
            #expect(try LogTest.state(reopened) == kept, "cut at \(cut)")
            reopened.close()
        }
    }
}
