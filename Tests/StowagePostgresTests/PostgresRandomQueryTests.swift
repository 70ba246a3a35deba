import Foundation
import StowageTestSupport
import Testing

/// The random query differential (`RandomQueries`: predicate trees of comparisons,
/// arithmetic, `%`, `??`, string prefixes and substrings, membership, the ternary operator
/// and the logical operators, with random sorts and windows) on `PostgresStore`: its answer
/// and count must equal Foundation's own evaluation of the same `Predicate`, as the memory,
/// log and JSON stores' must in `RandomQueryTests`, with no allowance: the rows' and the
/// queries' dates are whole hours, so that PostgreSQL's microseconds (where it differs by
/// design) never show, and their strings are in canonical form. Seeded from
/// `STOWAGE_SEED`; without PostgreSQL's binaries it returns after one printed line.
@Suite struct PostgresRandomQueryTests {
    /// How many queries one run checks: each is a fetch and a count on the server (and a
    /// fetch again for a count whose predicate stays partly in memory). 600 take about
    /// 2 s here, 4 s with the cluster's start; runs of 40,000 on these rows and 5,000 on
    /// each of eight other sets found no disagreement.
    static let queries = 600

    @Test func randomPredicateTreesAgreeWithTheEvaluation() throws {
        guard let cluster = try PostgresStoreTests.cluster() else { return }
        var rng = SeededRandom.fromEnvironment()
        let harness = try RandomQueries.Harness(stores: [PostgresStoreTests.factory(cluster)])
        var failures = 0
        for _ in 0..<Self.queries {
            let bytes = (0..<Int.random(in: 4...64, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let problems = harness.check(bytes)
            #expect(problems.isEmpty, "seed \(rng.seed), input \(bytes): \(problems.joined(separator: "\n"))")
            if !problems.isEmpty { failures += 1 }
            if failures > 5 { break }
        }
    }
}
