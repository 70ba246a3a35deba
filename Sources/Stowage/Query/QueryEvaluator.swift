import Foundation

/// Evaluates a ``QueryExpression`` against snapshots.
///
/// Model-valued expressions evaluate to `.identifier`; a property of one is read from
/// the snapshot the `resolve` closure returns, so predicates can follow to-one
/// relationships and look into to-many ones.
public struct QueryEvaluator {
    /// Finds the snapshot of a related model, or `nil` if it no longer exists.
    public var resolve: (PersistentIdentifier) throws -> DefaultSnapshot?
    var bindings: [PredicateExpressions.VariableID: SnapshotValue] = [:]
    var current: DefaultSnapshot?

    /// An evaluator that reads related models through `resolve`.
    public init(resolve: @escaping (PersistentIdentifier) throws -> DefaultSnapshot?) {
        self.resolve = resolve
    }

    /// Whether `snapshot` satisfies `expression`, with `root` bound to it.
    /// - Throws: ``SwiftDataError`` `.unsupportedPredicate` when the expression cannot be
    ///   evaluated on the data (a forced unwrap of `nil`, a division by zero).
    public mutating func matches(
        _ snapshot: DefaultSnapshot, _ expression: QueryExpression, root: PredicateExpressions.VariableID?
    ) throws -> Bool {
        current = snapshot
        if let root { bindings[root] = .identifier(snapshot.persistentIdentifier) }
        let result = try evaluate(expression)
        if case .bool(let b) = result { return b }
        return false
    }

    func snapshot(for value: SnapshotValue) throws -> DefaultSnapshot? {
        guard case .identifier(let id) = value else { return nil }
        if let current, current.persistentIdentifier == id { return current }
        return try resolve(id)
    }

    func failure(_ message: String) -> SwiftDataError { SwiftDataError(.unsupportedPredicate, message) }

    mutating func evaluate(_ expression: QueryExpression) throws -> SnapshotValue {
        switch expression {
        case .constant(let v):
            return v
        case .variable(let id):
            return bindings[id] ?? .null
        case .property(let base, _, let index, _):
            let b = try evaluate(base)
            guard let snapshot = try snapshot(for: b), index < snapshot.values.count else { return .null }
            return snapshot.values[index]
        case .modelID(let base):
            return try evaluate(base)
        case .member(let base, let name, let fallback):
            let b = try evaluate(base)
            if case .object(let fields) = b, let v = fields[name] { return v }
            if b.isNull { return .null }
            if let fallback { return try fallback.apply(b) }
            return .null
        case .apply(let base, let applier):
            let b = try evaluate(base)
            if b.isNull { return .null }
            return try applier.apply(b)
        case .count(let base):
            switch try evaluate(base) {
            case .array(let a): return .int(Int64(a.count))
            case .string(let s): return .int(Int64(s.count))
            case .object(let o): return .int(Int64(o.count))
            case .data(let d): return .int(Int64(d.count))
            case .null: return .null
            default: return .int(1)
            }
        case .isEmpty(let base):
            switch try evaluate(base) {
            case .array(let a): return .bool(a.isEmpty)
            case .string(let s): return .bool(s.isEmpty)
            case .object(let o): return .bool(o.isEmpty)
            case .data(let d): return .bool(d.isEmpty)
            case .null: return .null
            default: return .bool(false)
            }
        case .compare(let op, let l, let r):
            return .bool(Self.compare(op, try evaluate(l), try evaluate(r)))
        case .and(let l, let r):
            guard case .bool(true) = try evaluate(l) else { return .bool(false) }
            if case .bool(true) = try evaluate(r) { return .bool(true) }
            return .bool(false)
        case .or(let l, let r):
            if case .bool(true) = try evaluate(l) { return .bool(true) }
            if case .bool(true) = try evaluate(r) { return .bool(true) }
            return .bool(false)
        case .not(let x):
            if case .bool(let b) = try evaluate(x) { return .bool(!b) }
            return .null
        case .arithmetic(let op, let l, let r):
            return try arithmetic(op, try evaluate(l), try evaluate(r))
        case .negate(let x):
            switch try evaluate(x) {
            case .int(let v): return .int(0 &- v)
            case .double(let v): return .double(-v)
            case .decimal(let v): return .decimal(-v)
            case .uint(let v): return .int(0 &- Int64(truncatingIfNeeded: v))
            default: return .null
            }
        case .conditional(let t, let a, let b):
            if case .bool(true) = try evaluate(t) { return try evaluate(a) }
            return try evaluate(b)
        case .nilCoalesce(let l, let r):
            let v = try evaluate(l)
            return v.isNull ? try evaluate(r) : v
        case .optionalFlatMap(let wrapped, let variable, let transform):
            let v = try evaluate(wrapped)
            if v.isNull { return .null }
            if case .identifier = v, try snapshot(for: v) == nil { return .null }
            let saved = bindings[variable]
            bindings[variable] = v
            defer { bindings[variable] = saved }
            return try evaluate(transform)
        case .forceUnwrap(let x):
            let v = try evaluate(x)
            if v.isNull { throw failure("a forced unwrap in the predicate found nil: \(x)") }
            return v
        case .function(let f, let a, let b):
            return try function(f, try evaluate(a), try b.map { try evaluate($0) })
        case .closure(let f, let sequence, let variable, let body):
            let elements: [SnapshotValue]
            switch try evaluate(sequence) {
            case .array(let a): elements = a
            case .null: elements = []
            case let other: elements = [other]
            }
            let saved = bindings[variable]
            defer { bindings[variable] = saved }
            switch f {
            case .containsWhere:
                for e in elements {
                    bindings[variable] = e
                    if case .bool(true) = try evaluate(body) { return .bool(true) }
                }
                return .bool(false)
            case .allSatisfy:
                for e in elements {
                    bindings[variable] = e
                    guard case .bool(true) = try evaluate(body) else { return .bool(false) }
                }
                return .bool(true)
            case .filter:
                var kept: [SnapshotValue] = []
                for e in elements {
                    bindings[variable] = e
                    if case .bool(true) = try evaluate(body) { kept.append(e) }
                }
                return .array(kept)
            }
        case .inRange(let v, let lower, let upper, let closed):
            let x = try evaluate(v)
            let lo = try evaluate(lower)
            let hi = try evaluate(upper)
            if x.isNull { return .bool(false) }
            let aboveLower = SnapshotValue.compare(x, lo) != .orderedAscending
            let c = SnapshotValue.compare(x, hi)
            return .bool(aboveLower && (closed ? c != .orderedDescending : c == .orderedAscending))
        case .cast(let x, let typeName, let conditional, let check):
            let v = try evaluate(x)
            if check(v) { return v }
            if conditional { return .null }
            throw failure("a forced cast to \(typeName) in the predicate failed on \(v.kindName)")
        case .subscripted(let x, let key, let defaultValue):
            let container = try evaluate(x)
            let k = try evaluate(key)
            var found: SnapshotValue?
            switch (container, k) {
            case (.array(let a), .int(let i)): found = (i >= 0 && i < a.count) ? a[Int(i)] : nil
            case (.object(let o), .string(let s)): found = o[s]
            default: found = nil
            }
            if let found { return found }
            if let defaultValue { return try evaluate(defaultValue) }
            return .null
        case .identifierIn(let ids):
            guard let current else { return .bool(false) }
            return .bool(ids.contains(current.persistentIdentifier))
        }
    }

    static func compare(_ op: QueryExpression.ComparisonOperator, _ l: SnapshotValue, _ r: SnapshotValue) -> Bool {
        switch op {
        case .equal: return l.matches(r)
        case .notEqual: return !l.matches(r)
        default:
            if l.isNull || r.isNull { return false }
            if case .double(let a) = l, a.isNaN { return false }
            if case .double(let b) = r, b.isNaN { return false }
            let c = SnapshotValue.compare(l, r)
            switch op {
            case .less: return c == .orderedAscending
            case .lessOrEqual: return c != .orderedDescending
            case .greater: return c == .orderedDescending
            case .greaterOrEqual: return c != .orderedAscending
            default: return false
            }
        }
    }

    func arithmetic(_ op: QueryExpression.ArithmeticOperator, _ l: SnapshotValue, _ r: SnapshotValue) throws
        -> SnapshotValue
    {
        switch (l, r) {
        case (.int(let a), .int(let b)):
            switch op {
            case .add: return .int(a &+ b)
            case .subtract: return .int(a &- b)
            case .multiply: return .int(a &* b)
            case .divide, .integerDivide:
                guard b != 0 else { throw failure("division by zero in the predicate") }
                return .int(a / b)
            case .remainder:
                guard b != 0 else { throw failure("remainder by zero in the predicate") }
                return .int(a % b)
            }
        case (.decimal(let a), .decimal(let b)):
            switch op {
            case .add: return .decimal(a + b)
            case .subtract: return .decimal(a - b)
            case .multiply: return .decimal(a * b)
            default:
                guard b != 0 else { throw failure("division by zero in the predicate") }
                return .decimal(a / b)
            }
        default:
            guard let a = l.numericDouble, let b = r.numericDouble else { return .null }
            switch op {
            case .add: return .double(a + b)
            case .subtract: return .double(a - b)
            case .multiply: return .double(a * b)
            case .divide: return .double(a / b)
            case .integerDivide, .remainder:
                guard let x = Int64(exactly: a.rounded(.towardZero)), let y = Int64(exactly: b.rounded(.towardZero)),
                    y != 0
                else { throw failure("integer division by zero in the predicate") }
                return op == .remainder ? .int(x % y) : .int(x / y)
            }
        }
    }

    func function(_ f: QueryExpression.Function, _ a: SnapshotValue, _ b: SnapshotValue?) throws -> SnapshotValue {
        switch f {
        case .contains:
            switch (a, b) {
            // The standard library's search, not Foundation's `contains`, which on Linux
            // stops at a NUL ("a" would contain "a\u{0}"); `Predicate`'s own evaluation does not.
            case (.string(let s), .string(let t)?): return .bool(t.isEmpty || s.firstRange(of: t) != nil)
            case (.array(let items), let x?):
                if case .array(let sub) = x {
                    guard !sub.isEmpty else { return .bool(true) }
                    if sub.count > items.count { return .bool(false) }
                    for start in 0...(items.count - sub.count)
                    where zip(items[start...], sub).allSatisfy({ $0.matches($1) }) {
                        return .bool(true)
                    }
                    return .bool(false)
                }
                return .bool(items.contains { $0.matches(x) })
            default: return .bool(false)
            }
        case .startsWith:
            switch (a, b) {
            case (.string(let s), .string(let t)?): return .bool(s.starts(with: t))
            case (.array(let items), .array(let prefix)?):
                return .bool(items.starts(with: prefix, by: { $0.matches($1) }))
            default: return .bool(false)
            }
        case .localizedStandardContains:
            guard case .string(let s) = a, case .string(let t)? = b else { return .bool(false) }
            return .bool(StringSearch.localizedStandardContains(s, t))
        case .caseInsensitiveCompare:
            guard case .string(let s) = a, case .string(let t)? = b else { return .null }
            return .int(Int64(StringSearch.caseInsensitiveCompare(s, t).rawValue))
        case .sequenceContains:
            switch a {
            case .array(let items): return .bool(items.contains { $0.matches(b ?? .null) })
            case .string(let s):
                if case .string(let t)? = b { return .bool(s.firstRange(of: t) != nil) }
                return .bool(false)
            default: return .bool(false)
            }
        case .min, .max:
            guard case .array(let items) = a, !items.isEmpty else { return .null }
            let sorted = items.sorted { SnapshotValue.compare($0, $1) == .orderedAscending }
            return (f == .min ? sorted.first : sorted.last) ?? .null
        }
    }
}

/// String matching that Foundation on Linux lacks.
enum StringSearch {
    /// Case- and diacritic-insensitive containment, as `localizedStandardContains` does
    /// on Apple platforms. An empty search string matches nothing, as there.
    static func localizedStandardContains(_ s: String, _ t: String) -> Bool {
        guard !t.isEmpty else { return false }
        let options: String.CompareOptions = [.caseInsensitive, .diacriticInsensitive, .widthInsensitive]
        return s.range(of: t, options: options) != nil
    }

    /// Case-insensitive comparison, as `caseInsensitiveCompare(_:)` does.
    static func caseInsensitiveCompare(_ s: String, _ t: String) -> ComparisonResult {
        s.compare(t, options: [.caseInsensitive])
    }
}
