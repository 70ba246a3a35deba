import Foundation

/// A predicate turned into closures once per fetch, so that testing each record does not
/// walk the expression tree. Comparisons of a property of the record with a constant,
/// and the `&&`, `||` and `!` around them, run directly on the snapshot's values; any
/// other subexpression falls back to ``QueryEvaluator``.
struct CompiledPredicate {
    typealias Test = (DefaultSnapshot, inout QueryEvaluator) throws -> Bool

    let test: Test

    init(_ expression: QueryExpression, root: PredicateExpressions.VariableID?) {
        test = Self.compile(expression, root: root)
    }

    func matches(_ snapshot: DefaultSnapshot, _ evaluator: inout QueryEvaluator) throws -> Bool {
        try test(snapshot, &evaluator)
    }

    /// The positions of the record's own properties that `expression` reads, or `.all`
    /// when it reads the record in another way too: a property of a related model, or of
    /// a closure's variable, can lead back to the record under test, and the record as a
    /// value may be compared whole.
    static func columns(_ expression: QueryExpression, root: PredicateExpressions.VariableID?) -> SnapshotColumns {
        var mask: UInt64 = 0
        return gather(expression, root, &mask) ? SnapshotColumns(mask: mask) : .all
    }

    private static func gather(_ e: QueryExpression, _ root: PredicateExpressions.VariableID?, _ mask: inout UInt64)
        -> Bool
    {
        switch e {
        case .constant, .identifierIn:
            return true
        case .variable(let v):
            return v != root
        case .property(.variable(let v), _, let index, _) where v == root:
            guard index >= 0, index < 64 else { return false }
            mask |= 1 << UInt64(index)
            return true
        case .property:
            return false
        case .modelID(.variable(let v)) where v == root:
            return true
        case .modelID(let b), .member(let b, _, _), .apply(let b, _), .count(let b), .isEmpty(let b), .not(let b),
            .negate(let b), .forceUnwrap(let b), .cast(let b, _, _, _):
            return gather(b, root, &mask)
        case .compare(_, let l, let r), .and(let l, let r), .or(let l, let r), .arithmetic(_, let l, let r),
            .nilCoalesce(let l, let r), .optionalFlatMap(let l, _, let r), .closure(_, let l, _, let r):
            return gather(l, root, &mask) && gather(r, root, &mask)
        case .conditional(let a, let b, let c), .inRange(let a, let b, let c, _):
            return gather(a, root, &mask) && gather(b, root, &mask) && gather(c, root, &mask)
        case .function(_, let a, let b):
            return gather(a, root, &mask) && (b.map { gather($0, root, &mask) } ?? true)
        case .subscripted(let x, let i, let d):
            return gather(x, root, &mask) && gather(i, root, &mask) && (d.map { gather($0, root, &mask) } ?? true)
        }
    }

    static func rootProperty(_ expression: QueryExpression, _ root: PredicateExpressions.VariableID?) -> Int? {
        if case .property(.variable(let v), _, let index, _) = expression, v == root { return index }
        return nil
    }

    static func compile(_ expression: QueryExpression, root: PredicateExpressions.VariableID?) -> Test {
        switch expression {
        case .and(let l, let r):
            let a = compile(l, root: root)
            let b = compile(r, root: root)
            return { s, e in try a(s, &e) && b(s, &e) }
        case .or(let l, let r):
            let a = compile(l, root: root)
            let b = compile(r, root: root)
            return { s, e in try a(s, &e) || b(s, &e) }
        case .not(let inner):
            if let index = rootProperty(inner, root) {
                return { s, _ in
                    if case .bool(let v) = s.values[index] { return !v }
                    return false
                }
            }
        case .property:
            if let index = rootProperty(expression, root) {
                return { s, _ in
                    if case .bool(true) = s.values[index] { return true }
                    return false
                }
            }
        case .constant(.bool(let v)):
            return { _, _ in v }
        case .compare(let op, let l, let r):
            if let index = rootProperty(l, root), case .constant(let c) = r {
                return comparison(op, index, c)
            }
            if let index = rootProperty(r, root), case .constant(let c) = l {
                return comparison(op.flipped, index, c)
            }
        default:
            break
        }
        return { s, e in try e.matches(s, expression, root: root) }
    }

    /// `values[index] op c`, with the common numeric cases unboxed.
    static func comparison(_ op: QueryExpression.ComparisonOperator, _ index: Int, _ c: SnapshotValue) -> Test {
        switch c {
        case .double(let k) where !k.isNaN:
            return { s, _ in
                guard case .double(let v) = s.values[index], !v.isNaN else {
                    return QueryEvaluator.compare(op, s.values[index], c)
                }
                return Self.apply(op, v, k)
            }
        case .int(let k):
            return { s, _ in
                guard case .int(let v) = s.values[index] else { return QueryEvaluator.compare(op, s.values[index], c) }
                return Self.apply(op, v, k)
            }
        case .bool(let k) where op == .equal || op == .notEqual:
            return { s, _ in
                guard case .bool(let v) = s.values[index] else { return QueryEvaluator.compare(op, s.values[index], c) }
                return (v == k) == (op == .equal)
            }
        default:
            return { s, _ in QueryEvaluator.compare(op, s.values[index], c) }
        }
    }

    @inline(__always)
    static func apply<T: Comparable>(_ op: QueryExpression.ComparisonOperator, _ v: T, _ k: T) -> Bool {
        switch op {
        case .equal: v == k
        case .notEqual: v != k
        case .less: v < k
        case .lessOrEqual: v <= k
        case .greater: v > k
        case .greaterOrEqual: v >= k
        }
    }
}
