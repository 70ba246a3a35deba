import Foundation
import StowageTestSupport
import Testing

@_spi(Testing) @testable import Stowage
@testable import StowageInspection

/// The store's open and the `stowage` tool read a log through one walk
/// (``LogRecordWalk``): on a damaged copy of each format sample they find the valid prefix
/// ending at the same offset, for the same reason, with the same records in it. A seeded
/// random walk, replayed with `STOWAGE_SEED`.
@Suite("One reader per format")
struct OneReaderTests {
    @Test(arguments: [
        "trips-v1.stowlog", "trips-v3.stowlog", "trips-v4.stowlog", "trips-v5.stowlog", "trips-v6.stowlog",
    ])
    func theStoreAndTheToolAgreeWhereADamagedLogEnds(sample: String) throws {
        // The version 6 sample's layout record makes its schema the grown one; a read-only
        // store converts in memory where damage took the record away.
        let schema = sample == "trips-v6.stowlog" ? LogSamplesGrown.schema : LogSamples.schema
        var random = SeededRandom.fromEnvironment()
        let seed = random.seed
        let original = [UInt8](try Data(contentsOf: Tool.sample(sample)))
        let sampleURL = Tool.sample(sample)
        // Damage after the header record: before it, the store refuses to open at all.
        let commitsStart = Int(try LogStore.recordOffsets(ofFileAt: sampleURL)[1])
        for round in 0..<24 {
            var bytes = original
            let at = Int.random(in: commitsStart..<bytes.count, using: &random)
            let flip = round % 2 == 0
            if flip {
                bytes[at] ^= 1 << UInt8.random(in: 0..<8, using: &random)
            } else {
                bytes = Array(bytes.prefix(at))
            }
            let context = "seed \(seed), \(sample), round \(round): \(flip ? "bit flip" : "cut") at \(at)"
            let directory = LogTestDirectory.fresh()
            defer { directory.remove() }
            let url = directory.url.appendingPathComponent(sample)
            try Data(bytes).write(to: url)

            let tool = try ToolStore.read(path: url.path)
            var configuration = LogStoreConfiguration(schema: schema, url: url)
            configuration.allowsSave = false
            let store = try LogStore(configuration, migrationPlan: nil)
            defer { store.close() }
            let toolEnd = try #require(tool.log?.validLength, "\(context)")
            #expect(store.fileLength == toolEnd, "\(context)")
            #expect(store.lastRecovery?.validLength ?? Int64(bytes.count) == toolEnd, "\(context)")
            #expect(store.lastRecovery?.reason == tool.damage?.message, "\(context)")
            #expect(store.recordCount == tool.recordCount, "\(context)")

            // Strict recovery refuses exactly the files with damage, at the same offset.
            var strict = LogStoreConfiguration(schema: schema, url: url)
            strict.allowsSave = false
            strict.recovery = .strict
            if let damage = tool.damage {
                let error = #expect(throws: DataStoreError.self, "\(context)") {
                    _ = try LogStore(strict, migrationPlan: nil)
                }
                #expect(error?.code == .corruptStore, "\(context)")
                #expect(
                    error?.message.contains("damaged at offset \(toolEnd): \(damage.message)") == true, "\(context)")
            } else {
                _ = try LogStore(strict, migrationPlan: nil)
            }
        }
    }

    /// Records that frame and check out but may not stand where they are: the store's open
    /// names them as the tool does (before the one walk, the store called both "a record of
    /// type … where only commits may follow the header").
    @Test func aRecordOfTheWrongKindIsTheSameDamageToBoth() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let v1 = directory.url.appendingPathComponent("v1.stowlog")
        try FileManager.default.copyItem(at: Tool.sample("trips-v1.stowlog"), to: v1)
        let checkpoint = try StowageToolTests.append(
            LogCheckpoint(transactionID: 4, nextPrimaryKey: 26, entities: []), to: v1)
        let v5 = directory.url.appendingPathComponent("v5.stowlog")
        try FileManager.default.copyItem(at: Tool.sample("trips-v5.stowlog"), to: v5)
        let salt = try StowageToolTests.records(of: v5).salt
        var bytes = try Data(contentsOf: v5)
        let header = Int64(bytes.count)
        bytes.append(contentsOf: LogFormat.frame(type: .header, payload: [1, 2, 3], salt: salt, offset: header))
        try bytes.write(to: v5)
        // A layout record (type 4) in a version 5 file.
        let v5Layout = directory.url.appendingPathComponent("v5-layout.stowlog")
        try FileManager.default.copyItem(at: Tool.sample("trips-v5.stowlog"), to: v5Layout)
        var layoutBytes = try Data(contentsOf: v5Layout)
        let layout = Int64(layoutBytes.count)
        layoutBytes.append(
            contentsOf: LogFormat.frame(type: .layout, payload: [1, 0, 0, 0], salt: salt, offset: layout))
        try layoutBytes.write(to: v5Layout)

        for (url, offset, reason) in [
            (
                v1, checkpoint,
                "a checkpoint record (type 3) at offset \(checkpoint): format version 1 has no checkpoints"
            ),
            (
                v5Layout, layout,
                "a layout record (type 4) at offset \(layout): format version 5 has no layout records"
            ),
            (
                v5, header,
                "a second header record at offset \(header), where only commits and checkpoints may follow the header"
            ),
        ] {
            let tool = try ToolStore.read(path: url.path)
            #expect(tool.damage?.offset == offset)
            #expect(tool.damage?.message == reason)
            var configuration = LogStoreConfiguration(schema: LogSamples.schema, url: url)
            configuration.allowsSave = false
            let store = try LogStore(configuration, migrationPlan: nil)
            #expect(store.lastRecovery?.validLength == offset)
            #expect(store.lastRecovery?.reason == reason)
            store.close()
        }
    }
}
