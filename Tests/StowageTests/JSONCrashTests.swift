import Foundation
import Stowage
import StowageTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Real processes against the JSON store (the `soak json` mode of LogCrashChild): SIGKILL
/// at random moments while two workers save at once; every acknowledged save is there
/// whole, no save is there in part or one that no worker began, and the file always parses.
@Suite("JSONStore crash safety", .serialized)
struct JSONCrashTests {
    static let schema = Schema([CrashBatch.self])

    /// Rounds of a child whose two `@ModelActor` workers save `SoakPlan` batches at once (sizes
    /// drawn from the seed; each save inserts a batch, touches the worker's previous one and
    /// deletes an older one), SIGKILLed at random moments: 100 rounds, 1000 with
    /// `STOWAGE_SOAK=1`. After each round the document parses, and holds for each worker
    /// exactly the state its saves up to some save leave, at or after the last acknowledged
    /// and not after the last begun. Over the run, more than half the kills land while a
    /// worker said it was saving, and the children acknowledge more than half a save a round.
    @Test func killNineNeverLosesAnAcknowledgedSaveAndTheFileAlwaysParses() throws {
        let soak = ProcessInfo.processInfo.environment["STOWAGE_SOAK"] == "1"
        let rounds = soak ? 1000 : 100
        var random = SeededRandom.fromEnvironment()
        let seed = random.seed
        let plan = SoakPlan(seed: seed, withBlobs: false)
        let start = Date()
        var url = JSONTest.freshURL()
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        var acknowledged = [Int](repeating: 0, count: plan.workers)
        var started = acknowledged
        var figures = LogCrashTests.SoakFigures()
        for round in 0..<rounds {
            if round % 25 == 24 {
                try? FileManager.default.removeItem(at: url.deletingLastPathComponent())
                url = JSONTest.freshURL()
                acknowledged = Array(repeating: 0, count: plan.workers)
                started = acknowledged
            }
            let context = "seed \(seed), round \(round)"
            let killed = try LogCrashTests.runAndKill(
                // A JSON save rewrites the whole document, so the kill window is wider than
                // the log store's.
                // An aimed kill waits for up to two acknowledged saves first, so that a slow
                // child (a sanitizer's build, a loaded machine) still acknowledges some.
                ["soak", "json", url.path, String(seed), String(round)], startUpMicroseconds: 40_000,
                savingMicroseconds: 60_000, acknowledgedBeforeKill: 0...2, random: &random, context: context)
            let failures = figures.count(killed, plan: plan, acknowledged: &acknowledged, started: &started)
            #expect(failures.isEmpty, "\(context): \(failures)")

            // The file parses (when it exists: a kill before the first rename leaves none).
            if FileManager.default.fileExists(atPath: url.path) {
                let store = try JSONTest.open(url, schema: Self.schema)
                let (lastSave, problems) = plan.check(try SoakPlan.rows(of: store))
                store.close()
                #expect(problems.isEmpty, "\(context): \(problems.prefix(5))")
                let lost = (0..<plan.workers).filter { lastSave[$0] < acknowledged[$0] }
                #expect(
                    lost.isEmpty,
                    "\(context): acknowledged saves lost: the store holds \(lastSave), acknowledged \(acknowledged)")
                let unbegun = (0..<plan.workers).filter { lastSave[$0] > started[$0] }
                #expect(unbegun.isEmpty, "\(context): the store holds saves \(lastSave), begun \(started)")
                if !problems.isEmpty || !lost.isEmpty || !unbegun.isEmpty { return }
            } else {
                #expect(acknowledged.allSatisfy { $0 == 0 }, "\(context): no file, but saves were acknowledged")
            }
        }
        figures.seconds = Date().timeIntervalSince(start)
        print("JSONCrashTests kill -9 soak, seed \(seed): \(figures)")
        #expect(figures.killedMidSave > rounds / 2, "seed \(seed): \(figures)")
        #expect(figures.acknowledged > rounds / 2, "seed \(seed): \(figures)")
    }
}
