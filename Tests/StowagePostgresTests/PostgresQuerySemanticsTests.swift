import Foundation
import Stowage
import StowageTestSupport
import Testing

/// Two readings of a gauge, each of which may be NaN; `#Index` on `low`, so that
/// PostgreSQL may answer a comparison from the index.
@Model
final class Reading {
    var seq: Int
    var low: Double
    var high: Double
    var level: Float
    #Index<Reading>([\.low])

    init(seq: Int, low: Double, high: Double, level: Float) {
        self.seq = seq
        self.low = low
        self.high = high
        self.level = level
    }
}

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

    /// A `Decimal.nan` reads back: it is written as PostgreSQL's `NaN`, which
    /// `Decimal(string:)` does not parse, so the row could not be read at all
    /// (`.corruptStore`).
    @Test func aDecimalNaNReadsBack() throws {
        guard let cluster = try PostgresStoreTests.cluster() else { return }
        let container = try PostgresStoreTests.factory(cluster).container()
        let context = ModelContext(container)
        for (i, value) in [Decimal.nan, 1, Decimal(string: "-0.25") ?? 0].enumerated() {
            let sample = Sample()
            sample.int = i
            sample.decimal = value
            context.insert(sample)
        }
        try context.save()
        let read = try ModelContext(container).fetch(FetchDescriptor<Sample>(sortBy: [SortDescriptor(\.int)]))
        #expect(read.map(\.decimal.isNaN) == [true, false, false])
        #expect(read.dropFirst().map(\.decimal) == [1, Decimal(string: "-0.25") ?? 0])
    }

    /// NaN is neither less nor greater than anything in Swift, but PostgreSQL orders it
    /// above every number: `x > 1` took the NaN rows, `x < .nan` every other row, and
    /// `!(x > 1)` lost the NaN rows. Each answer and count equals Foundation's evaluation.
    @Test func nanPassesNoOrderedComparison() throws {
        guard let cluster = try PostgresStoreTests.cluster() else { return }
        let container = try PostgresStoreTests.container(try cluster.freshDatabase(), [Reading.self])
        let values: [Double] = [.nan, -1, 0, 1.5, .infinity, -.infinity, 2, .nan]
        var detached: [Reading] = []
        let context = ModelContext(container)
        for (i, low) in values.enumerated() {
            let high = values[(i + 3) % values.count]
            context.insert(Reading(seq: i, low: low, high: high, level: Float(low)))
            detached.append(Reading(seq: i, low: low, high: high, level: Float(low)))
        }
        try context.save()
        let nan = Double.nan
        let floatNaN = Float.nan
        let predicates: [(String, Predicate<Reading>)] = [
            ("low > 0", #Predicate { $0.low > 0 }),
            ("low >= -1", #Predicate { $0.low >= -1 }),
            ("low < 1", #Predicate { $0.low < 1 }),
            ("0 < low", #Predicate { 0 < $0.low }),
            ("low < nan", #Predicate { $0.low < nan }),
            ("low >= nan", #Predicate { $0.low >= nan }),
            ("!(low > 0)", #Predicate { !($0.low > 0) }),
            ("!(low <= nan)", #Predicate { !($0.low <= nan) }),
            ("low < high", #Predicate { $0.low < $0.high }),
            ("!(low >= high)", #Predicate { !($0.low >= $0.high) }),
            ("level > 0", #Predicate { $0.level > 0 }),
            ("level <= floatNaN", #Predicate { $0.level <= floatNaN }),
            ("(0...2).contains(low)", #Predicate { (0.0...2.0).contains($0.low) }),
        ]
        let reader = ModelContext(container)
        for (name, predicate) in predicates {
            let expected = try detached.filter { try predicate.evaluate($0) }.map(\.seq)
            let descriptor = FetchDescriptor(predicate: predicate, sortBy: [SortDescriptor(\.seq)])
            let plan = (try? reader.explain(descriptor)) ?? "?"
            #expect(try reader.fetch(descriptor).map(\.seq) == expected, "\(name); plan \(plan)")
            #expect(try reader.fetchCount(descriptor) == expected.count, "\(name); plan \(plan)")
        }
    }

    /// `Decimal` orders NaN below every number (and equal to itself), PostgreSQL's
    /// `numeric` above every number: `d > 1` took the NaN row and `d < 1` lost it, and a
    /// sort put it last. Answers and counts equal Foundation's evaluation, sorts Swift's.
    @Test func aDecimalNaNOrdersAsInSwift() throws {
        guard let cluster = try PostgresStoreTests.cluster() else { return }
        let container = try PostgresStoreTests.factory(cluster).container()
        let values: [Decimal] = [5, .nan, -2, Decimal(string: "0.5") ?? 0, 10, 9]
        let context = ModelContext(container)
        var detached: [Sample] = []
        for (i, value) in values.enumerated() {
            for sample in [Sample(), Sample()] {
                sample.int = i
                sample.decimal = value
                if detached.count == i { detached.append(sample) } else { context.insert(sample) }
            }
        }
        try context.save()
        let one = Decimal(1)
        let nan = Decimal.nan
        let predicates: [(String, Predicate<Sample>)] = [
            ("d > 1", #Predicate { $0.decimal > one }),
            ("d >= 1", #Predicate { $0.decimal >= one }),
            ("d < 1", #Predicate { $0.decimal < one }),
            ("d <= 1", #Predicate { $0.decimal <= one }),
            ("1 < d", #Predicate { one < $0.decimal }),
            ("!(d < 1)", #Predicate { !($0.decimal < one) }),
            ("d < nan", #Predicate { $0.decimal < nan }),
            ("d <= nan", #Predicate { $0.decimal <= nan }),
            ("d > nan", #Predicate { $0.decimal > nan }),
            ("d >= nan", #Predicate { $0.decimal >= nan }),
            ("!(d > nan)", #Predicate { !($0.decimal > nan) }),
        ]
        let reader = ModelContext(container)
        for (name, predicate) in predicates {
            let expected = try detached.filter { try predicate.evaluate($0) }.map(\.int)
            let descriptor = FetchDescriptor(predicate: predicate, sortBy: [SortDescriptor(\.int)])
            let plan = (try? reader.explain(descriptor)) ?? "?"
            #expect(try reader.fetch(descriptor).map(\.int) == expected, "\(name); plan \(plan)")
            #expect(try reader.fetchCount(descriptor) == expected.count, "\(name); plan \(plan)")
        }
        for order in [SortOrder.forward, .reverse] {
            let expected = detached.sorted { order == .forward ? $0.decimal < $1.decimal : $1.decimal < $0.decimal }
            var descriptor = FetchDescriptor<Sample>(sortBy: [SortDescriptor(\.decimal, order: order)])
            #expect(try reader.fetch(descriptor).map(\.int) == expected.map(\.int), "\(order)")
            descriptor.fetchOffset = 1
            descriptor.fetchLimit = 4
            #expect(try reader.fetch(descriptor).map(\.int) == expected[1..<5].map(\.int), "\(order), window")
        }
    }
}
