import Foundation
import StowageTestSupport
import Testing

@_spi(Testing) @testable import Stowage

/// A log of photos whose bytes are external values, with a checkpoint in the middle and one
/// at the end (written by closing with checkpoints on), and the state after every commit:
/// the torn-tail and bit-flip sweeps of `LogRecoveryTests` run over a file with neither.
struct CheckpointedPhotoLog {
    static let schema = Schema([Photo.self])

    /// The log's bytes.
    let log: [UInt8]
    /// The files of `<log>.blobs/` as the writer left them, by name.
    let blobs: [String: Data]
    /// Record starts: the header record, then every record after it; then the end of the file.
    let offsets: [Int64]
    /// The state after 0, 1, 2 … commits, external values read back as bytes.
    let states: [[String: [DefaultSnapshot]]]

    /// The type of the record at `offsets[record]` (2 commit, 3 checkpoint).
    func type(ofRecord record: Int) -> UInt8 { log[Int(offsets[record]) + 4] }

    /// The records that lie whole within the first `length` bytes (the header record included).
    func recordsWithin(_ length: Int64) -> Range<Int> {
        0..<(offsets.indices.dropLast().filter { offsets[$0 + 1] <= length }.count)
    }

    /// How many commits the records `records` hold.
    func commits(in records: Range<Int>) -> Int { records.filter { type(ofRecord: $0) == 2 }.count }

    /// The last checkpoint record.
    var lastCheckpoint: Int { offsets.indices.dropLast().last { type(ofRecord: $0) == 3 }! }

    /// Whether the records `records` hold a checkpoint.
    func hasCheckpoint(in records: Range<Int>) -> Bool { records.contains { type(ofRecord: $0) == 3 } }

    static func configuration(_ url: URL, recovery: LogStoreConfiguration.Recovery) -> LogStoreConfiguration {
        var configuration = LogStoreConfiguration(schema: schema, url: url, recovery: recovery)
        configuration.automaticCompaction = nil
        configuration.checkpoints = .init(minimumCommitBytes: 0)
        return configuration
    }

    static func open(_ url: URL, recovery: LogStoreConfiguration.Recovery) throws -> LogStore {
        try LogStore(configuration(url, recovery: recovery), migrationPlan: nil)
    }

    /// Bytes no two values share, and none a log holds by chance.
    static func payload(_ seed: UInt8, count: Int) -> Data {
        var state = seed
        return Data(
            (0..<count).map { _ in
                state = state &* 37 &+ 11
                return state
            })
    }

    /// Seven commits through a context (inserts, a caption changed, an external value
    /// replaced, a delete), a checkpoint after the second, and the one closing writes.
    static func make(in directory: LogTestDirectory) throws -> CheckpointedPhotoLog {
        let url = directory.url.appendingPathComponent("photos.stowlog")
        var states: [[String: [DefaultSnapshot]]] = []
        do {
            let container = try ModelContainer(
                for: schema, configurations: [configuration(url, recovery: .pointInTime)])
            let store = try #require(container.storesForTesting.first as? LogStore)
            let context = ModelContext(container)
            func commit() throws {
                try context.save()
                states.append(try LogTest.state(store))
            }
            states.append(try LogTest.state(store))
            let a = Photo(title: "A", bytes: payload(1, count: 1800), thumbnail: payload(2, count: 90))
            let b = Photo(title: "B", bytes: payload(3, count: 700))
            context.insert(a)
            context.insert(b)
            try commit()
            let c = Photo(title: "C", bytes: payload(4, count: 2500))
            c.caption = "glacier"
            context.insert(c)
            try commit()
            try store.checkpoint()
            a.caption = "harbour"  // refers to A's files again
            try commit()
            c.bytes = payload(5, count: 1200)  // a new file; the old one stays for the commits before
            try commit()
            context.delete(b)  // its file stays for the commits before
            try commit()
            context.insert(Photo(title: "D", bytes: payload(6, count: 600), thumbnail: payload(7, count: 40)))
            try commit()
            a.thumbnail = nil
            try commit()
            store.close()
        }
        let blobsURL = URL(fileURLWithPath: url.path + ".blobs")
        var blobs: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: blobsURL.path) {
            blobs[name] = try Data(contentsOf: blobsURL.appendingPathComponent(name))
        }
        return CheckpointedPhotoLog(
            log: Array(try Data(contentsOf: url)), blobs: blobs, offsets: try LogStore.recordOffsets(ofFileAt: url),
            states: states)
    }

    /// Writes `log` at `url` and puts back beside it any of the writer's external files
    /// that an earlier open deleted (a recovering open deletes the files its prefix does
    /// not use; no open changes a file's bytes, which the sweeps check where it matters).
    func install(_ log: [UInt8], at url: URL) throws {
        try Data(log).write(to: url)
        let blobsURL = URL(fileURLWithPath: url.path + ".blobs")
        try FileManager.default.createDirectory(at: blobsURL, withIntermediateDirectories: true)
        let present = Set((try? FileManager.default.contentsOfDirectory(atPath: blobsURL.path)) ?? [])
        for (name, bytes) in blobs where !present.contains(name) {
            try bytes.write(to: blobsURL.appendingPathComponent(name))
        }
    }

    /// The log and its external files as they are at `url`.
    static func contents(at url: URL) -> [String: Data] {
        var contents = directoryContents(URL(fileURLWithPath: url.path + ".blobs"))
        contents["log"] = try? Data(contentsOf: url)
        return contents
    }

    /// Up to `budget` of `range`: all of it when it is no longer, otherwise every
    /// `stride`-th position from a start that `random` picks (the stride as small as
    /// keeps within the budget), and the first and last position always.
    static func sample(_ range: Range<Int>, budget: Int, _ random: inout SeededRandom) -> [Int] {
        guard range.count > budget else { return Array(range) }
        let step = (range.count + budget - 1) / budget
        let start = range.lowerBound + Int.random(in: 0..<step, using: &random)
        return Array(
            Set([range.lowerBound, range.upperBound - 1] + Array(stride(from: start, to: range.upperBound, by: step)))
        )
        .sorted()
    }
}

@Suite("LogStore recovery with checkpoints and external values")
struct LogCheckpointExternalDamageTests {
    /// The most cuts or flips a sweep tries, to keep each under about 20 s in a debug
    /// build (the log's 1034 bytes take about 10 s a sweep): a longer log would be sampled
    /// with a seeded stride (`CheckpointedPhotoLog.sample`). Today every byte is tried.
    static let budget = 2000

    /// The fixture has what the sweeps are for: external files, two checkpoints (one with
    /// commits after it, one last), a replaced value whose old file is still there, and
    /// states that hold the external bytes themselves.
    @Test func theFixtureHasCheckpointsAndExternalFiles() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let fixture = try CheckpointedPhotoLog.make(in: directory)
        let records = 0..<(fixture.offsets.count - 1)
        #expect(records.map { fixture.type(ofRecord: $0) } == [1, 2, 2, 3, 2, 2, 2, 2, 2, 3])
        #expect(fixture.states.count == 8)
        // A, B, C, A's thumbnail, D and its thumbnail, C's first and second bytes.
        #expect(fixture.blobs.count == 7, "\(fixture.blobs.keys.sorted())")
        let entity = CheckpointedPhotoLog.schema.entitiesByName["Photo"]!
        let values = fixture.states[2]["Photo"]!.map { $0.value(forKey: "bytes", in: entity) }
        let payload = CheckpointedPhotoLog.payload
        #expect(values == [.data(payload(1, 1800)), .data(payload(3, 700)), .data(payload(4, 2500))])
        let url = directory.url.appendingPathComponent("whole.stowlog")
        try fixture.install(fixture.log, at: url)
        let store = try CheckpointedPhotoLog.open(url, recovery: .strict)
        #expect(store.openedFromCheckpoint)
        #expect(try LogTest.state(store) == fixture.states.last!)
        store.close()
    }

    /// A crash cut the log at every byte from the first commit to the end: through the
    /// middle checkpoint, the commits after it, and the last checkpoint. Point-in-time
    /// opens with the state of the whole commits before the cut, external bytes and all,
    /// from the checkpoint whenever the prefix holds one, and (at each record boundary
    /// and one byte into each record, opened through a container) takes a new save with
    /// external values that a strict open then finds after the prefix; strict
    /// opens a cut at a record boundary the same way and refuses any other with
    /// `corruptStore` at the torn record, changing neither the log nor its files. At most
    /// `budget` cuts, every `stride`-th from a start the seed picks when the log is longer
    /// (it is not today: every byte is cut).
    @Test func aTornTailAtEveryByteKeepsTheWholeCommitsBeforeIt() throws {
        var random = SeededRandom.fromEnvironment()
        let seed = random.seed
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let fixture = try CheckpointedPhotoLog.make(in: directory)
        let url = directory.url.appendingPathComponent("torn.stowlog")
        let cuts = CheckpointedPhotoLog.sample(
            Int(fixture.offsets[1])..<fixture.log.count, budget: Self.budget, &random)
        for cut in cuts {
            let records = fixture.recordsWithin(Int64(cut))
            let expected = fixture.states[fixture.commits(in: records)]
            let kept = fixture.offsets[records.upperBound]
            let atBoundary = kept == Int64(cut)
            try fixture.install(Array(fixture.log.prefix(cut)), at: url)
            let before = CheckpointedPhotoLog.contents(at: url)
            do {
                let strict = try CheckpointedPhotoLog.open(url, recovery: .strict)
                #expect(atBoundary, "seed \(seed): strict opened a log cut at \(cut)")
                #expect(try LogTest.state(strict) == expected, "seed \(seed): cut at \(cut)")
                strict.close()
                // Opening deleted the files no live record refers to.
                try fixture.install(Array(fixture.log.prefix(cut)), at: url)
            } catch let error as DataStoreError {
                #expect(
                    !atBoundary && error.code == .corruptStore && error.message.contains("offset \(kept)"),
                    "seed \(seed): cut at \(cut): \(error)")
                #expect(CheckpointedPhotoLog.contents(at: url) == before, "seed \(seed): strict changed the store")
            }
            // Through a container (and a new save) at each record boundary and a byte into
            // each record; through the store alone elsewhere, which is quicker.
            let saves = atBoundary || Int64(cut) == kept + 1
            let container =
                saves
                ? try ModelContainer(
                    for: CheckpointedPhotoLog.schema,
                    configurations: [CheckpointedPhotoLog.configuration(url, recovery: .pointInTime)]) : nil
            let store =
                try container.map { try #require($0.storesForTesting.first as? LogStore) }
                ?? CheckpointedPhotoLog.open(url, recovery: .pointInTime)
            #expect(try LogTest.state(store) == expected, "seed \(seed): cut at \(cut)")
            #expect(
                store.openedFromCheckpoint == fixture.hasCheckpoint(in: records),
                "seed \(seed): cut at \(cut), from a checkpoint: \(store.openedFromCheckpoint)")
            #expect(store.lastRecovery?.validLength == (atBoundary ? nil : kept), "seed \(seed): cut at \(cut)")
            #expect(store.fileLength == kept, "seed \(seed): cut at \(cut)")
            if let container {
                // The recovered store takes a save with external values, whose files may
                // have the names of the files of a commit that was cut off, and a strict
                // open finds it and everything before it.
                let context = ModelContext(container)
                let photos = try context.fetch(FetchDescriptor<Photo>(sortBy: [SortDescriptor(\.title)]))
                let entity = CheckpointedPhotoLog.schema.entitiesByName["Photo"]!
                #expect(photos.count == expected["Photo"]!.count, "seed \(seed): cut at \(cut)")
                for photo in photos {
                    let stored = expected["Photo"]!.first {
                        $0.value(forKey: "title", in: entity) == .string(photo.title)
                    }
                    #expect(
                        stored?.value(forKey: "bytes", in: entity) == .data(photo.bytes)
                            && stored?.value(forKey: "thumbnail", in: entity) == photo.thumbnail.map { .data($0) }
                                ?? .null
                            && stored?.value(forKey: "caption", in: entity) == .string(photo.caption),
                        "seed \(seed): cut at \(cut), \(photo.title)")
                }
                let new = CheckpointedPhotoLog.payload(9, count: 900)
                context.insert(
                    Photo(title: "After", bytes: new, thumbnail: CheckpointedPhotoLog.payload(10, count: 30)))
                try context.save()
                store.close()
                let reopened = try CheckpointedPhotoLog.open(url, recovery: .strict)
                let after = try LogTest.state(reopened)["Photo"]!
                #expect(Array(after.dropLast()) == expected["Photo"]!, "seed \(seed): cut at \(cut)")
                #expect(after.last?.value(forKey: "bytes", in: entity) == .data(new), "seed \(seed): cut at \(cut)")
                reopened.close()
                // The new save's files may have taken the names of the fixture's: start afresh.
                try FileManager.default.removeItem(atPath: url.path + ".blobs")
            } else {
                store.close()
            }
        }
    }

    /// One bit flipped in every byte of the log (at most `budget` bytes, every `stride`-th
    /// from a start the seed picks when the log is longer; it is not today). In the file
    /// header or header record, both modes refuse (`corruptStore` or `wrongFormat`) and
    /// change nothing. Anywhere else, in a commit, a block, an external value's reference or
    /// a checkpoint, strict refuses with `corruptStore` at the damaged record, changing
    /// neither the log nor its files, and point-in-time opens with the commits before that
    /// record, external bytes and all (replaying them, or from a checkpoint in them).
    @Test func aFlippedBitAnywhereKeepsTheCommitsBeforeItsRecord() throws {
        var random = SeededRandom.fromEnvironment()
        let seed = random.seed
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let fixture = try CheckpointedPhotoLog.make(in: directory)
        let url = directory.url.appendingPathComponent("flipped.stowlog")
        let headerRecordEnd = Int(fixture.offsets[1])
        for position in CheckpointedPhotoLog.sample(0..<fixture.log.count, budget: Self.budget, &random) {
            var bytes = fixture.log
            bytes[position] ^= UInt8(1) << UInt8.random(in: 0...7, using: &random)
            try fixture.install(bytes, at: url)
            let before = CheckpointedPhotoLog.contents(at: url)
            if position < headerRecordEnd {
                for recovery in [LogStoreConfiguration.Recovery.pointInTime, .strict] {
                    do {
                        _ = try CheckpointedPhotoLog.open(url, recovery: recovery)
                        Issue.record("seed \(seed): a flip at \(position) went unnoticed (\(recovery))")
                    } catch let error as DataStoreError {
                        #expect(
                            [.corruptStore, .wrongFormat].contains(error.code), "seed \(seed), \(position): \(error)")
                    }
                    #expect(CheckpointedPhotoLog.contents(at: url) == before, "seed \(seed): \(position) changed")
                }
                continue
            }
            let record = fixture.offsets.lastIndex { $0 <= Int64(position) }!
            let damagedAt = fixture.offsets[record]
            do {
                _ = try CheckpointedPhotoLog.open(url, recovery: .strict)
                Issue.record("seed \(seed): strict opened a flip at \(position)")
            } catch let error as DataStoreError {
                #expect(
                    error.code == .corruptStore && error.message.contains("offset \(damagedAt)"),
                    "seed \(seed), \(position): \(error)")
            }
            #expect(CheckpointedPhotoLog.contents(at: url) == before, "seed \(seed): strict changed \(position)")
            let store = try CheckpointedPhotoLog.open(url, recovery: .pointInTime)
            let records = 0..<record
            #expect(
                try LogTest.state(store) == fixture.states[fixture.commits(in: records)],
                "seed \(seed): flip at \(position)")
            // Only the file's last checkpoint, found by the frames alone, is tried: behind
            // damage after the middle one, opening replays every commit instead (as
            // Formats/log.md says), unless the damage stops the walk of the frames before
            // the last one. A checkpoint it loads must lie in the kept prefix, and the last
            // one must be loaded when it does.
            if store.openedFromCheckpoint {
                #expect(fixture.hasCheckpoint(in: records), "seed \(seed): flip at \(position)")
            }
            if records.contains(fixture.lastCheckpoint) {
                #expect(store.openedFromCheckpoint, "seed \(seed): flip at \(position)")
            }
            #expect(store.lastRecovery?.validLength == damagedAt, "seed \(seed): flip at \(position)")
            store.close()
        }
    }
}
