import Foundation
import Stowage
import StowageTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Real processes against the JSON store (the `json-save` mode of LogCrashChild): SIGKILL
/// at random moments; every acknowledged batch is present, no batch is partial, and the
/// file always parses.
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
        var killedWhileSaving = 0
        var totalAcknowledged = 0
        for round in 0..<rounds {
            if round % 25 == 24 {
                try? FileManager.default.removeItem(at: url.deletingLastPathComponent())
                url = JSONTest.freshURL()
                acknowledged = []
            }
            let (lines, whileSaving) = try LogCrashTests.runAndKill(
                // A JSON save rewrites the whole document (about 20 ms in a debug build, its
                // index included), so the kill window is wider than the log store's.
                ["json-save", url.path], startUpMicroseconds: 40_000, savingMicroseconds: 60_000, random: &random)
            if whileSaving { killedWhileSaving += 1 }
            let failures = lines.filter { $0.hasPrefix("error") }
            #expect(failures.isEmpty, "seed \(seed), round \(round): \(failures)")
            let batches = lines.compactMap { Int($0) }
            totalAcknowledged += batches.count
            acknowledged.formUnion(batches)

            // The file parses (when it exists: a kill before the first rename leaves none).
            if FileManager.default.fileExists(atPath: url.path) {
                let store = try JSONTest.open(url, schema: Self.schema)
                let entity = Self.schema.entitiesByName["CrashBatch"]!
                var rows: [Int: Int] = [:]
                for snapshot in try store.allSnapshots(of: "CrashBatch") {
                    if case .int(let batch)? = snapshot.value(forKey: "batch", in: entity) {
                        rows[Int(batch), default: 0] += 1
                    }
                }
                store.close()
                let missing = acknowledged.filter { rows[$0] == nil }
                let partial = rows.filter { $0.value != CrashBatch.size(ofBatch: $0.key) }
                #expect(
                    missing.isEmpty, "seed \(seed), round \(round): acknowledged batches missing: \(missing.sorted())")
                #expect(partial.isEmpty, "seed \(seed), round \(round): partial batches: \(partial)")
                if !missing.isEmpty || !partial.isEmpty { return }
            } else {
                #expect(acknowledged.isEmpty, "seed \(seed), round \(round): no file, but saves were acknowledged")
            }
        }
        #expect(killedWhileSaving > rounds / 2)
        #expect(totalAcknowledged > rounds / 2, "seed \(seed): only \(totalAcknowledged) saves were acknowledged")
    }
}
