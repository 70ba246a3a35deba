import Foundation
import StowageTestSupport
import Testing

/// Damaged copies of the format samples, run through the commands: the tool never
/// crashes or fails without a word, and `recover` either keeps a prefix that verifies
/// (with the damaged original as its backup) or leaves the file as it was. A seeded
/// random walk, replayed with `STOWAGE_SEED`; the cases the tests above name one by one
/// are the ones a person thought of, these are the ones nobody did.
@Suite("stowage on randomly damaged files")
struct ToolDamageTests {
    static let samples = [
        "trips-v5.stowlog", "trips-v4.stowlog", "trips-v3.stowlog", "trips-v1.stowlog", "json-v1.json",
    ]

    @Test func randomDamageNeverCrashesTheToolAndRecoverKeepsAPrefixThatVerifies() throws {
        var random = SeededRandom.fromEnvironment()
        let seed = random.seed
        for round in 0..<40 {
            let name = Self.samples[round % Self.samples.count]
            let original = [UInt8](try Data(contentsOf: Tool.sample(name)))
            var bytes = original
            switch Int.random(in: 0..<3, using: &random) {
            case 0:
                bytes = Array(bytes.prefix(Int.random(in: 0..<bytes.count, using: &random)))
            case 1:
                for _ in 0..<Int.random(in: 1...4, using: &random) {
                    bytes[Int.random(in: 0..<bytes.count, using: &random)] ^=
                        1 << UInt8.random(in: 0..<8, using: &random)
                }
            default:
                let start = Int.random(in: 0..<bytes.count, using: &random)
                for i in start..<min(bytes.count, start + Int.random(in: 1...16, using: &random)) {
                    bytes[i] = UInt8.random(in: 0...255, using: &random)
                }
            }
            let directory = try Tool.scratchDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let file = name.hasSuffix(".json") ? "case.json" : "case.stowlog"
            let url = directory.appendingPathComponent(file)
            try Data(bytes).write(to: url)
            let context = "seed \(seed), round \(round), \(name)"

            for command in ["verify", "dump", "inspect", "history"] {
                let run = try Tool.run([command, file], in: directory)
                // 0 or 1; a trap or a signal ends with another status.
                #expect(run.status == 0 || run.status == 1, "\(context): \(run.transcript)")
                #expect(run.status == 0 || !(run.stdout + run.stderr).isEmpty, "\(context): \(run.transcript)")
                #expect([UInt8](try Data(contentsOf: url)) == bytes, "\(context): \(command) wrote to the file")
            }
            guard !name.hasSuffix(".json") else { continue }

            let recover = try Tool.run(["recover", file], in: directory)
            #expect(recover.status == 0 || recover.status == 1, "\(context): \(recover.transcript)")
            let after = [UInt8](try Data(contentsOf: url))
            if recover.status == 0 {
                #expect(Array(bytes.prefix(after.count)) == after, "\(context): recover kept what was not there")
                let verify = try Tool.run(["verify", file], in: directory)
                #expect(verify.status == 0, "\(context): what recover kept does not verify: \(verify.transcript)")
                if after != bytes {
                    let backups = try FileManager.default.contentsOfDirectory(atPath: directory.path)
                        .filter { $0.hasPrefix("\(file).bak-") }
                    #expect(backups.count == 1, "\(context): \(backups)")
                    if let backup = backups.first {
                        let saved = [UInt8](try Data(contentsOf: directory.appendingPathComponent(backup)))
                        #expect(saved == bytes, "\(context): the backup is not the damaged file")
                    }
                }
            } else {
                #expect(after == bytes, "\(context): a recover that failed changed the file")
            }
        }
    }
}

/// `compact` and `recover` given a symbolic link work on the file it leads to, as a store
/// opened through the link does: the link stays a link, and the lock is the real file's.
@Test func compactAndRecoverThroughALinkKeepTheLink() throws {
    let directory = try Tool.scratchDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let real = try Tool.copySample("trips-v5.stowlog", to: directory, as: "real.stowlog")
    let links = directory.appendingPathComponent("links", isDirectory: true)
    try FileManager.default.createDirectory(at: links, withIntermediateDirectories: true)
    let link = links.appendingPathComponent("link.stowlog")
    try FileManager.default.createSymbolicLink(at: link, withDestinationURL: real)
    func isLink() throws -> Bool {
        try FileManager.default.attributesOfItem(atPath: link.path)[.type] as? FileAttributeType == .typeSymbolicLink
    }
    let before = try Data(contentsOf: real)
    let compact = try Tool.run(["compact", "links/link.stowlog"], in: directory)
    #expect(compact.status == 0, "\(compact.transcript)")
    #expect(try isLink(), "compact replaced the link with a file")
    #expect(try Data(contentsOf: real).count < before.count, "the real file was not compacted")
    #expect(try Tool.run(["verify", "real.stowlog"], in: directory).status == 0)

    // A torn tail, cut through the link: the backup and the cut are the real file's.
    let whole = try Data(contentsOf: real)
    try whole.dropLast(3).write(to: real)
    let recover = try Tool.run(["recover", "links/link.stowlog"], in: directory)
    #expect(recover.status == 0, "\(recover.transcript)")
    #expect(try isLink(), "recover replaced the link with a file")
    #expect(try Tool.run(["verify", "real.stowlog"], in: directory).status == 0)
    let names = try FileManager.default.contentsOfDirectory(atPath: links.path)
    #expect(names == ["link.stowlog"], "recover left files beside the link: \(names)")
}
