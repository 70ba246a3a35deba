import Foundation
@_spi(Testing) import Stowage
import Testing

/// Seeded random data and thousands of random predicate, sort and window combinations:
/// every planned result must equal a brute-force evaluation in plain Swift. It runs
/// against every store, and the data changes between rounds so index maintenance is
/// exercised too. A failure prints the seed, the case and the plan. Every store's tests
/// call ``check(_:)``: `DifferentialQueryTests` for Stowage's stores, the PostgreSQL
/// tests for `PostgresStore`.
public enum DifferentialQueries {
    /// The plain-Swift copy of a chore that the brute force works on.
    struct Row {
        var seq: Int
        var title: String
        var priority: Int
        var isCompleted: Bool
        var dueDate: Date?
    }

    /// One predicate shape: the `#Predicate`, the same test in Swift, and its text.
    struct Case {
        let name: String
        let predicate: Predicate<Chore>?
        let test: (Row) -> Bool
    }

    /// A sort: its text, the descriptors, and the same order on rows.
    struct Sort {
        let name: String
        let descriptors: [SortDescriptor<Chore>]
        let areInIncreasingOrder: (Row, Row) -> Bool
    }

    /// The random constants one case draws.
    struct Constants {
        var p: Int
        var q: Int
        var lo: Int
        var hi: Int
        var b: Bool
        var t: String
        var prefix: String
        var d: Date
    }

    static let titles = ["alpha", "alps", "beta", "bet", "gamma", "", "al", "zeta", "Alpha", "éclair"]

    static func randomRow(_ seq: Int, _ rng: inout SeededRandom) -> Row {
        let noDate = Int.random(in: 0..<4, using: &rng) == 0
        let hours = Double(Int.random(in: 0..<50, using: &rng))
        return Row(
            seq: seq, title: titles[Int.random(in: 0..<titles.count, using: &rng)],
            priority: Int.random(in: -3...12, using: &rng), isCompleted: Bool.random(using: &rng),
            dueDate: noDate ? nil : Date(timeIntervalSinceReferenceDate: hours * 3600))
    }

    static func randomCase(_ rng: inout SeededRandom) -> Case {
        let p = Int.random(in: -4...13, using: &rng)
        let q = Int.random(in: -4...13, using: &rng)
        let t = titles[Int.random(in: 0..<titles.count, using: &rng)]
        let prefixLength = Int.random(in: 1...3, using: &rng)
        let hours = Double(Int.random(in: -1..<52, using: &rng))
        let c = Constants(
            p: p, q: q, lo: Swift.min(p, q), hi: Swift.max(p, q), b: Bool.random(using: &rng), t: t,
            prefix: String(t.prefix(prefixLength)), d: Date(timeIntervalSinceReferenceDate: hours * 3600))
        let builders: [(Constants) -> Case] = [
            case0, case1, case2, case3, case4, case5, case6, case7, case8, case9, case10, case11, case12, case13,
            case14, case15, case16, case17, case18, case19, case20, case21,
        ]
        return builders[Int.random(in: 0..<builders.count, using: &rng)](c)
    }

    static func case0(_ c: Constants) -> Case {
        let p = c.p
        let predicate: Predicate<Chore> = #Predicate { $0.priority == p }
        return Case(name: "priority == \(p)", predicate: predicate, test: { (r: Row) -> Bool in r.priority == p })
    }

    static func case1(_ c: Constants) -> Case {
        let p = c.p
        let predicate: Predicate<Chore> = #Predicate { $0.priority > p }
        return Case(name: "priority > \(p)", predicate: predicate, test: { (r: Row) -> Bool in r.priority > p })
    }

    static func case2(_ c: Constants) -> Case {
        let p = c.p
        let predicate: Predicate<Chore> = #Predicate { $0.priority < p }
        return Case(name: "priority < \(p)", predicate: predicate, test: { (r: Row) -> Bool in r.priority < p })
    }

    static func case3(_ c: Constants) -> Case {
        let p = c.p
        let predicate: Predicate<Chore> = #Predicate { $0.priority >= p }
        return Case(name: "priority >= \(p)", predicate: predicate, test: { (r: Row) -> Bool in r.priority >= p })
    }

    static func case4(_ c: Constants) -> Case {
        let p = c.p
        let predicate: Predicate<Chore> = #Predicate { $0.priority <= p }
        return Case(name: "priority <= \(p)", predicate: predicate, test: { (r: Row) -> Bool in r.priority <= p })
    }

    static func case5(_ c: Constants) -> Case {
        let b = c.b
        let p = c.p
        let predicate: Predicate<Chore> = #Predicate { $0.isCompleted == b && $0.priority > p }
        let test: (Row) -> Bool = { r in r.isCompleted == b && r.priority > p }
        return Case(name: "isCompleted == \(b) && priority > \(p)", predicate: predicate, test: test)
    }

    static func case6(_ c: Constants) -> Case {
        let b = c.b
        let lo = c.lo
        let hi = c.hi
        let predicate: Predicate<Chore> = #Predicate { $0.isCompleted == b && $0.priority >= lo && $0.priority < hi }
        let test: (Row) -> Bool = { r in r.isCompleted == b && r.priority >= lo && r.priority < hi }
        return Case(name: "isCompleted == \(b) && \(lo) <= priority < \(hi)", predicate: predicate, test: test)
    }

    static func case7(_ c: Constants) -> Case {
        let prefix = c.prefix
        let predicate: Predicate<Chore> = #Predicate { $0.title.starts(with: prefix) }
        let test: (Row) -> Bool = { r in r.title.starts(with: prefix) }
        return Case(name: "title starts with \(prefix)", predicate: predicate, test: test)
    }

    static func case8(_ c: Constants) -> Case {
        let p = c.p
        let q = c.q
        let predicate: Predicate<Chore> = #Predicate { $0.priority == p || $0.priority == q }
        let test: (Row) -> Bool = { r in r.priority == p || r.priority == q }
        return Case(name: "priority == \(p) || priority == \(q)", predicate: predicate, test: test)
    }

    static func case9(_ c: Constants) -> Case {
        let b = c.b
        let predicate: Predicate<Chore> = #Predicate { $0.isCompleted == b || $0.dueDate == nil }
        let test: (Row) -> Bool = { r in r.isCompleted == b || r.dueDate == nil }
        return Case(name: "isCompleted == \(b) || dueDate == nil", predicate: predicate, test: test)
    }

    static func case10(_ c: Constants) -> Case {
        let d = c.d
        let far = Date.distantPast
        let predicate: Predicate<Chore> = #Predicate { ($0.dueDate ?? far) > d }
        let test: (Row) -> Bool = { r in (r.dueDate ?? far) > d }
        return Case(name: "(dueDate ?? distantPast) > \(d)", predicate: predicate, test: test)
    }

    static func case11(_ c: Constants) -> Case {
        let lo = c.lo
        let hi = c.hi
        let predicate: Predicate<Chore> = #Predicate { (lo...hi).contains($0.priority) }
        let test: (Row) -> Bool = { r in (lo...hi).contains(r.priority) }
        return Case(name: "(\(lo)...\(hi)).contains(priority)", predicate: predicate, test: test)
    }

    static func case12(_ c: Constants) -> Case {
        let t = c.t
        let predicate: Predicate<Chore> = #Predicate { $0.title == t && $0.isCompleted }
        let test: (Row) -> Bool = { r in r.title == t && r.isCompleted }
        return Case(name: "title == \(t) && isCompleted", predicate: predicate, test: test)
    }

    static func case13(_ c: Constants) -> Case {
        let predicate: Predicate<Chore> = #Predicate { !$0.isCompleted }
        let test: (Row) -> Bool = { r in !r.isCompleted }
        return Case(name: "!isCompleted", predicate: predicate, test: test)
    }

    static func case14(_ c: Constants) -> Case {
        let test: (Row) -> Bool = { _ in true }
        return Case(name: "all", predicate: nil, test: test)
    }

    static func case15(_ c: Constants) -> Case {
        let t = c.t
        let predicate: Predicate<Chore> = #Predicate { $0.title == t }
        let test: (Row) -> Bool = { r in r.title == t }
        return Case(name: "title == \(t)", predicate: predicate, test: test)
    }

    static func case16(_ c: Constants) -> Case {
        let p = c.p
        let q = c.q
        let predicate: Predicate<Chore> = #Predicate { $0.priority > p && $0.priority != q }
        let test: (Row) -> Bool = { r in r.priority > p && r.priority != q }
        return Case(name: "priority > \(p) && priority != \(q)", predicate: predicate, test: test)
    }

    static func case17(_ c: Constants) -> Case {
        let p = c.p
        let predicate: Predicate<Chore> = #Predicate { $0.dueDate == nil && $0.priority < p }
        let test: (Row) -> Bool = { r in r.dueDate == nil && r.priority < p }
        return Case(name: "dueDate == nil && priority < \(p)", predicate: predicate, test: test)
    }

    // A list's `contains` of an indexed property: one index scan per distinct value
    // (duplicates in the list included), alone and beside other conditions.
    static func case18(_ c: Constants) -> Case {
        let list = [c.p, c.q, c.p, 99]
        let predicate: Predicate<Chore> = #Predicate { list.contains($0.priority) }
        let test: (Row) -> Bool = { r in list.contains(r.priority) }
        return Case(name: "\(list).contains(priority)", predicate: predicate, test: test)
    }

    static func case19(_ c: Constants) -> Case {
        let list = [c.t, "alps", "éclair"]
        let b = c.b
        let predicate: Predicate<Chore> = #Predicate { list.contains($0.title) && $0.isCompleted == b }
        let test: (Row) -> Bool = { r in list.contains(r.title) && r.isCompleted == b }
        return Case(name: "\(list).contains(title) && isCompleted == \(b)", predicate: predicate, test: test)
    }

    static func case20(_ c: Constants) -> Case {
        let list: [Date?] = [c.d, nil]
        let predicate: Predicate<Chore> = #Predicate { list.contains($0.dueDate) }
        let test: (Row) -> Bool = { r in list.contains(r.dueDate) }
        return Case(name: "[\(c.d), nil].contains(dueDate)", predicate: predicate, test: test)
    }

    static func case21(_ c: Constants) -> Case {
        let list: [Int] = []
        let p = c.p
        let predicate: Predicate<Chore> = #Predicate { list.contains($0.priority) || $0.priority == p }
        let test: (Row) -> Bool = { r in list.contains(r.priority) || r.priority == p }
        return Case(name: "[].contains(priority) || priority == \(p)", predicate: predicate, test: test)
    }

    /// `nil` first in ascending order and last in descending order, as SwiftData sorts.
    static func order<T: Comparable>(_ a: T?, _ b: T?, _ ascending: Bool) -> Bool? {
        if a == b { return nil }
        guard let a else { return ascending }
        guard let b else { return !ascending }
        return ascending ? a < b : b < a
    }

    static func randomSort(_ rng: inout SeededRandom) -> Sort? {
        let ascending = Bool.random(using: &rng)
        let o: SortOrder = ascending ? .forward : .reverse
        switch Int.random(in: 0..<6, using: &rng) {
        case 0:
            return nil
        case 1:
            let less: (Row, Row) -> Bool = { a, b in order(a.priority, b.priority, ascending) ?? (a.seq < b.seq) }
            return Sort(
                name: "priority", descriptors: [SortDescriptor(\.priority, order: o)], areInIncreasingOrder: less)
        case 2:
            let less: (Row, Row) -> Bool = { a, b in order(a.dueDate, b.dueDate, ascending) ?? (a.seq < b.seq) }
            return Sort(name: "dueDate", descriptors: [SortDescriptor(\.dueDate, order: o)], areInIncreasingOrder: less)
        case 3:
            let less: (Row, Row) -> Bool = { a, b in
                order(a.priority, b.priority, ascending) ?? order(a.title, b.title, ascending) ?? (a.seq < b.seq)
            }
            let descriptors = [SortDescriptor(\Chore.priority, order: o), SortDescriptor(\Chore.title, order: o)]
            return Sort(name: "priority, title", descriptors: descriptors, areInIncreasingOrder: less)
        case 4:
            let less: (Row, Row) -> Bool = { a, b in order(a.title, b.title, ascending) ?? (a.seq < b.seq) }
            return Sort(name: "title", descriptors: [SortDescriptor(\.title, order: o)], areInIncreasingOrder: less)
        default:
            let less: (Row, Row) -> Bool = { a, b in order(a.priority, b.priority, ascending) ?? (a.seq > b.seq) }
            let descriptors = [SortDescriptor(\Chore.priority, order: o), SortDescriptor(\Chore.seq, order: .reverse)]
            return Sort(name: "priority, seq desc", descriptors: descriptors, areInIncreasingOrder: less)
        }
    }

    /// Runs 2000 random fetches against a fresh container of `factory`'s store, checking
    /// each against the brute force.
    public static func check(_ factory: StoreFactory) throws {
        let container = try factory.container()
        let context = ModelContext(container)
        var rng = SeededRandom(seed: 0x5EED_0003)
        var rows: [Int: Row] = [:]
        var models: [Int: Chore] = [:]
        var nextSeq = 0
        var checked = 0
        for round in 0..<8 {
            for _ in 0..<(round == 0 ? 250 : 40) {
                let row = Self.randomRow(nextSeq, &rng)
                let chore = Chore(
                    seq: row.seq, title: row.title, priority: row.priority, isCompleted: row.isCompleted,
                    dueDate: row.dueDate)
                context.insert(chore)
                rows[row.seq] = row
                models[row.seq] = chore
                nextSeq += 1
            }
            for seq in rows.keys.sorted() where Int.random(in: 0..<10, using: &rng) == 0 {
                guard let model = models[seq] else { continue }
                if Bool.random(using: &rng) {
                    context.delete(model)
                    rows[seq] = nil
                    models[seq] = nil
                } else {
                    let fresh = Self.randomRow(seq, &rng)
                    model.priority = fresh.priority
                    model.isCompleted = fresh.isCompleted
                    model.dueDate = fresh.dueDate
                    model.title = fresh.title
                    rows[seq] = fresh
                }
            }
            try context.save()
            let ordered = rows.values.sorted { $0.seq < $1.seq }
            for _ in 0..<250 {
                let seed = rng.next()
                var local = SeededRandom(seed: seed)
                let predicateCase = Self.randomCase(&local)
                let sort = Self.randomSort(&local)
                let offset = Int.random(in: 0..<4, using: &local) == 0 ? Int.random(in: 0..<30, using: &local) : nil
                let limit = Int.random(in: 0..<3, using: &local) == 0 ? Int.random(in: 0..<40, using: &local) : nil
                var descriptor = FetchDescriptor<Chore>(
                    predicate: predicateCase.predicate, sortBy: sort?.descriptors ?? [])
                descriptor.fetchOffset = offset
                descriptor.fetchLimit = limit
                var expected = ordered.filter(predicateCase.test)
                if let sort { expected.sort(by: sort.areInIncreasingOrder) }
                expected = Array(expected.dropFirst(offset ?? 0).prefix(limit ?? Int.max))
                let plan = (try? context.explain(descriptor)) ?? "?"
                let label =
                    "seed \(seed): \(predicateCase.name); sort \(sort?.name ?? "none"); offset \(offset ?? 0); "
                    + "limit \(limit.map(String.init) ?? "none"); plan \(plan)"
                let got = try context.fetch(descriptor).map(\.seq)
                if sort != nil {
                    #expect(got == expected.map(\.seq), "\(label)")
                    let ids = try context.fetchIdentifiers(descriptor)
                    #expect(ids == (try context.fetch(descriptor).map(\.persistentModelID)), "identifiers \(label)")
                } else if offset == nil && limit == nil {
                    #expect(Set(got) == Set(expected.map(\.seq)), "\(label)")
                } else {
                    // Without a sort the window may come from any order: check its size and
                    // that every result matches.
                    #expect(got.count == expected.count, "\(label)")
                    #expect(got.allSatisfy { seq in rows[seq].map(predicateCase.test) == true }, "\(label)")
                }
                #expect(try context.fetchCount(descriptor) == expected.count, "count \(label)")
                checked += 1
            }
        }
        #expect(checked == 2000)
    }
}
