import Foundation
@_spi(Testing) import Stowage
import StowageTestSupport
import Testing

@Suite("stowage command-line tool")
struct StowageToolTests {
    static let trips = "Formats/samples/trips-v1.stowlog"
    static let torn = "Formats/samples/trips-v1-torn.stowlog"
    static let json = "Formats/samples/json-v1.json"
    static let photos = "Formats/samples/photos-v2.stowlog"

    @Test func theToolIsBuilt() {
        #expect(FileManager.default.isExecutableFile(atPath: Tool.executable.path), "missing \(Tool.executable.path)")
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
        FileManager.default.createFile(atPath: directory.appendingPathComponent("empty").path, contents: Data())
        try Data("hello, world\n".utf8).write(to: directory.appendingPathComponent("notes.txt"))
        try Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13]).write(
            to: directory.appendingPathComponent("image.png"))
        try Data("{\"name\": \"not a store\"}\n".utf8).write(to: directory.appendingPathComponent("other.json"))
        var version9 = [UInt8](try Data(contentsOf: Tool.sample("trips-v1.stowlog")))
        version9[8] = 9
        try Data(version9).write(to: directory.appendingPathComponent("future.stowlog"))
        try Tool.golden("inspect-empty", ["inspect", "empty"], in: directory, status: 1)
        try Tool.golden("verify-text-file", ["verify", "notes.txt"], in: directory, status: 1)
        try Tool.golden("dump-png", ["dump", "image.png"], in: directory, status: 1)
        try Tool.golden("inspect-other-json", ["inspect", "other.json"], in: directory, status: 1)
        try Tool.golden("inspect-future-version", ["inspect", "future.stowlog"], in: directory, status: 1)
        try Tool.golden("inspect-missing", ["inspect", "no-such-file"], in: directory, status: 1)
        // No command writes to a file that is not a store, not even recover and compact.
        for name in ["empty", "notes.txt", "image.png", "other.json", "future.stowlog"] {
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
        #expect(left == ["empty", "future.stowlog", "image.png", "notes.txt", "other.json"])
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
}
