import Foundation
import Stowage
import StowageTestSupport
import Testing

/// Where SQL's meaning of a query differs from Swift's and `PostgresStore` must say it
/// otherwise; each test here failed before its fix (found with a probe beside
/// `PostgresRandomQueryTests`, whose `Chore`s have no such values).
@Suite struct PostgresQuerySemanticsTests {
    /// `UInt64` and `Decimal` columns (`numeric`) sort by value. They are read as text
    /// under their own names, and a bare name in `ORDER BY` means the select list's
    /// column first, so they sorted as text: 10 before 9, `UInt64.max` before 42.
    @Test func unsignedAndDecimalColumnsSortByValue() throws {
        guard let cluster = try PostgresStoreTests.cluster() else { return }
        let context = ModelContext(try PostgresStoreTests.factory(cluster).container())
        let unsigned: [UInt64] = [9, 10, 0, .max, 1 << 63, 100, 2, 42]
        let decimals: [Decimal] = [9, 10, -2, Decimal(string: "0.5") ?? 0, 100, -10, 1, 42]
        for (i, (u, d)) in zip(unsigned, decimals).enumerated() {
            let sample = Sample()
            sample.int = i
            sample.uint64 = u
            sample.decimal = d
            context.insert(sample)
        }
        try context.save()
        for order in [SortOrder.forward, .reverse] {
            let increasing = order == .forward
            var byUnsigned = FetchDescriptor<Sample>(sortBy: [SortDescriptor(\.uint64, order: order)])
            #expect(try context.fetch(byUnsigned).map(\.uint64) == unsigned.sorted { increasing ? $0 < $1 : $0 > $1 })
            byUnsigned.fetchOffset = 2
            byUnsigned.fetchLimit = 3
            let unsignedWindow = Array(unsigned.sorted { increasing ? $0 < $1 : $0 > $1 }[2..<5])
            #expect(try context.fetch(byUnsigned).map(\.uint64) == unsignedWindow)
            let byDecimal = FetchDescriptor<Sample>(sortBy: [SortDescriptor(\.decimal, order: order)])
            #expect(try context.fetch(byDecimal).map(\.decimal) == decimals.sorted { increasing ? $0 < $1 : $0 > $1 })
        }
    }
}
