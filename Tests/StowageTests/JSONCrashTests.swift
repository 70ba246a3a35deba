import Foundation
import Stowage
import StowageTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Real processes against the JSON store (the `json-save` mode of LogCrashChild): SIGKILL
/// at random moments; every acknowledged batch is present with the values the child saved,
/// no batch is partial or one no child began, and the file always parses. Over the run,
/// more than half the kills land while the child said it was saving.
@Suite("JSONStore crash safety", .serialized)
struct JSONCrashTests {
    static let schema = Schema([CrashBatch.self])

    @Test func killNineNeverLosesAnAcknowledgedSaveAndTheFileAlwaysParses() throws {
        let soak = ProcessInfo.processInfo.environment["STOWAGE_SOAK"] == "1"
        let rounds = soak ? 1000 : 100
        var random = SeededRandom.fromEnvironment()
        let seed = random.seed
        var url = JSONTest.freshURL()
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        var acknowledged: Set<Int> = []
        var started: Set<Int> = []
        var killedMidSave = 0
        var totalAcknowledged = 0
        for round in 0..<rounds {
            if round % 25 == 24 {
                try? FileManager.default.removeItem(at: url.deletingLastPathComponent())
                url = JSONTest.freshURL()
                acknowledged = []
                started = []
            }
            let killed = try LogCrashTests.runAndKill(
                // A JSON save rewrites the whole document (about 20 ms in a debug build, its
                // index included), so the kill window is wider than the log store's.
                ["json-save", url.path], startUpMicroseconds: 40_000, savingMicroseconds: 60_000, random: &random,
                context: "seed \(seed), round \(round)")
            if killed.killedMidSave { killedMidSave += 1 }
            let failures = killed.lines.filter { $0.hasPrefix("error") }
            #expect(failures.isEmpty, "seed \(seed), round \(round): \(failures)")
            totalAcknowledged += killed.acknowledged.count
            acknowledged.formUnion(killed.acknowledged)
            started.formUnion(killed.started)

            // The file parses (when it exists: a kill before the first rename leaves none).
            if FileManager.default.fileExists(atPath: url.path) {
                let store = try JSONTest.open(url, schema: Self.schema)
                let (rows, wrong) = try LogCrashTests.batches(in: store, withBlobs: false)
                store.close()
                let missing = acknowledged.filter { rows[$0] == nil }
                let partial = rows.filter { $0.value != CrashBatch.size(ofBatch: $0.key) }
                let neverSaved = Set(rows.keys).subtracting(started)
                #expect(
                    missing.isEmpty, "seed \(seed), round \(round): acknowledged batches missing: \(missing.sorted())")
                #expect(partial.isEmpty, "seed \(seed), round \(round): partial batches: \(partial)")
                #expect(wrong.isEmpty, "seed \(seed), round \(round): wrong values: \(wrong.prefix(5))")
                #expect(
                    neverSaved.isEmpty, "seed \(seed), round \(round): batches no child saved: \(neverSaved.sorted())")
                if !missing.isEmpty || !partial.isEmpty || !wrong.isEmpty || !neverSaved.isEmpty { return }
            } else {
                #expect(acknowledged.isEmpty, "seed \(seed), round \(round): no file, but saves were acknowledged")
            }
        }
        #expect(killedMidSave > rounds / 2, "seed \(seed): \(killedMidSave) of \(rounds) kills landed mid-save")
        #expect(totalAcknowledged > rounds / 2, "seed \(seed): only \(totalAcknowledged) saves were acknowledged")
    }
}
