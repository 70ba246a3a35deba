import Foundation
import StowageTestSupport
import Testing

/// Random predicate trees (`RandomQueries`: comparisons, arithmetic, `??`, string prefixes
/// and substrings, membership, the ternary operator and the logical operators, nested),
/// with random sorts and windows, on the memory, log and JSON stores: every store's answer
/// and count must equal the plain-Swift evaluation. The `FuzzQueries` target runs the same
/// check on libFuzzer's inputs; this runs it on seeded random ones (`STOWAGE_SEED`).
@Suite struct RandomQueryTests {
    @Test func randomPredicateTreesAgreeWithTheEvaluationOnEveryStore() throws {
        var rng = SeededRandom.fromEnvironment()
        let harness = try RandomQueries.Harness()
        var failures = 0
        for _ in 0..<600 {
            let bytes = (0..<Int.random(in: 4...64, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let problems = harness.check(bytes)
            #expect(problems.isEmpty, "seed \(rng.seed), input \(bytes): \(problems.joined(separator: "\n"))")
            if !problems.isEmpty { failures += 1 }
            if failures > 5 { break }
        }
    }
}
