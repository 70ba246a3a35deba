import Foundation
@_spi(Testing) import Stowage
import StowageTestSupport
import Testing

/// Runs the store conformance suite against every store.
@Suite("Store conformance")
struct ConformanceTests {
    static let cases: [(StoreFactory, String)] = StoreFactory.all.flatMap { factory in
        StoreConformance.checks.map { (factory, $0.0) }
    }

    @Test(arguments: StoreFactory.all.map(\.name), StoreConformance.checks.map(\.0))
    func conformance(store: String, check: String) throws {
        let factory = try #require(StoreFactory.all.first { $0.name == store })
        let run = try #require(StoreConformance.checks.first { $0.0 == check }?.1)
        try run(factory)
    }
}
