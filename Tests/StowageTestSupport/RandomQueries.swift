import Foundation
@_spi(Testing) import Stowage

/// Random predicate trees, sorts and windows over chores, built from a stream of choices (a
/// fuzzer's input, or seeded random bytes in a test), each checked against a plain-Swift
/// evaluation on every store. Where ``DifferentialQueries`` draws its predicates from 22
/// fixed shapes, this composes them: comparisons, `??`, optional equality, arithmetic,
/// `%`, string prefixes and substrings, list and range membership, the ternary operator,
/// `&&`, `||` and `!`, nested up to four deep. The `FuzzQueries` target feeds it libFuzzer's
/// inputs; `RandomQueryTests` feeds it seeded random bytes.
package enum RandomQueries {
    /// Reads choices from bytes; past their end every choice is the first option, so a
    /// short input still makes a whole query.
    package struct Choices {
        let bytes: [UInt8]
        var position = 0

        package init(_ bytes: [UInt8]) { self.bytes = bytes }

        /// A number in `0..<count`.
        mutating func pick(_ count: Int) -> Int {
            guard position < bytes.count else { return 0 }
            defer { position += 1 }
            return Int(bytes[position]) % count
        }

        /// A number in `range`, from one byte.
        mutating func int(_ range: ClosedRange<Int>) -> Int { range.lowerBound + pick(range.count) }

        /// Eight bytes as one number (zero past the end).
        mutating func u64() -> UInt64 {
            var value: UInt64 = 0
            for _ in 0..<8 { value = value << 8 | UInt64(pick(256)) }
            return value
        }
    }

    /// A comparison operator.
    enum Op: CaseIterable {
        case equal, notEqual, less, lessOrEqual, greater, greaterOrEqual

        var text: String {
            switch self {
            case .equal: "=="
            case .notEqual: "!="
            case .less: "<"
            case .lessOrEqual: "<="
            case .greater: ">"
            case .greaterOrEqual: ">="
            }
        }
    }

    /// A predicate as a tree, from which the `Predicate` is built.
    indirect enum Tree: CustomStringConvertible {
        case priority(Op, Int)
        case seq(Op, Int)
        case prioritySum(Int, Op, Int)
        case priorityRemainder(Int, Int)
        case title(Op, String)
        case titleStarts(String)
        case titleContains(String)
        case completed
        case completedIs(Bool)
        case dueIsNil(Bool)
        case dueOr(Op, far: Date, Date)
        case dueEquals(Date?)
        case priorityIn([Int])
        case priorityBetween(Int, Int)
        case titleIn([String])
        case ternary(Tree, Tree, Tree)
        case and(Tree, Tree)
        case or(Tree, Tree)
        case not(Tree)

        var description: String {
            switch self {
            case .priority(let op, let c): "priority \(op.text) \(c)"
            case .seq(let op, let c): "seq \(op.text) \(c)"
            case .prioritySum(let k, let op, let c): "priority + \(k) \(op.text) \(c)"
            case .priorityRemainder(let m, let c): "priority % \(m) == \(c)"
            case .title(let op, let t): "title \(op.text) \(t.debugDescription)"
            case .titleStarts(let p): "title.starts(with: \(p.debugDescription))"
            case .titleContains(let s): "title.contains(\(s.debugDescription))"
            case .completed: "isCompleted"
            case .completedIs(let b): "isCompleted == \(b)"
            case .dueIsNil(let isNil): "dueDate \(isNil ? "==" : "!=") nil"
            case .dueOr(let op, let far, let d): "(dueDate ?? \(hours(far))) \(op.text) \(hours(d))"
            case .dueEquals(let d): "dueDate == \(d.map(hours) ?? "nil")"
            case .priorityIn(let list): "\(list).contains(priority)"
            case .priorityBetween(let lo, let hi): "(\(lo)...\(hi)).contains(priority)"
            case .titleIn(let list): "\(list).contains(title)"
            case .ternary(let c, let a, let b): "(\(c) ? \(a) : \(b))"
            case .and(let a, let b): "(\(a) && \(b))"
            case .or(let a, let b): "(\(a) || \(b))"
            case .not(let a): "!(\(a))"
            }
        }

        func hours(_ d: Date) -> String { "\(Int(d.timeIntervalSinceReferenceDate / 3600))h" }
    }

    static func date(_ choices: inout Choices) -> Date {
        Date(timeIntervalSinceReferenceDate: Double(choices.int(-1...51)) * 3600)
    }

    static func title(_ choices: inout Choices) -> String {
        let titles = DifferentialQueries.titles
        let t = titles[choices.pick(titles.count)]
        return choices.pick(4) == 0 ? String(t.prefix(choices.int(0...3))) : t
    }

    static func tree(_ choices: inout Choices, depth: Int = 0) -> Tree {
        let op = Op.allCases[choices.pick(Op.allCases.count)]
        let leaves = 15
        let kind = depth >= 4 ? choices.pick(leaves) : choices.pick(leaves + 4)
        switch kind {
        case 0: return .priority(op, choices.int(-4...13))
        case 1: return .seq(op, choices.int(0...400))
        case 2: return .prioritySum(choices.int(-3...3), op, choices.int(-4...13))
        case 3: return .priorityRemainder(choices.int(1...5), choices.int(-4...4))
        case 4: return .title(op, title(&choices))
        case 5: return .titleStarts(title(&choices))
        case 6: return .titleContains(title(&choices))
        case 7: return choices.pick(2) == 0 ? .completed : .completedIs(choices.pick(2) == 0)
        case 8: return .dueIsNil(choices.pick(2) == 0)
        case 9: return .dueOr(op, far: date(&choices), date(&choices))
        case 10: return .dueEquals(choices.pick(3) == 0 ? nil : date(&choices))
        case 11: return .priorityIn((0..<choices.int(0...4)).map { _ in choices.int(-4...13) })
        case 12:
            let a = choices.int(-4...13)
            let b = choices.int(-4...13)
            return .priorityBetween(Swift.min(a, b), Swift.max(a, b))
        case 13: return .titleIn((0..<choices.int(0...3)).map { _ in title(&choices) })
        case 14: return .not(tree(&choices, depth: depth + 1))
        case 15:
            return .ternary(
                tree(&choices, depth: depth + 1), tree(&choices, depth: depth + 1), tree(&choices, depth: depth + 1))
        case 16, 17: return .and(tree(&choices, depth: depth + 1), tree(&choices, depth: depth + 1))
        default: return .or(tree(&choices, depth: depth + 1), tree(&choices, depth: depth + 1))
        }
    }

    typealias Condition = any StandardPredicateExpression<Bool>
    typealias Root = PredicateExpressions.Variable<Chore>

    static func compare<L: StandardPredicateExpression, R: StandardPredicateExpression>(_ lhs: L, _ op: Op, _ rhs: R)
        -> Condition where L.Output == R.Output, L.Output: Comparable
    {
        switch op {
        case .equal: PredicateExpressions.build_Equal(lhs: lhs, rhs: rhs)
        case .notEqual: PredicateExpressions.build_NotEqual(lhs: lhs, rhs: rhs)
        case .less: PredicateExpressions.build_Comparison(lhs: lhs, rhs: rhs, op: .lessThan)
        case .lessOrEqual: PredicateExpressions.build_Comparison(lhs: lhs, rhs: rhs, op: .lessThanOrEqual)
        case .greater: PredicateExpressions.build_Comparison(lhs: lhs, rhs: rhs, op: .greaterThan)
        case .greaterOrEqual: PredicateExpressions.build_Comparison(lhs: lhs, rhs: rhs, op: .greaterThanOrEqual)
        }
    }

    static func and(_ a: some StandardPredicateExpression<Bool>, _ b: some StandardPredicateExpression<Bool>)
        -> Condition
    { PredicateExpressions.build_Conjunction(lhs: a, rhs: b) }

    static func or(_ a: some StandardPredicateExpression<Bool>, _ b: some StandardPredicateExpression<Bool>)
        -> Condition
    { PredicateExpressions.build_Disjunction(lhs: a, rhs: b) }

    static func not(_ a: some StandardPredicateExpression<Bool>) -> Condition {
        PredicateExpressions.build_Negation(a)
    }

    static func ternary(
        _ c: some StandardPredicateExpression<Bool>, _ a: some StandardPredicateExpression<Bool>,
        _ b: some StandardPredicateExpression<Bool>
    ) -> Condition { PredicateExpressions.build_Conditional(c, a, b) }

    static func expression(_ tree: Tree, _ v: Root) -> Condition {
        let priority = PredicateExpressions.build_KeyPath(root: v, keyPath: \Chore.priority)
        let title = PredicateExpressions.build_KeyPath(root: v, keyPath: \Chore.title)
        let due = PredicateExpressions.build_KeyPath(root: v, keyPath: \Chore.dueDate)
        switch tree {
        case .priority(let op, let c): return compare(priority, op, PredicateExpressions.build_Arg(c))
        case .seq(let op, let c):
            return compare(
                PredicateExpressions.build_KeyPath(root: v, keyPath: \Chore.seq), op, PredicateExpressions.build_Arg(c))
        case .prioritySum(let k, let op, let c):
            let sum = PredicateExpressions.build_Arithmetic(
                lhs: priority, rhs: PredicateExpressions.build_Arg(k), op: .add)
            return compare(sum, op, PredicateExpressions.build_Arg(c))
        case .priorityRemainder(let m, let c):
            let remainder = PredicateExpressions.build_Remainder(lhs: priority, rhs: PredicateExpressions.build_Arg(m))
            return compare(remainder, .equal, PredicateExpressions.build_Arg(c))
        case .title(let op, let t): return compare(title, op, PredicateExpressions.build_Arg(t))
        case .titleStarts(let p):
            return PredicateExpressions.build_starts(title, with: PredicateExpressions.build_Arg(p))
        case .titleContains(let s): return PredicateExpressions.build_contains(title, PredicateExpressions.build_Arg(s))
        case .completed: return PredicateExpressions.build_KeyPath(root: v, keyPath: \Chore.isCompleted)
        case .completedIs(let b):
            return PredicateExpressions.build_Equal(
                lhs: PredicateExpressions.build_KeyPath(root: v, keyPath: \Chore.isCompleted),
                rhs: PredicateExpressions.build_Arg(b))
        case .dueIsNil(let isNil):
            return isNil
                ? PredicateExpressions.build_Equal(lhs: due, rhs: PredicateExpressions.build_NilLiteral())
                : PredicateExpressions.build_NotEqual(lhs: due, rhs: PredicateExpressions.build_NilLiteral())
        case .dueOr(let op, let far, let d):
            let coalesced = PredicateExpressions.build_NilCoalesce(lhs: due, rhs: PredicateExpressions.build_Arg(far))
            return compare(coalesced, op, PredicateExpressions.build_Arg(d))
        case .dueEquals(let d):
            return PredicateExpressions.build_Equal(lhs: due, rhs: PredicateExpressions.build_Arg(d))
        case .priorityIn(let list):
            return PredicateExpressions.build_contains(PredicateExpressions.build_Arg(list), priority)
        case .priorityBetween(let lo, let hi):
            let range = PredicateExpressions.build_ClosedRange(
                lower: PredicateExpressions.build_Arg(lo), upper: PredicateExpressions.build_Arg(hi))
            return PredicateExpressions.build_contains(range, priority)
        case .titleIn(let list): return PredicateExpressions.build_contains(PredicateExpressions.build_Arg(list), title)
        case .ternary(let c, let a, let b): return ternary(expression(c, v), expression(a, v), expression(b, v))
        case .and(let a, let b): return and(expression(a, v), expression(b, v))
        case .or(let a, let b): return or(expression(a, v), expression(b, v))
        case .not(let a): return not(expression(a, v))
        }
    }

    /// The same rows in each of the given stores (by default the memory, log and JSON
    /// stores), written over several saves (inserts, then updates and deletes) so that their
    /// indexes have been maintained, not only built.
    package final class Harness {
        let contexts: [(name: String, context: ModelContext)]
        let rows: [DifferentialQueries.Row]
        /// A model of each row, in no context, for Foundation to evaluate predicates on.
        let detached: [Chore]

        /// The stores the harness runs on unless told otherwise: the memory, log and JSON
        /// stores (the `FuzzQueries` target and `RandomQueryTests` use these).
        package static let defaultStores: [StoreFactory] = [.memory, .log, .json]

        /// Writes the rows of `seed` into a fresh container of each of `stores`.
        package init(seed: UInt64 = 0x5EED_0004, stores: [StoreFactory] = Harness.defaultStores) throws {
            var named: [(String, ModelContext)] = []
            for factory in stores {
                named.append((factory.name, ModelContext(try factory.container())))
            }
            var rng = SeededRandom(seed: seed)
            var rows: [Int: DifferentialQueries.Row] = [:]
            var models: [[Int: Chore]] = Array(repeating: [:], count: named.count)
            var nextSeq = 0
            for round in 0..<4 {
                for _ in 0..<(round == 0 ? 200 : 40) {
                    let row = DifferentialQueries.randomRow(nextSeq, &rng)
                    rows[row.seq] = row
                    nextSeq += 1
                }
                for seq in rows.keys.sorted() where round > 0 && Int.random(in: 0..<8, using: &rng) == 0 {
                    rows[seq] = Bool.random(using: &rng) ? nil : DifferentialQueries.randomRow(seq, &rng)
                }
                for (i, (_, context)) in named.enumerated() {
                    for (seq, model) in models[i] where rows[seq] == nil {
                        context.delete(model)
                        models[i][seq] = nil
                    }
                    // In order of `seq`, so that the stores' primary keys (their order among
                    // equal sort keys) follow `seq`, as the evaluation's tie-break assumes.
                    for seq in rows.keys.sorted() {
                        guard let row = rows[seq] else { continue }
                        if let model = models[i][seq] {
                            model.title = row.title
                            model.priority = row.priority
                            model.isCompleted = row.isCompleted
                            model.dueDate = row.dueDate
                        } else {
                            let chore = Chore(
                                seq: seq, title: row.title, priority: row.priority, isCompleted: row.isCompleted,
                                dueDate: row.dueDate)
                            context.insert(chore)
                            models[i][seq] = chore
                        }
                    }
                    try context.save()
                }
            }
            contexts = named
            self.rows = rows.values.sorted { $0.seq < $1.seq }
            detached = self.rows.map {
                Chore(
                    seq: $0.seq, title: $0.title, priority: $0.priority, isCompleted: $0.isCompleted,
                    dueDate: $0.dueDate)
            }
        }

        /// Builds one query from `bytes` and runs it on every store; returns what differed
        /// from the plain-Swift answer (empty when every store agreed), each with the query.
        package func check(_ bytes: [UInt8]) -> [String] {
            var choices = Choices(bytes)
            let tree = choices.pick(8) == 0 ? nil : RandomQueries.tree(&choices)
            var rng = SeededRandom(seed: choices.u64())
            let sort = DifferentialQueries.randomSort(&rng)
            let offset = choices.pick(4) == 0 ? choices.int(0...40) : nil
            let limit = choices.pick(3) == 0 ? choices.int(0...50) : nil
            let predicate = tree.map { tree in Predicate<Chore>({ expression(tree, $0) }) }
            var descriptor = FetchDescriptor<Chore>(predicate: predicate, sortBy: sort?.descriptors ?? [])
            descriptor.fetchOffset = offset
            descriptor.fetchLimit = limit
            // The reference: Foundation's own evaluation of the same `Predicate` on models
            // in no context, which is what the predicate means in Swift.
            var matching: [DifferentialQueries.Row] = []
            for (row, model) in zip(rows, detached) {
                do {
                    if try predicate?.evaluate(model) ?? true { matching.append(row) }
                } catch {
                    return ["Foundation's evaluation threw \(error) — \(tree.map(String.init(describing:)) ?? "")"]
                }
            }
            if let sort { matching.sort(by: sort.areInIncreasingOrder) }
            let window = Array(matching.dropFirst(offset ?? 0).prefix(limit ?? Int.max))
            let label =
                "\(tree.map(String.init(describing:)) ?? "no predicate"); sort \(sort?.name ?? "none"); "
                + "offset \(offset.map(String.init) ?? "none"); limit \(limit.map(String.init) ?? "none")"
            var problems: [String] = []
            for (name, context) in contexts {
                let found = check(context, descriptor, sorted: sort != nil, matching: matching, window: window)
                guard !found.isEmpty else { continue }
                // Each store's problems with that store's own plan.
                let plan = (try? context.explain(descriptor)) ?? "?"
                problems += found.map { "\(name): \($0) — \(label); plan \(plan)" }
            }
            return problems
        }

        /// What one store's answer and count to `descriptor` got wrong: `window` is the
        /// expected answer, `matching` every row the predicate selects (in the sort's order).
        private func check(
            _ context: ModelContext, _ descriptor: FetchDescriptor<Chore>, sorted: Bool,
            matching: [DifferentialQueries.Row], window: [DifferentialQueries.Row]
        ) -> [String] {
            var problems: [String] = []
            do {
                let got = try context.fetch(descriptor).map(\.seq)
                if sorted {
                    if got != window.map(\.seq) { problems.append("\(got) for \(window.map(\.seq))") }
                } else if descriptor.fetchOffset == nil && descriptor.fetchLimit == nil {
                    if Set(got) != Set(window.map(\.seq)) || got.count != window.count {
                        problems.append("\(got.sorted()) for \(window.map(\.seq))")
                    }
                } else {
                    // Without a sort the window may come from any order.
                    let matchingSeqs = Set(matching.map(\.seq))
                    if got.count != window.count || !got.allSatisfy(matchingSeqs.contains) {
                        problems.append("\(got) is not a window of \(window.count) of \(matchingSeqs.sorted())")
                    }
                }
                let count = try context.fetchCount(descriptor)
                if count != window.count { problems.append("count \(count), not \(window.count)") }
            } catch {
                problems.append("\(error)")
            }
            return problems
        }
    }
}
