import Foundation
import IndexKey
import StowageTestSupport
import Testing

// `@testable` for the checkpoint codec (`LogCheckpoint`, `LogFormat.frame`), with which
// the tests build checkpoints whose checksum is valid but whose contents are wrong.
@_spi(Testing) @testable import Stowage

/// A model whose external-storage attribute is indexed: the store indexes the bytes it
/// reads back from the value's file, and so must the tool when it checks a checkpoint.
@Model
final class Scan {
    var label: String
    @Attribute(.externalStorage) var bytes: Data
    #Index<Scan>([\.bytes], [\.label])

    init(label: String, bytes: Data) {
        self.label = label
        self.bytes = bytes
    }
}

/// One entity, `Badge`, before and after an app added an index to it.
enum BadgesPlain {
    @Model final class Badge {
        var holder: String
        var level: Int
        init(holder: String, level: Int) {
            self.holder = holder
            self.level = level
        }
    }
}

enum BadgesIndexed {
    @Model final class Badge {
        var holder: String
        var level: Int
        #Index<Badge>([\.level, \.holder])
        init(holder: String, level: Int) {
            self.holder = holder
            self.level = level
        }
    }
}

enum BadgesGrown {
    @Model final class Badge {
        var holder: String
        var level: Int
        var colour: String = "blue"
        var expires: Date?
        init(holder: String, level: Int) {
            self.holder = holder
            self.level = level
        }
    }
}

@Suite("stowage command-line tool")
struct StowageToolTests {
    static let trips = "Formats/samples/trips-v1.stowlog"
    static let torn = "Formats/samples/trips-v1-torn.stowlog"
    static let json = "Formats/samples/json-v1.json"
    /// `stowage-json` version 2: a document with a history.
    static let jsonV2 = "Formats/samples/json-v2.json"
    static let photos = "Formats/samples/photos-v2.stowlog"
    static let tripsV3 = "Formats/samples/trips-v3.stowlog"

    @Test func theToolIsBuilt() {
        #expect(FileManager.default.isExecutableFile(atPath: Tool.executable.path), "missing \(Tool.executable.path)")
    }

    /// The file a store rewrites when only its indexes changed (new header, checkpoint of
    /// the new indexes) verifies healthy, and its checkpoint holds the new index.
    @Test func aStoreRewrittenForAnIndexChangeVerifies() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let url = directory.storeURL
        func open(_ type: any PersistentModel.Type) throws -> ModelContainer {
            try ModelContainer(
                for: Schema([type]), configurations: [LogStoreConfiguration(schema: Schema([type]), url: url)])
        }
        do {
            let context = ModelContext(try open(BadgesPlain.Badge.self))
            for i in 0..<500 { context.insert(BadgesPlain.Badge(holder: "H\(i)", level: i % 7)) }
            try context.save()
        }
        _ = try open(BadgesIndexed.Badge.self)
        let verify = try Tool.run(["verify", url.path])
        #expect(verify.status == 0, "\(verify.transcript)")
        #expect(verify.stdout.contains("healthy"))
        let inspect = try Tool.run(["inspect", url.path])
        #expect(inspect.stdout.contains("indexes: (level, holder)"), "\(inspect.stdout)")
        #expect(inspect.stdout.contains("checkpoints:       1"), "\(inspect.stdout)")

        // Two new properties: every record converted and rewritten in the new layout.
        _ = try open(BadgesGrown.Badge.self)
        let grown = try Tool.run(["verify", url.path])
        #expect(grown.status == 0, "\(grown.transcript)")
        let dump = try Tool.run(["dump", "--format", "jsonl", url.path])
        #expect(dump.stdout.split(separator: "\n").count == 500, "\(dump.stdout.prefix(300))")
        #expect(dump.stdout.contains(#""colour": "blue", "expires": null"#), "\(dump.stdout.prefix(300))")
    }

    // MARK: Help

    @Test(arguments: ["inspect", "verify", "dump", "history", "recover", "compact"])
    func commandHelp(_ command: String) throws {
        try Tool.golden("help-\(command)", [command, "--help"], status: 0)
        #expect(try Tool.run(["help", command]).stdout == Tool.run([command, "--help"]).stdout)
    }

    @Test func overviewHelp() throws {
        let help = try Tool.golden("help", ["--help"], status: 0)
        #expect(try Tool.run([]).stdout == help.stdout)
        #expect(try Tool.run(["help"]).stdout == help.stdout)
        #expect(help.stdout.contains("0  ok") && help.stdout.contains("1  damaged") && help.stdout.contains("2  usage"))
    }

    /// `--version` names the formats the library reads, taken from the library's own
    /// constants: a hard-coded line once said "log format versions 1 and 2" long after the
    /// library had learned to read versions 3 to 6.
    @Test func versionNamesTheFormatsTheLibraryReads() throws {
        let run = try Tool.run(["--version"])
        #expect(run.status == 0, "\(run.transcript)")
        #expect(run.stderr.isEmpty, "\(run.transcript)")
        #expect(run.stdout == "stowage 1 (reads log format versions 1 to 7, stowage-json versions 1 to 3)\n")
        let log = LogFormat.readableVersions
        #expect(run.stdout.contains("reads log format versions \(log.lowerBound) to \(log.upperBound),"))
        let json = JSONDocument.readableVersions
        #expect(run.stdout.contains("\(JSONDocument.formatName) versions \(json.lowerBound) to \(json.upperBound))"))
    }

    // MARK: Usage errors: exit status 2

    @Test func usageErrors() throws {
        try Tool.golden("usage-unknown-command", ["frobnicate", Self.trips], status: 2)
        try Tool.golden("usage-unknown-option", ["inspect", "--colour", Self.trips], status: 2)
        try Tool.golden("usage-missing-path", ["verify"], status: 2)
        try Tool.golden("usage-two-paths", ["dump", Self.trips, Self.json], status: 2)
        try Tool.golden("usage-bad-format", ["dump", "--format", "xml", Self.trips], status: 2)
        try Tool.golden("usage-unknown-entity", ["dump", "--entity", "Nope", Self.trips], status: 2)
        #expect(try Tool.run(["inspect", "--json=yes", Self.trips]).status == 2)
        #expect(try Tool.run(["compact", "--json", Self.trips]).status == 2)
    }

    // MARK: Samples

    @Test func inspectSamples() throws {
        try Tool.golden("inspect-trips", ["inspect", Self.trips], status: 0)
        try Tool.golden("inspect-trips-json", ["inspect", "--json", Self.trips], status: 0)
        try Tool.golden("inspect-trips-map", ["inspect", "--map", "--width", "40", Self.trips], status: 0)
        try Tool.golden("inspect-torn", ["inspect", Self.torn], status: 1)
        try Tool.golden("inspect-json-store", ["inspect", Self.json], status: 0)
        try Tool.golden("inspect-json-store-json", ["inspect", "--json", Self.json], status: 0)
    }

    /// Format version 2: external values, their files checked by verify and named by dump.
    @Test func theVersion2SampleWithExternalValues() throws {
        try Tool.golden("inspect-photos", ["inspect", Self.photos], status: 0)
        try Tool.golden("verify-photos", ["verify", Self.photos], status: 0)
        try Tool.golden("dump-photos", ["dump", Self.photos], status: 0)
        // A changed external file is damage that verify reports, naming the file.
        let directory = try Tool.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let copy = directory.appendingPathComponent("photos-v2.stowlog")
        try FileManager.default.copyItem(at: Tool.sample("photos-v2.stowlog"), to: copy)
        try FileManager.default.copyItem(
            at: Tool.sample("photos-v2.stowlog.blobs"), to: directory.appendingPathComponent("photos-v2.stowlog.blobs"))
        #expect(try Tool.run(["verify", copy.path]).status == 0)
        let blob = directory.appendingPathComponent("photos-v2.stowlog.blobs/0-1-2-1")
        var bytes = try Data(contentsOf: blob)
        bytes[10] ^= 1
        try bytes.write(to: blob)
        let damaged = try Tool.run(["verify", copy.path])
        #expect(damaged.status == 1)
        #expect(damaged.stdout.contains("0-1-2-1"), "\(damaged.stdout)")
    }

    @Test func inspectJSONIsJSON() throws {
        for path in [Self.trips, Self.torn, Self.json] {
            let run = try Tool.run(["inspect", "--json", path])
            let object = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any]
            #expect(object?["format"] != nil)
        }
        let run = try Tool.run(["inspect", "--json", Self.trips])
        let object = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any]
        let log = object?["log"] as? [String: Any]
        #expect(log?["checkpoints"] as? Int == 0)
        #expect(log?["commits"] as? Int == 4)
        let live = log?["liveBytes"] as? Int ?? 0
        let dead = log?["deadBytes"] as? Int ?? 0
        #expect(live + dead == 876)
        #expect(dead > 0)
    }

    @Test func dumpSamples() throws {
        try Tool.golden("dump-trips", ["dump", Self.trips], status: 0)
        try Tool.golden("dump-trips-table", ["dump", "--format", "table", Self.trips], status: 0)
        try Tool.golden(
            "dump-trips-items", ["dump", "--entity", "LogSampleItem", "--format=jsonl", Self.trips], status: 0)
        try Tool.golden("dump-torn", ["dump", Self.torn], status: 1)
        try Tool.golden("dump-json-store", ["dump", Self.json], status: 0)
        try Tool.golden("dump-json-store-table", ["dump", "--format", "table", Self.json], status: 0)
        // Every line is a JSON object with the identifier and every property.
        for line in try Tool.run(["dump", Self.trips]).stdout.split(separator: "\n") {
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            #expect(object?["id"] is Int)
            #expect((object?["values"] as? [String: Any])?.isEmpty == false)
        }
        #expect(try Tool.run(["dump", Self.trips]).stdout.split(separator: "\n").count == 24)
    }

    @Test func verifySamples() throws {
        try Tool.golden("verify-trips", ["verify", Self.trips], status: 0)
        try Tool.golden("verify-trips-json", ["verify", "--json", Self.trips], status: 0)
        try Tool.golden("verify-torn", ["verify", Self.torn], status: 1)
        try Tool.golden("verify-torn-json", ["verify", "--json", Self.torn], status: 1)
        try Tool.golden("verify-json-store", ["verify", Self.json], status: 0)
        try Tool.golden("verify-json-store-json", ["verify", "--json", Self.json], status: 0)
    }

    @Test func historySamples() throws {
        try Tool.golden("history-trips", ["history", Self.trips], status: 0)
        try Tool.golden("history-trips-json", ["history", "--json", Self.trips], status: 0)
        try Tool.golden("history-json-store", ["history", Self.json], status: 0)
        try Tool.golden("history-json-v2", ["history", "--changes", Self.jsonV2], status: 0)
        try Tool.golden("history-json-v2-json", ["history", "--json", Self.jsonV2], status: 0)
        try Tool.golden(
            "history-trips-v6-changes", ["history", "--changes", "Formats/samples/trips-v6.stowlog"], status: 0)
        try Tool.golden("inspect-json-v2", ["inspect", Self.jsonV2], status: 0)
        try Tool.golden("verify-json-v2", ["verify", Self.jsonV2], status: 0)
    }

    /// A store with model inheritance (log format version 7, stowage-json version 3):
    /// `inspect` names each entity's superentity, `dump --format table` heads each table with it, and
    /// `verify` finds nothing wrong.
    @Test func inheritanceSamples() throws {
        let log = "Formats/samples/voyages-v7.stowlog"
        let json = "Formats/samples/json-v3.json"
        try Tool.golden("inspect-voyages-v7", ["inspect", log], status: 0)
        try Tool.golden("inspect-voyages-v7-json", ["inspect", "--json", log], status: 0)
        try Tool.golden("dump-voyages-v7", ["dump", "--format", "table", log], status: 0)
        try Tool.golden("verify-voyages-v7", ["verify", log], status: 0)
        try Tool.golden("inspect-json-v3", ["inspect", json], status: 0)
        try Tool.golden("dump-json-v3", ["dump", "--format", "table", json], status: 0)
        let inspected = try Tool.run(["inspect", log])
        #expect(inspected.stdout.contains("  SampleConferenceVoyage : SampleBusinessVoyage\n"))
        let dumped = try Tool.run(["dump", "--format", "table", json])
        #expect(dumped.stdout.contains("SampleBusinessVoyage : SampleVoyage (1 record)"))
    }

    // MARK: Damaged and foreign inputs

    /// A copy of the log sample with one bit flipped inside its second commit (offset 321).
    static func flipped(in directory: URL) throws -> URL {
        let url = directory.appendingPathComponent("flipped.stowlog")
        var bytes = [UInt8](try Data(contentsOf: Tool.sample("trips-v1.stowlog")))
        bytes[400] ^= 0x08
        try Data(bytes).write(to: url)
        return url
    }

    @Test func aFlippedBit() throws {
        let directory = try Tool.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = try Self.flipped(in: directory)
        let before = try Data(contentsOf: url)
        try Tool.golden("verify-flipped", ["verify", "flipped.stowlog"], in: directory, status: 1)
        try Tool.golden("inspect-flipped", ["inspect", "flipped.stowlog"], in: directory, status: 1)
        #expect(try Data(contentsOf: url) == before)
    }

    @Test func aTruncatedHeader() throws {
        let directory = try Tool.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let bytes = try Data(contentsOf: Tool.sample("trips-v1.stowlog"))
        try bytes.prefix(20).write(to: directory.appendingPathComponent("short.stowlog"))
        try bytes.prefix(100).write(to: directory.appendingPathComponent("cut.stowlog"))
        try Tool.golden("verify-short", ["verify", "short.stowlog"], in: directory, status: 1)
        try Tool.golden("verify-cut-header-record", ["verify", "cut.stowlog"], in: directory, status: 1)
        try Tool.golden("recover-cut-header-record", ["recover", "cut.stowlog"], in: directory, status: 1)
        #expect(try Data(contentsOf: directory.appendingPathComponent("cut.stowlog")) == bytes.prefix(100))
    }

    @Test func aZeroLengthFileAndOtherFormats() throws {
        let directory = try Tool.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        _ = FileManager.default.createFile(atPath: directory.appendingPathComponent("empty").path, contents: Data())
        try Data("hello, world\n".utf8).write(to: directory.appendingPathComponent("notes.txt"))
        // The magic's letters with a newline where its zero byte goes.
        try Data("STOWLOG\nhello\n".utf8).write(to: directory.appendingPathComponent("magic.txt"))
        try Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13]).write(
            to: directory.appendingPathComponent("image.png"))
        try Data("{\"name\": \"not a store\"}\n".utf8).write(to: directory.appendingPathComponent("other.json"))
        var version9 = [UInt8](try Data(contentsOf: Tool.sample("trips-v1.stowlog")))
        version9[8] = 9
        try Data(version9).write(to: directory.appendingPathComponent("future.stowlog"))
        try Tool.golden("inspect-empty", ["inspect", "empty"], in: directory, status: 1)
        try Tool.golden("verify-text-file", ["verify", "notes.txt"], in: directory, status: 1)
        try Tool.golden("dump-png", ["dump", "image.png"], in: directory, status: 1)
        try Tool.golden("verify-magic-as-text", ["verify", "magic.txt"], in: directory, status: 1)
        try Tool.golden("inspect-other-json", ["inspect", "other.json"], in: directory, status: 1)
        try Tool.golden("inspect-future-version", ["inspect", "future.stowlog"], in: directory, status: 1)
        try Tool.golden("inspect-missing", ["inspect", "no-such-file"], in: directory, status: 1)
        // No command writes to a file that is not a store, not even recover and compact.
        for name in ["empty", "notes.txt", "magic.txt", "image.png", "other.json", "future.stowlog"] {
            let url = directory.appendingPathComponent(name)
            let before = try Data(contentsOf: url)
            for command in ["inspect", "verify", "dump", "history", "recover", "compact"] {
                let run = try Tool.run([command, name], in: directory)
                #expect(run.status == 1, "\(run.transcript)")
                #expect(run.stderr.hasPrefix("stowage: error: \(name)"), "\(run.transcript)")
                #expect(run.stdout.isEmpty, "\(run.transcript)")
            }
            #expect(try Data(contentsOf: url) == before)
        }
        let left = try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
        #expect(left == ["empty", "future.stowlog", "image.png", "magic.txt", "notes.txt", "other.json"])
    }

    @Test func everyCommandSurvivesEveryTruncation() throws {
        let directory = try Tool.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let bytes = try Data(contentsOf: Tool.sample("trips-v1.stowlog"))
        let json = try Data(contentsOf: Tool.sample("json-v1.json"))
        // 218 bytes end with the header record: a whole, empty log. Every other cut is damage.
        for length in [1, 7, 8, 31, 32, 47, 48, 217, 218, 219, 500, 875] {
            try bytes.prefix(length).write(to: directory.appendingPathComponent("log-\(length)"))
            for command in ["inspect", "verify", "dump", "history"] {
                let run = try Tool.run([command, "log-\(length)"], in: directory)
                #expect(run.status == (length == 218 ? 0 : 1), "\(run.transcript)")
            }
        }
        // Without its last newline the document is still whole.
        for length in [1, 100, 2000, 4706, 4707] {
            try json.prefix(length).write(to: directory.appendingPathComponent("json-\(length)"))
            let run = try Tool.run(["verify", "json-\(length)"], in: directory)
            #expect(run.status == (length == 4707 ? 0 : 1), "\(run.transcript)")
        }
    }

    // MARK: recover

    @Test func recoverThenVerifyKeepsTheCommittedPrefix() throws {
        let directory = try Tool.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = try Tool.copySample("trips-v1-torn.stowlog", to: directory, as: "store.stowlog")
        let original = try Data(contentsOf: url)
        try Tool.golden(
            "recover-torn", ["recover", "--backup", "store.backup", "store.stowlog"], in: directory, status: 0)
        try Tool.golden("verify-recovered", ["verify", "store.stowlog"], in: directory, status: 0)
        // The backup is the original; the log is the whole sample's first three commits.
        #expect(try Data(contentsOf: directory.appendingPathComponent("store.backup")) == original)
        let full = try Data(contentsOf: Tool.sample("trips-v1.stowlog"))
        let offsets = try LogStore.recordOffsets(ofFileAt: Tool.sample("trips-v1.stowlog"))
        let prefix = full.prefix(Int(offsets[offsets.count - 2]))
        #expect(try Data(contentsOf: url) == prefix)
        // What the tool reads back is what the committed prefix holds.
        try prefix.write(to: directory.appendingPathComponent("prefix.stowlog"))
        let recovered = try Tool.run(["dump", "store.stowlog"], in: directory)
        let expected = try Tool.run(["dump", "prefix.stowlog"], in: directory)
        #expect(recovered.stdout == expected.stdout && !recovered.stdout.isEmpty)
        // Running it again finds nothing to do and writes nothing.
        try Tool.golden("recover-whole", ["recover", "store.stowlog"], in: directory, status: 0)
        #expect(try Data(contentsOf: url) == prefix)
    }

    @Test func recoverAFlippedBitWithTheDefaultBackup() throws {
        let directory = try Tool.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = try Self.flipped(in: directory)
        let original = try Data(contentsOf: url)
        let run = try Tool.run(["recover", "flipped.stowlog"], in: directory)
        #expect(run.status == 0, "\(run.transcript)")
        #expect(run.stdout.contains("kept 321 bytes (1 commit), dropped 555 bytes from offset 321"), "\(run.stdout)")
        let backups = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            .filter { $0.hasPrefix("flipped.stowlog.bak-") }
        #expect(backups.count == 1)
        #expect(run.stdout.contains("backup of the original: flipped.stowlog.bak-"))
        if let backup = backups.first {
            #expect(try Data(contentsOf: directory.appendingPathComponent(backup)) == original)
        }
        #expect(try Tool.run(["verify", "flipped.stowlog"], in: directory).status == 0)
        #expect(try Data(contentsOf: url) == original.prefix(321))
        #expect(try Tool.run(["dump", "flipped.stowlog"], in: directory).stdout.split(separator: "\n").count == 3)
    }

    @Test func recoverLeavesABrokenJSONStoreUntouched() throws {
        let directory = try Tool.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let json = try Data(contentsOf: Tool.sample("json-v1.json"))
        let broken = json.prefix(300)
        try broken.write(to: directory.appendingPathComponent("broken.json"))
        try Tool.golden("recover-broken-json", ["recover", "broken.json"], in: directory, status: 1)
        try Tool.golden("verify-broken-json", ["verify", "broken.json"], in: directory, status: 1)
        #expect(try Data(contentsOf: directory.appendingPathComponent("broken.json")) == broken)
        _ = try Tool.copySample("json-v1.json", to: directory, as: "store.json")
        try Tool.golden("recover-json-store", ["recover", "store.json"], in: directory, status: 0)
        try Tool.golden("compact-json-store", ["compact", "store.json"], in: directory, status: 0)
        #expect(try Data(contentsOf: directory.appendingPathComponent("store.json")) == json)
    }

    // MARK: compact

    @Test func compactKeepsTheLiveRecords() throws {
        let directory = try Tool.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        _ = try Tool.copySample("trips-v1.stowlog", to: directory, as: "store.stowlog")
        let before = try Tool.run(["dump", "store.stowlog"], in: directory)
        try Tool.golden("compact-trips", ["compact", "store.stowlog"], in: directory, status: 0)
        #expect(try Tool.run(["verify", "store.stowlog"], in: directory).status == 0)
        #expect(try Tool.run(["dump", "store.stowlog"], in: directory).stdout == before.stdout)
        let inspect = try Tool.run(["inspect", "--json", "store.stowlog"], in: directory)
        let object = try JSONSerialization.jsonObject(with: Data(inspect.stdout.utf8)) as? [String: Any]
        let log = object?["log"] as? [String: Any]
        #expect(log?["deadBytes"] as? Int == 0)
        #expect(log?["generation"] as? Int == 1)
        #expect(object?["nextPrimaryKey"] as? Int == 26)
        // The store itself opens the compacted file and finds every record.
        let store = try LogStore(
            LogStoreConfiguration(schema: LogSamples.schema, url: directory.appendingPathComponent("store.stowlog")),
            migrationPlan: nil)
        #expect(store.recordCount == 24)
        store.close()
        let left = try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
        #expect(!left.contains("store.stowlog.compact"))
    }

    @Test func compactRefusesADamagedLog() throws {
        let directory = try Tool.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = try Tool.copySample("trips-v1-torn.stowlog", to: directory, as: "store.stowlog")
        let before = try Data(contentsOf: url)
        try Tool.golden("compact-torn", ["compact", "store.stowlog"], in: directory, status: 1)
        #expect(try Data(contentsOf: url) == before)
    }

    @Test func recoverAndCompactRefuseAnOpenStore() throws {
        let directory = try Tool.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = try Tool.copySample("trips-v1.stowlog", to: directory, as: "store.stowlog")
        let store = try LogStore(LogStoreConfiguration(schema: LogSamples.schema, url: url), migrationPlan: nil)
        let before = try Data(contentsOf: url)
        try Tool.golden("compact-locked", ["compact", "store.stowlog"], in: directory, status: 1)
        let recover = try Tool.run(["recover", "store.stowlog"], in: directory)
        #expect(recover.status == 1)
        #expect(recover.stderr.contains("store is open in another process"))
        // Readers do not need the lock.
        #expect(try Tool.run(["verify", "store.stowlog"], in: directory).status == 0)
        #expect(try Data(contentsOf: url) == before)
        store.close()
        #expect(try Tool.run(["compact", "store.stowlog"], in: directory).status == 0)
    }

    // MARK: A store written by a program the tool has never seen

    @Test func aStoreWrittenByAnotherProgram() throws {
        let directory = try Tool.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("other.store")
        do {
            let container = try ModelContainer(
                for: Schema([Trip.self, Item.self, Badge.self, Person.self, Sample.self]),
                configurations: [ModelConfiguration(url: url)])
            let context = ModelContext(container)
            let trip = Trip(name: "Lisbon", destination: "Portugal")
            context.insert(trip)
            for n in 0..<5 { context.insert(Item(name: "item \(n)", weight: Double(n), trip: trip)) }
            let badge = Badge(label: "sunny")
            context.insert(badge)
            trip.tags = [badge]
            context.insert(Person(email: "ada@example.com", name: "Ada", age: 36))
            context.insert(Person(email: "bob@example.com", name: "Bob", age: 40))
            let sample = Sample()
            sample.int8 = -3
            sample.uint64 = .max
            sample.array = ["a", "b"]
            sample.set = [1, 2]
            sample.dictionary = ["k": 1]
            sample.optionalString = "here"
            context.insert(sample)
            try context.save()
            context.delete(try context.fetch(FetchDescriptor<Item>()).first!)
            try context.save()
        }
        let inspect = try Tool.run(["inspect", "other.store"], in: directory)
        #expect(inspect.status == 0, "\(inspect.transcript)")
        #expect(inspect.stdout.contains("Person"))
        let person = inspect.stdout.components(separatedBy: "  Person\n").last ?? ""
        let unique = person.split(separator: "\n").first { $0.hasPrefix("    unique: ") } ?? ""
        #expect(unique.contains("(email)") && unique.contains("(name, age)"), "\(inspect.stdout)")
        // The default configuration writes format version 6: commits in blocks of writes
        // stored one by one, and layout records.
        #expect(inspect.stdout.contains("format version 6"), "\(inspect.stdout)")
        let verify = try Tool.run(["verify", "other.store"], in: directory)
        #expect(verify.status == 0, "\(verify.transcript)")
        let dump = try Tool.run(["dump", "other.store"], in: directory)
        #expect(dump.status == 0)
        #expect(dump.stdout.split(separator: "\n").count == 1 + 4 + 1 + 2 + 1)
        #expect(dump.stdout.contains("\"uint64\": {\"$uint\": 18446744073709551615}"), "\(dump.stdout)")
        let history = try Tool.run(["history", "--json", "other.store"], in: directory)
        #expect(history.status == 0)
        #expect(try Tool.run(["dump", "--format", "table", "other.store"], in: directory).status == 0)
        #expect(try Tool.run(["compact", "other.store"], in: directory).status == 0)
        #expect(try Tool.run(["verify", "other.store"], in: directory).status == 0)
        #expect(try Tool.run(["dump", "other.store"], in: directory).stdout == dump.stdout)
    }

    @Test func verifyFindsAUniquenessViolationAndABrokenReference() throws {
        let directory = try Tool.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        var text = try String(contentsOf: Tool.sample("json-v1.json"), encoding: .utf8)
        // Item 4 points at a trip that does not exist; trips 1 and 2 get the same name.
        text = text.replacingOccurrences(
            of: "\"trip\": 1,\n        \"weight\": 0.25", with: "\"trip\": 9,\n        \"weight\": 0.25")
        text = text.replacingOccurrences(of: "\"name\": \"Oslo\"", with: "\"name\": \"Lisbon\"")
        try Data(text.utf8).write(to: directory.appendingPathComponent("bad.json"))
        try Tool.golden("verify-bad-json", ["verify", "bad.json"], in: directory, status: 1)
    }

    // MARK: Format version 3: checkpoints

    typealias LogRecord = (offset: Int64, type: UInt8, payload: [UInt8])

    /// A log file's records, read with the store's own reader: each one's offset, type and
    /// (decompressed) payload; and the file's salt.
    static func records(of url: URL) throws -> (salt: UInt64, records: [LogRecord]) {
        let fs = POSIXStoreFileSystem()
        let fd = try #require(try fs.open(url.path, mode: .existing))
        defer { fs.close(fd) }
        let size = try fs.size(fd)
        guard case .success(let header) = LogFormat.decodeFileHeader(try fs.read(fd, count: 32, at: 0), fileSize: size)
        else {
            Issue.record("\(url.path) has no valid file header")
            return (0, [])
        }
        var records: [LogRecord] = []
        var offset = Int64(LogFormat.fileHeaderSize)
        while case .record(let type, let payload, let next) = try LogFormat.readRecord(
            fs, fd, at: offset, fileSize: size, salt: header.salt)
        {
            records.append((offset, type.rawValue, payload))
            offset = next
        }
        #expect(offset == size, "\(url.path) is not whole")
        return (header.salt, records)
    }

    /// Appends `checkpoint` to the log at `url` as a checkpoint record with a valid
    /// checksum, and returns its offset.
    @discardableResult
    static func append(_ checkpoint: LogCheckpoint, to url: URL) throws -> Int64 {
        let salt = try records(of: url).salt
        var bytes = try Data(contentsOf: url)
        let offset = Int64(bytes.count)
        bytes.append(
            contentsOf: LogFormat.frame(type: .checkpoint, payload: checkpoint.encode(), salt: salt, offset: offset))
        try bytes.write(to: url)
        return offset
    }

    @Test func theVersion3SampleWithCheckpoints() throws {
        try Tool.golden("inspect-trips-v3", ["inspect", Self.tripsV3], status: 0)
        try Tool.golden("inspect-trips-v3-json", ["inspect", "--json", Self.tripsV3], status: 0)
        try Tool.golden("inspect-trips-v3-map", ["inspect", "--map", "--width", "50", Self.tripsV3], status: 0)
        try Tool.golden("verify-trips-v3", ["verify", Self.tripsV3], status: 0)
        try Tool.golden("dump-trips-v3", ["dump", Self.tripsV3], status: 0)
        try Tool.golden("history-trips-v3", ["history", Self.tripsV3], status: 0)

        // The counts and the byte accounting, from the records themselves.
        let sample = Tool.sample("trips-v3.stowlog")
        let records = try Self.records(of: sample).records
        #expect(records.map(\.type) == [1, 2, 2, 2, 2, 3, 2, 3])
        let size = Int64(try Data(contentsOf: sample).count)
        let first = records[5].offset
        let firstLength = records[6].offset - first
        let last = records[7].offset
        let run = try Tool.run(["inspect", "--json", Self.tripsV3])
        let object = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any]
        let log = try #require(object?["log"] as? [String: Any])
        #expect(object?["formatVersion"] as? Int == 3)
        #expect(log["checkpoints"] as? Int == 2)
        #expect(log["commits"] as? Int == 5)
        let lastCheckpoint = log["lastCheckpoint"] as? [String: Any]
        #expect(lastCheckpoint?["offset"] as? Int == Int(last))
        #expect(lastCheckpoint?["length"] as? Int == Int(size - last))
        #expect(lastCheckpoint?["transactionID"] as? Int == 5)
        #expect(lastCheckpoint?["records"] as? Int == 23)
        #expect(lastCheckpoint?["commitsAfter"] as? Int == 0)
        let live = log["liveBytes"] as? Int ?? 0
        let dead = log["deadBytes"] as? Int ?? 0
        #expect(live + dead == Int(size))
        // The superseded checkpoint is dead in full, the last one live: the dead bytes are
        // those of the same commits without checkpoints, plus the first checkpoint's.
        let commitsOnly = try Tool.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: commitsOnly) }
        let prefix = commitsOnly.appendingPathComponent("prefix.stowlog")
        try Data(contentsOf: sample).prefix(Int(first)).write(to: prefix)
        let prefixRun = try Tool.run(["inspect", "--json", prefix.path])
        let prefixObject = try JSONSerialization.jsonObject(with: Data(prefixRun.stdout.utf8)) as? [String: Any]
        let prefixLog = try #require(prefixObject?["log"] as? [String: Any])
        #expect(prefixLog["checkpoints"] as? Int == 0)
        #expect(prefixLog["lastCheckpoint"] is NSNull)
        #expect(run.stdout.contains("\"map\"") == false)
        // Commit 5 kills versions of commit 2; the prefix has only the first four commits.
        #expect(dead > (prefixLog["deadBytes"] as? Int ?? 0) + Int(firstLength))
        let dump = try Tool.run(["dump", Self.tripsV3])
        #expect(dump.stdout.split(separator: "\n").count == 23)
        #expect(!dump.stdout.contains("pair 20"))
    }

    @Test func aCheckpointIsDamageInAVersion1File() throws {
        let directory = try Tool.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = try Tool.copySample("trips-v1.stowlog", to: directory, as: "store.stowlog")
        // A checkpoint that agrees with the records, checksum and all: still damage here.
        let offset = try Self.append(
            LogCheckpoint(
                transactionID: 4, nextPrimaryKey: 26,
                entities: [
                    .init(entityIndex: 0, keys: [1, 4, 25], indexes: []),
                    .init(entityIndex: 1, keys: [2] + Array(5...24), indexes: []),
                ]), to: url)
        #expect(offset == 876)
        try Tool.golden("verify-v1-with-checkpoint", ["verify", "store.stowlog"], in: directory, status: 1)
        let recover = try Tool.run(["recover", "--backup", "store.backup", "store.stowlog"], in: directory)
        #expect(recover.status == 0, "\(recover.transcript)")
        #expect(try Data(contentsOf: url) == (try Data(contentsOf: Tool.sample("trips-v1.stowlog"))))
    }

    @Test func aFlippedByteInACheckpoint() throws {
        let directory = try Tool.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = try Tool.copySample("trips-v3.stowlog", to: directory, as: "store.stowlog")
        let original = try Data(contentsOf: url)
        let records = try Self.records(of: url).records
        // The first checkpoint, superseded by the second: flip a byte of its payload.
        let checkpoint = records[5].offset
        #expect(records[5].type == 3)
        var bytes = [UInt8](original)
        bytes[Int(checkpoint) + 16 + 6] ^= 0x01
        try Data(bytes).write(to: url)
        try Tool.golden("verify-v3-flipped-checkpoint", ["verify", "store.stowlog"], in: directory, status: 1)
        let verify = try Tool.run(["verify", "--json", "store.stowlog"], in: directory)
        let object = try JSONSerialization.jsonObject(with: Data(verify.stdout.utf8)) as? [String: Any]
        #expect(object?["firstBadOffset"] as? Int == Int(checkpoint))
        // Recovery keeps what comes before it: the four commits, and nothing after.
        try Tool.golden(
            "recover-v3-flipped-checkpoint", ["recover", "--backup", "store.backup", "store.stowlog"], in: directory,
            status: 0)
        #expect(try Data(contentsOf: url) == original.prefix(Int(checkpoint)))
        #expect(try Data(contentsOf: directory.appendingPathComponent("store.backup")) == Data(bytes))
        let healthy = try Tool.run(["verify", "store.stowlog"], in: directory)
        #expect(healthy.status == 0, "\(healthy.transcript)")
        #expect(healthy.stdout.contains("the header, 4 commits and 0 checkpoints"), "\(healthy.stdout)")

        // The last checkpoint flipped: recovery keeps every commit.
        bytes = [UInt8](original)
        let last = records[7].offset
        bytes[bytes.count - 2] ^= 0x40
        try Data(bytes).write(to: url)
        let damaged = try Tool.run(["verify", "store.stowlog"], in: directory)
        #expect(damaged.status == 1)
        #expect(damaged.stdout.contains("damaged at offset \(last): "), "\(damaged.stdout)")
        #expect(try Tool.run(["recover", "--backup", "store.backup2", "store.stowlog"], in: directory).status == 0)
        #expect(try Data(contentsOf: url) == original.prefix(Int(last)))
        let dump = try Tool.run(["dump", "store.stowlog"], in: directory)
        #expect(dump.stdout == (try Tool.run(["dump", Self.tripsV3]).stdout))
    }

    @Test func aCheckpointThatDisagreesWithTheCommits() throws {
        let directory = try Tool.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = try Tool.copySample("trips-v3.stowlog", to: directory, as: "store.stowlog")
        // Item 23 left out, deleted item 24 listed instead; and the transaction before.
        let items = [2] + Array(5...22) + [24]
        let offset = try Self.append(
            LogCheckpoint(
                transactionID: 4, nextPrimaryKey: 26,
                entities: [
                    .init(entityIndex: 0, keys: [1, 4, 25], indexes: []),
                    .init(entityIndex: 1, keys: items.map(Int64.init), indexes: []),
                ]), to: url)
        try Tool.golden("verify-v3-wrong-checkpoint", ["verify", "store.stowlog"], in: directory, status: 1)
        let verify = try Tool.run(["verify", "--json", "store.stowlog"], in: directory)
        let object = try JSONSerialization.jsonObject(with: Data(verify.stdout.utf8)) as? [String: Any]
        let problems = object?["problems"] as? [[String: Any]] ?? []
        #expect(problems.count == 2)
        #expect(problems.allSatisfy { $0["offset"] as? Int == Int(offset) })
        // The framing is whole: it is not damage, and recover leaves the file alone.
        let inspect = try Tool.run(["inspect", "store.stowlog"], in: directory)
        #expect(inspect.status == 0)
        #expect(inspect.stdout.contains("with 2 problems in records"), "\(inspect.stdout)")
        #expect(try Tool.run(["recover", "store.stowlog"], in: directory).stdout.contains("is whole"))

        // A checkpoint with only an entity missing, and one listing an entity with no record.
        let missing = try Tool.copySample("trips-v3.stowlog", to: directory, as: "missing.stowlog")
        try Self.append(
            LogCheckpoint(
                transactionID: 5, nextPrimaryKey: 26, entities: [.init(entityIndex: 0, keys: [1, 4, 25], indexes: [])]),
            to: missing)
        let run = try Tool.run(["verify", "missing.stowlog"], in: directory)
        #expect(run.status == 1)
        #expect(
            run.stdout.contains("leaves out LogSampleItem, which has 20 live records there"), "\(run.transcript)")
        // The sample's own checkpoints, appended again: both agree with the records still.
        let again = try Tool.copySample("trips-v3.stowlog", to: directory, as: "again.stowlog")
        let sample = try Self.records(of: again).records
        let schema = try LogCodec.decodeHeader(sample[0].payload, formatVersion: 3).schema
        let lastCheckpoint = try LogCheckpoint.decode(sample[7].payload, schema: schema, formatVersion: 3)
        try Self.append(lastCheckpoint, to: again)
        #expect(try Tool.run(["verify", "again.stowlog"], in: directory).status == 0)
        let firstCheckpoint = try LogCheckpoint.decode(sample[5].payload, schema: schema, formatVersion: 3)
        let stale = try Self.append(firstCheckpoint, to: again)
        let staleRun = try Tool.run(["verify", "again.stowlog"], in: directory)
        #expect(staleRun.status == 1)
        #expect(
            staleRun.stdout.contains(
                "offset \(stale): the checkpoint at offset \(stale) covers transaction 4, but the commits before it "
                    + "end with transaction 5"), "\(staleRun.stdout)")
    }

    /// A store with uniqueness constraints and indexes (Person, Chore), written through
    /// `ModelContainer` and closed, so that it ends with a checkpoint.
    static func writeIndexedStore(at url: URL) throws {
        var configuration = LogStoreConfiguration(schema: Schema([Person.self, Chore.self]), url: url)
        configuration.checkpoints = .init(minimumCommitBytes: 0)
        let container = try ModelContainer(for: Schema([Person.self, Chore.self]), configurations: [configuration])
        try PeopleAndChores.insert(
            into: ModelContext(container), people: 30, chores: 40, updated: 10, deleted: 5)
    }

    /// `stowage history` and `inspect` read the history as `fetchHistory` does: after a
    /// compaction (whose history record keeps the transactions) and a `deleteHistory`, the
    /// same transactions, with the attributes each update changed.
    @Test func historyReadsWhatFetchHistoryReads() throws {
        let directory = try Tool.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("indexed.store")
        let schema = Schema([Person.self, Chore.self])
        let expected: [DefaultHistoryTransaction]
        do {
            let container = try ModelContainer(
                for: schema, configurations: [LogStoreConfiguration(schema: schema, url: url)])
            let context = ModelContext(container)
            try PeopleAndChores.insert(into: context, people: 6, chores: 2, updated: 2, deleted: 1)
            let store = try #require(container.stores.first as? LogStore)
            try store.compact()
            let first = try #require(try context.fetchHistory(HistoryDescriptor<DefaultHistoryTransaction>()).first)
                .transactionIdentifier
            try context.deleteHistory(
                HistoryDescriptor<DefaultHistoryTransaction>(
                    predicate: #Predicate { $0.transactionIdentifier == first }))
            expected = try context.fetchHistory(HistoryDescriptor<DefaultHistoryTransaction>())
            store.close()
        }
        #expect(expected.count == 2)
        let text = try Tool.run(["history", "--changes", "indexed.store"], in: directory)
        #expect(text.status == 0, "\(text.transcript)")
        #expect(text.stdout.contains("history: 2 transactions, 2 history records\n"), "\(text.stdout)")
        for transaction in expected {
            #expect(text.stdout.contains("  txn \(transaction.transactionIdentifier)  "), "\(text.stdout)")
        }
        #expect(text.stdout.components(separatedBy: "    update Person ").count - 1 == 2, "\(text.stdout)")
        #expect(text.stdout.contains(": age\n"), "\(text.stdout)")
        #expect(text.stdout.components(separatedBy: "    delete Person ").count - 1 == 1, "\(text.stdout)")
        #expect(!text.stdout.contains("    insert "), "the deleted first transaction held the inserts: \(text.stdout)")
        let json = try Tool.run(["history", "--json", "indexed.store"], in: directory)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let history = try #require(object["history"] as? [[String: Any]])
        #expect(history.compactMap { $0["transactionID"] as? Int } == expected.map { Int($0.transactionIdentifier) })
        let inspect = try Tool.run(["inspect", "indexed.store"], in: directory)
        #expect(inspect.stdout.contains("history: 2 transactions (the last, \(expected[1].transactionIdentifier), at "))
        #expect(inspect.stdout.contains("; 2 history records keep what compaction rewrote and deleteHistory removed"))
    }

    @Test func aStoreWrittenByModelContainerEndsWithACheckpointThatVerifies() throws {
        let directory = try Tool.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("indexed.store")
        try Self.writeIndexedStore(at: url)
        let records = try Self.records(of: url).records
        #expect(records.last?.type == 3, "closing the container should have written a checkpoint")
        #expect(try Data(contentsOf: url)[8] == 6, "the default configuration writes format version 6")
        let verify = try Tool.run(["verify", "indexed.store"], in: directory)
        #expect(verify.status == 0, "\(verify.transcript)")
        #expect(verify.stdout.contains("checkpoints: 1, checked against"), "\(verify.stdout)")
        #expect(verify.stdout.contains("indexes: 2 uniqueness constraints and 6 indexes checked"), "\(verify.stdout)")
        let inspect = try Tool.run(["inspect", "indexed.store"], in: directory)
        #expect(inspect.stdout.contains("checkpoints:       1\n"), "\(inspect.stdout)")
        #expect(
            inspect.stdout.contains("last checkpoint:   transaction 3 at offset \(records.last?.offset ?? 0) ("),
            "\(inspect.stdout)")
        #expect(inspect.stdout.contains(", the last record\n"), "\(inspect.stdout)")
        // The store's own compaction ends with a checkpoint too; the tool's writes none.
        do {
            var configuration = LogStoreConfiguration(schema: Schema([Person.self, Chore.self]), url: url)
            configuration.checkpoints = nil
            let store = try LogStore(configuration, migrationPlan: nil)
            #expect(store.openedFromCheckpoint)
            try store.compact()
            store.close()
        }
        #expect(try Self.records(of: url).records.last?.type == 3)
        #expect(try Tool.run(["verify", "indexed.store"], in: directory).status == 0)
        let before = try Tool.run(["dump", "indexed.store"], in: directory).stdout
        #expect(try Tool.run(["compact", "indexed.store"], in: directory).status == 0)
        #expect(try Self.records(of: url).records.map(\.type) == [1, 2])
        let compacted = try Tool.run(["inspect", "--json", "indexed.store"], in: directory)
        let object = try JSONSerialization.jsonObject(with: Data(compacted.stdout.utf8)) as? [String: Any]
        #expect(object?["formatVersion"] as? Int == 6)
        #expect((object?["log"] as? [String: Any])?["checkpoints"] as? Int == 0)
        #expect(try Tool.run(["verify", "indexed.store"], in: directory).status == 0)
        #expect(try Tool.run(["dump", "indexed.store"], in: directory).stdout == before)
        // The store opens the tool's rewrite, building its indexes from the records.
        let store = try LogStore(
            LogStoreConfiguration(schema: Schema([Person.self, Chore.self]), url: url), migrationPlan: nil)
        #expect(!store.openedFromCheckpoint)
        #expect(store.recordCount == 65)
        store.close()
    }

    @Test func aCheckpointWithASwappedIndexEntry() throws {
        let directory = try Tool.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("indexed.store")
        try Self.writeIndexedStore(at: url)
        let original = try Data(contentsOf: url)
        let records = try Self.records(of: url).records
        let schema = try LogCodec.decodeHeader(records[0].payload, formatVersion: 4).schema
        let payload = try #require(records.last { $0.type == 3 }?.payload)
        let checkpoint = try LogCheckpoint.decode(payload, schema: schema, formatVersion: 4)
        let person = try #require(schema.entities.firstIndex { $0.name == "Person" })
        let position = try #require(checkpoint.entities.firstIndex { $0.entityIndex == person })
        // Person's first index is its first uniqueness constraint: swap the records of its
        // first two entries (the sum of the primary keys stays the same).
        let constraint = schema.entities[person].uniqueness[0].joined(separator: ", ")
        var swapped = checkpoint
        swapped.entities[position].indexes[0].primaryKeys.swapAt(0, 1)
        let entries = checkpoint.entities[position].indexes[0]
        let offset = try Self.append(swapped, to: url)
        let run = try Tool.run(["verify", "indexed.store"], in: directory)
        #expect(run.status == 1, "\(run.transcript)")
        #expect(
            run.stdout.contains(
                "offset \(offset): the checkpoint at offset \(offset) has entry 1 of the uniqueness constraint "
                    + "Person(\(constraint)) wrong: it holds key \(Self.hex(entries.keys[0])) for Person "
                    + "\(entries.primaryKeys[1]), where the records give key \(Self.hex(entries.keys[0])) for Person "
                    + "\(entries.primaryKeys[0])"), "\(run.stdout)")
        #expect(run.stdout.contains("1 problem:"), "\(run.stdout)")
        // A key that is not the record's (still in ascending order): the last entry of
        // Chore's last index, Chore(priority), with a byte more.
        let chore = try #require(schema.entities.firstIndex { $0.name == "Chore" })
        let chorePosition = try #require(checkpoint.entities.firstIndex { $0.entityIndex == chore })
        var wrongKey = checkpoint
        let count = wrongKey.entities[chorePosition].indexes[3].keys.count
        #expect(count == 40)
        wrongKey.entities[chorePosition].indexes[3].keys[count - 1].bytes.append(0)
        try original.write(to: url)
        let wrongOffset = try Self.append(wrongKey, to: url)
        let wrong = try Tool.run(["verify", "indexed.store"], in: directory)
        #expect(wrong.status == 1, "\(wrong.transcript)")
        #expect(
            wrong.stdout.contains(
                "the checkpoint at offset \(wrongOffset) has entry 40 of the index Chore(priority) wrong"),
            "\(wrong.stdout)")
        #expect(wrong.stdout.contains("1 problem:"), "\(wrong.stdout)")
    }

    @Test func aCheckpointOfAnIndexedExternalValue() throws {
        let directory = try Tool.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("scans.store")
        func open() throws -> ModelContainer {
            var configuration = LogStoreConfiguration(schema: Schema([Scan.self]), url: url)
            configuration.checkpoints = .init(minimumCommitBytes: 0)
            return try ModelContainer(for: Schema([Scan.self]), configurations: [configuration])
        }
        do {
            let context = ModelContext(try open())
            for n in 0..<4 {
                context.insert(Scan(label: "scan \(n)", bytes: LogSamples.photoBytes(UInt8(n), count: 300)))
            }
            try context.save()
        }
        // Closing wrote a checkpoint whose Scan(bytes) entries hold the files' bytes.
        let first = try Tool.run(["verify", "scans.store"], in: directory)
        #expect(first.status == 0, "\(first.transcript)")
        #expect(first.stdout.contains("external values: 4 files"), "\(first.stdout)")
        // A new value for one scan; the next open deletes the old value's file, which the
        // first checkpoint's entries were computed from.
        do {
            let context = ModelContext(try open())
            let scans = try context.fetch(FetchDescriptor<Scan>(sortBy: [SortDescriptor(\.label)]))
            scans[0].bytes = LogSamples.photoBytes(9, count: 200)
            try context.save()
        }
        _ = try open()
        let blobs = try FileManager.default.contentsOfDirectory(atPath: url.path + ".blobs")
        #expect(blobs.count == 4, "the replaced value's file should be gone: \(blobs)")
        let records = try Self.records(of: url).records
        #expect(records.filter { $0.type == 3 }.count == 2)
        let verify = try Tool.run(["verify", "scans.store"], in: directory)
        #expect(verify.status == 0, "\(verify.transcript)")
        #expect(verify.stdout.contains("checkpoints: 2, each checked"), "\(verify.stdout)")
        // A checkpoint that lists the old bytes' key for the new value is caught: the last
        // checkpoint (its versions and key directory agree) with the first one's entries.
        let schema = try LogCodec.decodeHeader(records[0].payload, formatVersion: 4).schema
        let firstCheckpoint = try LogCheckpoint.decode(
            try #require(records.first { $0.type == 3 }?.payload), schema: schema, formatVersion: 4)
        var stale = try LogCheckpoint.decode(
            try #require(records.last { $0.type == 3 }?.payload), schema: schema, formatVersion: 4)
        #expect(stale.transactionID == 2)
        #expect(stale.entities.map(\.keys) == firstCheckpoint.entities.map(\.keys))
        for position in stale.entities.indices {
            stale.entities[position].indexes = firstCheckpoint.entities[position].indexes
        }
        let offset = try Self.append(stale, to: url)
        let caught = try Tool.run(["verify", "scans.store"], in: directory)
        #expect(caught.status == 1, "\(caught.transcript)")
        #expect(caught.stdout.contains("1 problem:"), "\(caught.stdout)")
        #expect(
            caught.stdout.contains("the checkpoint at offset \(offset) has entry ")
                && caught.stdout.contains(" of the index Scan(bytes) wrong"), "\(caught.stdout)")
    }

    @Test func aVersion4CheckpointWithAWrongExternalReference() throws {
        let directory = try Tool.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("photos.store")
        do {
            var configuration = LogStoreConfiguration(schema: Schema([Photo.self]), url: url)
            configuration.checkpoints = .init(minimumCommitBytes: 0)
            let container = try ModelContainer(for: Schema([Photo.self]), configurations: [configuration])
            let context = ModelContext(container)
            for n in 0..<3 {
                context.insert(
                    Photo(title: "photo \(n)", bytes: LogSamples.photoBytes(UInt8(n), count: 300 + n)))
            }
            try context.save()
        }
        let clean = try Tool.run(["verify", "photos.store"], in: directory)
        #expect(clean.status == 0, "\(clean.transcript)")
        let records = try Self.records(of: url).records
        let schema = try LogCodec.decodeHeader(records[0].payload, formatVersion: 4).schema
        var forged = try LogCheckpoint.decode(
            try #require(records.last { $0.type == 3 }?.payload), schema: schema, formatVersion: 4)
        let references = try #require(forged.entities.first?.external)
        #expect(references.count == 3 && references.allSatisfy { $0.compactMap { $0 }.count == 1 })
        forged.entities[0].external?[1][0]?.checksum ^= 1
        let offset = try Self.append(forged, to: url)
        let caught = try Tool.run(["verify", "photos.store"], in: directory)
        #expect(caught.status == 1, "\(caught.transcript)")
        #expect(
            caught.stdout.contains("the checkpoint at offset \(offset) gives Photo ")
                && caught.stdout.contains("other external value references"), "\(caught.stdout)")
    }

    // MARK: Format version 4: blocks and the key directory

    static let tripsV4 = "Formats/samples/trips-v4.stowlog"

    /// `trips-v4.stowlog`, `trips-v5.stowlog` and `trips-v6.stowlog` are what
    /// `LogSamples.writeVersion4(to:)`, `writeVersion5(to:)` and `writeVersion6(to:)` write, byte for byte. `STOWAGE_WRITE_SAMPLES=1` rewrites them
    /// (after a deliberate format change).
    @Test(arguments: [UInt16(4), 5, 6])
    func theCheckpointedSampleIsWhatTheWriterWrites(version: UInt16) throws {
        let write = [4: LogSamples.writeVersion4, 5: LogSamples.writeVersion5, 6: LogSamples.writeVersion6][version]!
        let name = "trips-v\(version).stowlog"
        if ProcessInfo.processInfo.environment["STOWAGE_WRITE_SAMPLES"] == "1" {
            try write(Tool.repository.appendingPathComponent("Formats/samples"))
        }
        let directory = try Tool.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try write(directory)
        let fresh = try Data(contentsOf: directory.appendingPathComponent(name))
        #expect(fresh == (try Data(contentsOf: Tool.sample(name))))
        #expect(fresh[8] == UInt8(version))
    }

    /// The sample's records, its schema, and the map that decodes its commits.
    static func version4Sample(_ url: URL = Tool.sample("trips-v4.stowlog")) throws -> (
        salt: UInt64, records: [LogRecord], schema: StoredSchema, map: LogEntityMap
    ) {
        let (salt, records) = try Self.records(of: url)
        let header = try LogCodec.decodeHeader(records[0].payload, formatVersion: 4)
        return (
            salt, records, header.schema,
            LogEntityMap(storeIdentifier: header.storeIdentifier, description: header.schema, formatVersion: 4)
        )
    }

    @Test func theVersion4SampleWithBlocksAndCheckpoints() throws {
        try Tool.golden("inspect-trips-v4", ["inspect", Self.tripsV4], status: 0)
        try Tool.golden("inspect-trips-v4-json", ["inspect", "--json", Self.tripsV4], status: 0)
        try Tool.golden("inspect-trips-v4-map", ["inspect", "--map", "--width", "50", Self.tripsV4], status: 0)
        try Tool.golden("verify-trips-v4", ["verify", Self.tripsV4], status: 0)
        try Tool.golden("verify-trips-v4-json", ["verify", "--json", Self.tripsV4], status: 0)
        try Tool.golden("dump-trips-v4", ["dump", Self.tripsV4], status: 0)
        try Tool.golden("history-trips-v4", ["history", Self.tripsV4], status: 0)
        try Tool.golden("history-trips-v4-json", ["history", "--json", Self.tripsV4], status: 0)

        // The same saves as the version 3 sample: the same records, commits and checkpoints.
        #expect(try Tool.run(["dump", Self.tripsV4]).stdout == (try Tool.run(["dump", Self.tripsV3]).stdout))
        let sample = try Self.version4Sample()
        #expect(sample.records.map(\.type) == [1, 2, 2, 2, 2, 3, 2, 3])
        let size = Int64(try Data(contentsOf: Tool.sample("trips-v4.stowlog")).count)
        let run = try Tool.run(["inspect", "--json", Self.tripsV4])
        let object = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any]
        let log = try #require(object?["log"] as? [String: Any])
        #expect(object?["formatVersion"] as? Int == 4)
        #expect(log["commits"] as? Int == 5)
        #expect(log["checkpoints"] as? Int == 2)
        // One block per commit: no commit of the sample reaches 4 KiB.
        #expect(log["blocks"] as? Int == 5)
        let lastCheckpoint = log["lastCheckpoint"] as? [String: Any]
        #expect(lastCheckpoint?["offset"] as? Int == Int(sample.records[7].offset))
        #expect(lastCheckpoint?["records"] as? Int == 23)
        #expect((log["liveBytes"] as? Int ?? 0) + (log["deadBytes"] as? Int ?? 0) == Int(size))
        // The last checkpoint's key directory is where the commits left each record.
        let checkpoint = try LogCheckpoint.decode(
            sample.records[7].payload, schema: sample.schema, formatVersion: 4, fileSize: size)
        var locations: [String: [Int64: RecordLocation]] = [:]
        var versions: Int64 = 0
        for record in sample.records where record.type == 2 {
            let commit = try LogCodec.decodeCommit(record.payload, map: sample.map, recordOffset: record.offset)
            #expect(commit.locations.count == commit.writes.count)
            versions += Int64(commit.deletes.count + commit.writes.count)
            for (entity, key) in commit.deletes { locations[entity]?[key] = nil }
            for (write, location) in zip(commit.writes, commit.locations) {
                locations[write.entity, default: [:]][write.key] = location
            }
        }
        #expect(checkpoint.versions == versions)
        for entity in checkpoint.entities {
            let name = sample.schema.entities[entity.entityIndex].name
            let expected: [RecordLocation?] = entity.keys.map { locations[name]?[$0] }
            #expect(entity.locations.map { $0.map(Optional.some) } == expected, "\(name)")
        }
    }

    // MARK: Format version 5: each write of a block on its own

    static let tripsV5 = "Formats/samples/trips-v5.stowlog"

    /// The same saves as the version 4 sample read the same through every command; each of
    /// its blocks stores its writes one by one (flag 2), some of them compressed.
    @Test func theVersion5SampleWithWritesStoredOneByOne() throws {
        try Tool.golden("inspect-trips-v5", ["inspect", Self.tripsV5], status: 0)
        try Tool.golden("verify-trips-v5", ["verify", Self.tripsV5], status: 0)
        try Tool.golden("history-trips-v5", ["history", Self.tripsV5], status: 0)
        #expect(try Tool.run(["dump", Self.tripsV5]).stdout == (try Tool.run(["dump", Self.tripsV4]).stdout))
        let (_, records) = try Self.records(of: Tool.sample("trips-v5.stowlog"))
        #expect(records.map(\.type) == [1, 2, 2, 2, 2, 3, 2, 3])
        let header = try LogCodec.decodeHeader(records[0].payload, formatVersion: 5)
        let map = LogEntityMap(storeIdentifier: header.storeIdentifier, description: header.schema, formatVersion: 5)
        let bytes = [UInt8](try Data(contentsOf: Tool.sample("trips-v5.stowlog")))
        var compressed = 0
        var raw = 0
        for record in records where record.type == 2 {
            let commit = try LogCodec.decodeCommit(record.payload, map: map, recordOffset: record.offset)
            for offset in Set(commit.locations.map(\.blockOffset)) {
                let at = Int(offset)
                #expect(bytes[at + 10] == 2)
                let block = try LogBlocks.header(
                    bytes[at..<at + LogBlocks.headerSize], available: bytes.count - at - LogBlocks.headerSize,
                    version: 5)
                let stored = at + LogBlocks.headerSize
                let table = try LogBlocks.table(block, stored: bytes[stored..<stored + block.storedLength])
                let lz4 = table.lengths.filter { $0 > 0 }.count
                compressed += lz4
                raw += block.writes - lz4
            }
        }
        #expect(compressed > 0 && raw > 0, "\(compressed) compressed, \(raw) raw")
    }

    // MARK: Format version 6: layout records

    static let tripsV6 = "Formats/samples/trips-v6.stowlog"

    /// The version 6 sample is the version 5 one's saves, a layout record, and one commit in
    /// the new layout. Every command reads the records of the old layout through the new
    /// one: a rating of 3 and the note as a remark.
    @Test func theVersion6SampleWithALayoutRecord() throws {
        try Tool.golden("inspect-trips-v6", ["inspect", Self.tripsV6], status: 0)
        try Tool.golden("verify-trips-v6", ["verify", Self.tripsV6], status: 0)
        try Tool.golden("dump-trips-v6", ["dump", Self.tripsV6], status: 0)
        let (_, records) = try Self.records(of: Tool.sample("trips-v6.stowlog"))
        #expect(records.map(\.type) == [1, 2, 2, 2, 2, 3, 2, 3, 4, 2])
        let dump = try Tool.run(["dump", Self.tripsV6])
        #expect(dump.status == 0, "\(dump.transcript)")
        #expect(dump.stdout.contains("\"remark\": \"Temples\", \"rating\": 3"), "\(dump.stdout)")
        #expect(dump.stdout.contains("\"remark\": \"Lagoon\", \"rating\": 5"), "\(dump.stdout)")
        #expect(!dump.stdout.contains("\"note\""), "\(dump.stdout)")
    }

    /// Damage before the layout record ends the valid prefix there, and takes the layout
    /// with it: the tool shows the records in the layout before it, as the store opens them.
    @Test func damageBeforeTheLayoutRecordShowsTheLayoutBeforeIt() throws {
        let directory = try Tool.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = try Tool.copySample("trips-v6.stowlog", to: directory, as: "store.stowlog")
        let (_, records) = try Self.records(of: url)
        let checkpoint = try #require(records.last { $0.type == 3 })
        var bytes = try Data(contentsOf: url)
        bytes[Int(checkpoint.offset) + 20] ^= 0x5A
        try bytes.write(to: url)
        let dump = try Tool.run(["dump", "store.stowlog"], in: directory)
        #expect(dump.stdout.contains("\"note\": \"Temples\""), "\(dump.transcript)")
        #expect(!dump.stdout.contains("rating") && !dump.stdout.contains("Reykjavik"), "\(dump.transcript)")
        let verify = try Tool.run(["verify", "store.stowlog"], in: directory)
        #expect(verify.status != 0)
        #expect(verify.stdout.contains("valid up to offset \(checkpoint.offset)"), "\(verify.transcript)")
    }

    /// Writes `original` with `commit`'s payload replaced by `payload`, framed again so that
    /// the record's checksum holds, to `url` (`store.stowlog`), and runs `verify` on it: it
    /// must fail and name the damaged block at `block`.
    static func reframeAndVerify(
        _ payload: [UInt8], of commit: LogRecord, endingAt next: Int64, block: Int64, salt: UInt64,
        in original: [UInt8], at url: URL, sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> Tool.Run {
        let framed = LogFormat.frame(
            type: .commit, payload: payload, salt: salt, offset: commit.offset, compress: false)
        #expect(Int64(framed.count) == next - commit.offset, sourceLocation: sourceLocation)
        var bytes = original
        bytes.replaceSubrange(Int(commit.offset)..<Int(next), with: framed)
        try Data(bytes).write(to: url)
        let run = try Tool.run(["verify", "store.stowlog"], in: url.deletingLastPathComponent())
        #expect(run.status == 1, "\(run.transcript)", sourceLocation: sourceLocation)
        #expect(
            run.stdout.contains(
                "damaged at offset \(commit.offset): the commit at offset \(commit.offset) does not decode: "
                    + "its block at offset \(block): "), "\(run.stdout)", sourceLocation: sourceLocation)
        return run
    }

    /// A version 5 block whose table does not add up, behind a record checksum and a block
    /// checksum that both hold: verify names the block and the table's fault, and recover
    /// keeps the commits before it.
    @Test func aVersion5BlockWhoseTableDoesNotAddUp() throws {
        let directory = try Tool.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = try Tool.copySample("trips-v5.stowlog", to: directory, as: "store.stowlog")
        let original = [UInt8](try Data(contentsOf: url))
        let (salt, records) = try Self.records(of: url)
        let header = try LogCodec.decodeHeader(records[0].payload, formatVersion: 5)
        let map = LogEntityMap(storeIdentifier: header.storeIdentifier, description: header.schema, formatVersion: 5)
        let commit = records[2]
        let block = try Self.firstBlock(of: commit, map: map)
        // One more byte in the header's uncompressed length, the block checksum made again.
        var payload = commit.payload
        let at = Int(block - commit.offset) - LogFormat.frameSize
        payload[at + 4] &+= 1
        let storedLength =
            Int(payload[at]) | Int(payload[at + 1]) << 8 | Int(payload[at + 2]) << 16 | Int(payload[at + 3]) << 24
        let stored = Array(payload[(at + LogBlocks.headerSize)..<(at + LogBlocks.headerSize + storedLength)])
        let crc = CRC32C.mask(CRC32C.update(CRC32C.update(0, Array(payload[at..<(at + 12)])), stored))
        for i in 0..<4 { payload[at + 12 + i] = UInt8(truncatingIfNeeded: crc >> (8 * UInt32(i))) }
        let run = try Self.reframeAndVerify(
            payload, of: commit, endingAt: records[3].offset, block: block, salt: salt, in: original, at: url)
        #expect(run.stdout.contains("its header says"), "\(run.stdout)")
        // A store opening it keeps the commits before it (point-in-time recovery).
        #expect(try Tool.run(["recover", "--backup", "store.backup", "store.stowlog"], in: directory).status == 0)
        #expect([UInt8](try Data(contentsOf: url)) == Array(original.prefix(Int(commit.offset))))
    }

    /// A version 4 commit's block, by the file offset of its header: the first block of
    /// the sample's second commit (the twenty pairs of socks).
    static func firstBlock(of record: LogRecord, map: LogEntityMap) throws -> Int64 {
        let commit = try LogCodec.decodeCommit(record.payload, map: map, recordOffset: record.offset)
        return try #require(commit.locations.first?.blockOffset)
    }

    @Test func aFlippedByteInAVersion4Block() throws {
        let directory = try Tool.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = try Tool.copySample("trips-v4.stowlog", to: directory, as: "store.stowlog")
        let original = try Data(contentsOf: url)
        let sample = try Self.version4Sample(url)
        let commit = sample.records[2]
        let block = try Self.firstBlock(of: commit, map: sample.map)
        #expect(block > commit.offset + 16)
        // A byte of the block's stored bytes: the record's checksum fails first.
        var bytes = [UInt8](original)
        bytes[Int(block) + 16 + 5] ^= 0x10
        try Data(bytes).write(to: url)
        try Tool.golden("verify-v4-flipped-block", ["verify", "store.stowlog"], in: directory, status: 1)
        let verify = try Tool.run(["verify", "--json", "store.stowlog"], in: directory)
        let object = try JSONSerialization.jsonObject(with: Data(verify.stdout.utf8)) as? [String: Any]
        #expect(object?["firstBadOffset"] as? Int == Int(commit.offset))
        #expect(try Tool.run(["inspect", "store.stowlog"], in: directory).status == 1)

        // The same byte in a record framed again, so that its checksum holds: the block's
        // own checksum is what fails, and verify names the block.
        var payload = commit.payload
        // The block's header starts `block - commit.offset - 16` bytes into the payload.
        payload[Int(block - commit.offset) - 16 + 16 + 5] ^= 0x10
        let run = try Self.reframeAndVerify(
            payload, of: commit, endingAt: sample.records[3].offset, block: block, salt: sample.salt,
            in: [UInt8](original), at: url)
        #expect(run.stdout.contains("checksum"), "\(run.stdout)")
        // Recovery keeps the commit before it.
        #expect(try Tool.run(["recover", "--backup", "store.backup", "store.stowlog"], in: directory).status == 0)
        #expect(try Data(contentsOf: url) == original.prefix(Int(commit.offset)))
        #expect(try Tool.run(["verify", "store.stowlog"], in: directory).status == 0)
    }

    @Test func aVersion4CommitCompressedAsAWholeIsDamage() throws {
        let directory = try Tool.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = try Tool.copySample("trips-v4.stowlog", to: directory, as: "store.stowlog")
        let sample = try Self.version4Sample(url)
        // A commit of deletes only (no blocks), long and repetitive enough to compress.
        let commit = LogCommit(
            transactionID: 6, timestamp: LogSamples.firstTimestamp, author: "sampler", nextPrimaryKey: 26,
            deletes: (0..<40).map { _ in (entity: "LogSampleItem", key: Int64(24)) }, writes: [])
        let encoded = try LogCodec.encodeCommit(commit, map: sample.map)
        #expect(encoded.blocks.isEmpty)
        var bytes = try Data(contentsOf: url)
        let offset = Int64(bytes.count)
        let compressed = LogFormat.frame(type: .commit, payload: encoded.payload, salt: sample.salt, offset: offset)
        #expect(compressed[5] == 1, "the payload should compress")
        bytes.append(contentsOf: compressed)
        try bytes.write(to: url)
        try Tool.golden("verify-v4-compressed-commit", ["verify", "store.stowlog"], in: directory, status: 1)
        // Framed raw, as a version 4 writer does, the same commit is whole.
        bytes = try Data(contentsOf: Tool.sample("trips-v4.stowlog"))
        bytes.append(contentsOf: encoded.record(salt: sample.salt, offset: offset))
        try bytes.write(to: url)
        let raw = try Tool.run(["verify", "store.stowlog"], in: directory)
        #expect(raw.status == 0, "\(raw.transcript)")
    }

    @Test func aVersion4CheckpointWithAWrongLocationOrVersionCount() throws {
        let directory = try Tool.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = try Tool.copySample("trips-v4.stowlog", to: directory, as: "store.stowlog")
        let sample = try Self.version4Sample(url)
        let size = Int64(try Data(contentsOf: url).count)
        let last = try LogCheckpoint.decode(
            sample.records[7].payload, schema: sample.schema, formatVersion: 4, fileSize: size)
        // The sample's last checkpoint, appended again, still agrees.
        try Self.append(last, to: url)
        #expect(try Tool.run(["verify", "store.stowlog"], in: directory).status == 0)

        // Two items' locations swapped, and one record version too many.
        _ = try Tool.copySample("trips-v4.stowlog", to: directory, as: "store.stowlog")
        let item = try #require(sample.schema.entities.firstIndex { $0.name == "LogSampleItem" })
        let position = try #require(last.entities.firstIndex { $0.entityIndex == item })
        var wrong = last
        var locations = try #require(wrong.entities[position].locations)
        // The first and the last live item, which are in different commits.
        locations.swapAt(0, locations.count - 1)
        #expect(locations[0] != locations[locations.count - 1])
        wrong.entities[position].locations = locations
        wrong.versions = (last.versions ?? 0) + 1
        let offset = try Self.append(wrong, to: url)
        try Tool.golden("verify-v4-wrong-checkpoint", ["verify", "store.stowlog"], in: directory, status: 1)
        let verify = try Tool.run(["verify", "--json", "store.stowlog"], in: directory)
        let object = try JSONSerialization.jsonObject(with: Data(verify.stdout.utf8)) as? [String: Any]
        let problems = object?["problems"] as? [[String: Any]] ?? []
        #expect(problems.count == 2)
        #expect(problems.allSatisfy { $0["offset"] as? Int == Int(offset) })
        let messages = problems.compactMap { $0["message"] as? String }
        let versions = try #require(last.versions)
        #expect(
            messages.contains {
                $0.hasPrefix(
                    "the checkpoint at offset \(offset) counts \(versions + 1) record versions, but the commits "
                        + "before it hold \(versions) (their writes and deletes)")
            }, "\(messages)")
        let keys = last.entities[position].keys
        #expect(
            messages.contains {
                $0.hasPrefix(
                    "the checkpoint at offset \(offset) gives LogSampleItem \(keys[0]) the location "
                        + "\(locations[0]), where the commits before it leave it at \(locations[locations.count - 1])")
                    && $0.hasSuffix("(1 more LogSampleItem location differs)")
            }, "\(messages)")
        // The framing is whole: not damage; recover leaves the file alone.
        #expect(try Tool.run(["inspect", "store.stowlog"], in: directory).status == 0)
        #expect(try Tool.run(["recover", "store.stowlog"], in: directory).stdout.contains("is whole"))

        // A slot off by one, alone.
        _ = try Tool.copySample("trips-v4.stowlog", to: directory, as: "store.stowlog")
        var slot = last
        let moved = try #require(slot.entities[position].locations?[3])
        slot.entities[position].locations?[3] = RecordLocation(blockOffset: moved.blockOffset, slot: moved.slot + 1)
        let slotOffset = try Self.append(slot, to: url)
        let slotRun = try Tool.run(["verify", "store.stowlog"], in: directory)
        #expect(slotRun.status == 1)
        #expect(slotRun.stdout.contains("1 problem:"), "\(slotRun.stdout)")
        #expect(
            slotRun.stdout.contains(
                "the checkpoint at offset \(slotOffset) gives LogSampleItem \(keys[3]) the location block "
                    + "\(moved.blockOffset) slot \(moved.slot + 1), where the commits before it leave it at \(moved)\n"),
            "\(slotRun.stdout)")
    }

    @Test func compactKeepsVersion4() throws {
        let directory = try Tool.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = try Tool.copySample("trips-v4.stowlog", to: directory, as: "store.stowlog")
        let before = try Tool.run(["dump", "store.stowlog"], in: directory)
        try Tool.golden("compact-trips-v4", ["compact", "store.stowlog"], in: directory, status: 0)
        #expect(try Data(contentsOf: url)[8] == 4)
        #expect(try Self.records(of: url).records.map(\.type) == [1, 2])
        let verify = try Tool.run(["verify", "store.stowlog"], in: directory)
        #expect(verify.status == 0, "\(verify.transcript)")
        #expect(try Tool.run(["dump", "store.stowlog"], in: directory).stdout == before.stdout)
        let inspect = try Tool.run(["inspect", "--json", "store.stowlog"], in: directory)
        let object = try JSONSerialization.jsonObject(with: Data(inspect.stdout.utf8)) as? [String: Any]
        #expect(object?["formatVersion"] as? Int == 4)
        let log = object?["log"] as? [String: Any]
        #expect(log?["deadBytes"] as? Int == 0)
        #expect(log?["generation"] as? Int == 1)
        #expect(log?["checkpoints"] as? Int == 0)
        #expect(object?["nextPrimaryKey"] as? Int == 26)
        // The commit record is raw; its block is compressed.
        let compacted = try Self.records(of: url).records[1]
        let frame = try Data(contentsOf: url)[Int(compacted.offset)..<Int(compacted.offset) + 16]
        #expect(frame[frame.startIndex + 5] == 0)
        // The store opens the rewrite and reads every record back from its block.
        let expected = try Tool.run(["dump", Self.tripsV4]).stdout
        do {
            let store = try LogStore(LogSamples.configuration(url: url, version: 4), migrationPlan: nil)
            #expect(store.recordCount == 23)
            let trips = try store.allSnapshots(of: "LogSampleTrip")
            let items = try store.allSnapshots(of: "LogSampleItem")
            #expect(trips.count == 3 && items.count == 20)
            let name = try #require(LogSamples.schema.entitiesByName["LogSampleItem"]?.property(named: "name")?.index)
            #expect(!items.contains { $0.values[name] == .string("Wool socks, pair 20") })
            #expect(items.contains { $0.values[name] == .string("Wool socks, pair 19") })
            store.close()
        }
        // Opening wrote nothing: the tool still reads the same records.
        #expect(try Tool.run(["dump", "store.stowlog"], in: directory).stdout == expected)
        #expect(try Tool.run(["verify", "store.stowlog"], in: directory).status == 0)
    }

    /// Every cut of the version 4 sample: whole only at a record boundary, and never a
    /// crash, whether the cut falls in a frame, a block header or a block's bytes.
    @Test func everyCutOfTheVersion4Sample() throws {
        let directory = try Tool.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let bytes = try Data(contentsOf: Tool.sample("trips-v4.stowlog"))
        let sample = try Self.version4Sample()
        let boundaries = Set(sample.records.dropFirst().map { Int($0.offset) } + [bytes.count])
        var lengths = Set(stride(from: 1, to: bytes.count, by: 13))
        for boundary in boundaries { lengths.formUnion([boundary - 1, boundary, boundary + 1, boundary + 17]) }
        for length in lengths.sorted() where length > 0 && length <= bytes.count {
            try bytes.prefix(length).write(to: directory.appendingPathComponent("cut.stowlog"))
            let run = try Tool.run(["verify", "cut.stowlog"], in: directory)
            #expect(run.status == (boundaries.contains(length) ? 0 : 1), "\(length): \(run.transcript)")
        }
    }

    @Test func aTornVersion4Log() throws {
        let directory = try Tool.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let sample = try Self.version4Sample()
        let original = try Data(contentsOf: Tool.sample("trips-v4.stowlog"))
        // The fifth commit cut in the middle of its block.
        let commit = sample.records[6]
        let cut = Int(commit.offset) + (Int(sample.records[7].offset - commit.offset)) / 2
        let url = directory.appendingPathComponent("torn.stowlog")
        try original.prefix(cut).write(to: url)
        #expect(try Tool.run(["verify", "torn.stowlog"], in: directory).status == 1)
        #expect(try Tool.run(["history", "torn.stowlog"], in: directory).status == 1)
        let recover = try Tool.run(["recover", "--backup", "torn.backup", "torn.stowlog"], in: directory)
        #expect(recover.status == 0, "\(recover.transcript)")
        #expect(try Data(contentsOf: url) == original.prefix(Int(commit.offset)))
        let verify = try Tool.run(["verify", "torn.stowlog"], in: directory)
        #expect(verify.status == 0, "\(verify.transcript)")
        #expect(verify.stdout.contains("the header, 4 commits and 1 checkpoint,"), "\(verify.stdout)")
        #expect(try Tool.run(["dump", "torn.stowlog"], in: directory).stdout.split(separator: "\n").count == 24)
    }

    /// Zeros after the last record, as a store that crashed leaves its reserved tail
    /// (`Formats/log.md`, "Writing"), are the end of the log, not damage.
    @Test func aReservedZeroTailIsNotDamage() throws {
        let directory = try Tool.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let original = try Data(contentsOf: Tool.sample("trips-v4.stowlog"))
        let url = directory.appendingPathComponent("crashed.stowlog")
        try (original + Data(count: 4096)).write(to: url)
        let verify = try Tool.run(["verify", "crashed.stowlog"], in: directory)
        #expect(verify.status == 0, "\(verify.transcript)")
        let inspect = try Tool.run(["inspect", "--map", "--width", "40", "crashed.stowlog"], in: directory)
        #expect(inspect.status == 0, "\(inspect.transcript)")
        #expect(inspect.stdout.contains("status: readable to the end"), "\(inspect.stdout)")
        #expect(inspect.stdout.contains("_ reserved zeros"), "\(inspect.stdout)")
        #expect(inspect.stdout.contains("_"), "\(inspect.stdout)")
        #expect(try Tool.run(["history", "crashed.stowlog"], in: directory).status == 0)
        try original.write(to: directory.appendingPathComponent("clean.stowlog"))
        let dump = try Tool.run(["dump", "crashed.stowlog"], in: directory)
        let cleanDump = try Tool.run(["dump", "clean.stowlog"], in: directory)
        #expect(dump.status == 0 && cleanDump.status == 0)
        #expect(dump.stdout.replacingOccurrences(of: "crashed", with: "clean") == cleanDump.stdout)
        // Without the zeros the map has no reserved region.
        let clean = try Tool.run(["inspect", "--map", "--width", "40", "clean.stowlog"], in: directory)
        #expect(!clean.stdout.contains("reserved"), "\(clean.stdout)")
    }

    static func hex(_ key: IndexKey) -> String {
        key.bytes.prefix(32).map { String(format: "%02x", $0) }.joined()
            + (key.bytes.count > 32 ? "… (\(key.bytes.count) bytes)" : "")
    }
}
