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
        let seed =
            ProcessInfo.processInfo.environment["STOWAGE_SEED"].flatMap { UInt64($0) }
            ?? UInt64.random(in: 0...UInt64.max)
        var random = SeededRandom(seed: seed)
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
            let process = Process()
            process.executableURL = LogCrashTests.child
            process.arguments = ["json-save", url.path]
            let pipe = Pipe()
            process.standardOutput = pipe
            try process.run()
            var output = Data()
            if Int.random(in: 0..<5, using: &random) == 0 {
                usleep(UInt32.random(in: 0...40_000, using: &random))
            } else {
                while !String(decoding: output, as: UTF8.self).contains("ready\n") {
                    let chunk = pipe.fileHandleForReading.availableData
                    if chunk.isEmpty { break }
                    output.append(chunk)
                }
                usleep(UInt32.random(in: 0...20_000, using: &random))
                killedWhileSaving += 1
            }
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            output.append(pipe.fileHandleForReading.readDataToEndOfFile())
            let lines = String(decoding: output, as: UTF8.self).split(separator: "\n")
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
                for snapshot in store.allSnapshots(of: "CrashBatch") {
                    if case .int(let batch)? = snapshot.value(forKey: "batch", in: entity) {
                        rows[Int(batch), default: 0] += 1
                    }
                }
                store.close()
                let missing = acknowledged.filter { rows[$0] == nil }
                let partial = rows.filter { $0.value != LogCrashTests.batchSize($0.key) }
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
