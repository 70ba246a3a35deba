import Foundation
@_spi(Testing) import Stowage
import StowageTestSupport
import Testing

/// The differential query check (`StowageTestSupport/DifferentialQueries.swift`) on every
/// store: random predicates, sorts and windows against a brute force in plain Swift.
@Suite("Differential queries")
struct DifferentialQueryTests {
    @Test(arguments: StoreFactory.all.map(\.name))
    func plannedResultsEqualBruteForce(store: String) throws {
        let factory = try #require(StoreFactory.all.first { $0.name == store })
        try DifferentialQueries.check(factory)
    }
}
