import Foundation

/// Stowage's own form of a compiled `#Predicate`: a small tree over property positions
/// and constant values, evaluated directly on snapshots.
///
/// The predicate compiler builds it once per fetch descriptor; every store evaluates
/// it, and the planner reads it to choose indexes.
public enum QueryExpression: Sendable, CustomStringConvertible {
    /// Comparison operators.
    public enum ComparisonOperator: String, Sendable {
        /// `==`.
        case equal = "=="
        /// `!=`.
        case notEqual = "!="
        /// `<`.
        case less = "<"
        /// `<=`.
        case lessOrEqual = "<="
        /// `>`.
        case greater = ">"
        /// `>=`.
        case greaterOrEqual = ">="

        /// The operator with its operands swapped: `a < b` is `b > a`.
        package var flipped: ComparisonOperator {
            switch self {
            case .less: .greater
            case .lessOrEqual: .greaterOrEqual
            case .greater: .less
            case .greaterOrEqual: .lessOrEqual
            default: self
            }
        }
    }
    /// Arithmetic operators.
    public enum ArithmeticOperator: String, Sendable {
        /// `+`.
        case add = "+"
        /// `-`.
        case subtract = "-"
        /// `*`.
        case multiply = "*"
        /// `/` on floating-point values.
        case divide = "/"
        /// `/` on integers, which rounds toward zero.
        case integerDivide = "÷"
        /// `%`.
        case remainder = "%"
    }
    /// Functions over strings and sequences.
    public enum Function: String, Sendable {
        /// `String.contains(_:)`: whether the string holds the other as a substring.
        case contains
        /// `starts(with:)`: whether the string or sequence begins with the other.
        case startsWith
        /// `localizedStandardContains(_:)`: a substring test that ignores case and diacritics.
        case localizedStandardContains
        /// `caseInsensitiveCompare(_:)`: the order of two strings, ignoring case.
        case caseInsensitiveCompare
        /// `Sequence.contains(_:)`: whether the sequence holds an element.
        case sequenceContains
        /// `min()`: a sequence's least element.
        case min
        /// `max()`: a sequence's greatest element.
        case max
    }
    /// Functions that take a bound closure variable.
    public enum ClosureFunction: String, Sendable {
        /// `contains(where:)`: whether any element satisfies the closure.
        case containsWhere = "contains(where:)"
        /// `allSatisfy(_:)`: whether every element satisfies the closure.
        case allSatisfy
        /// `filter(_:)`: the elements that satisfy the closure.
        case filter
    }

    /// A constant captured by the predicate.
    case constant(SnapshotValue)
    /// A variable: the model being tested, or a closure's argument.
    case variable(PredicateExpressions.VariableID)
    /// A stored property of the model that `base` evaluates to.
    indirect case property(QueryExpression, entity: String, index: Int, name: String)
    /// The identifier of the model that `base` evaluates to.
    indirect case modelID(QueryExpression)
    /// A field of a composite (Codable struct) value. `fallback` applies the original key
    /// path to the decoded value when the field's coding key differs from its name.
    indirect case member(QueryExpression, name: String, fallback: KeyPathApplier?)
    /// A key path that is not a stored property, applied to a decoded value.
    indirect case apply(QueryExpression, KeyPathApplier)
    /// The number of elements (or characters) of a value.
    indirect case count(QueryExpression)
    /// Whether a value has no elements.
    indirect case isEmpty(QueryExpression)
    /// A comparison of two values.
    indirect case compare(ComparisonOperator, QueryExpression, QueryExpression)
    /// Both conditions hold (`&&`).
    indirect case and(QueryExpression, QueryExpression)
    /// Either condition holds (`||`).
    indirect case or(QueryExpression, QueryExpression)
    /// The condition does not hold (`!`).
    indirect case not(QueryExpression)
    /// Arithmetic on two numbers.
    indirect case arithmetic(ArithmeticOperator, QueryExpression, QueryExpression)
    /// A number's negation (unary `-`).
    indirect case negate(QueryExpression)
    /// The second value if the first is true, else the third (`? :`).
    indirect case conditional(QueryExpression, QueryExpression, QueryExpression)
    /// The first value, or the second when the first is `nil` (`??`).
    indirect case nilCoalesce(QueryExpression, QueryExpression)
    /// Evaluates `transform` with `variable` bound to `wrapped`, or gives `null` if it is `null`.
    indirect case optionalFlatMap(QueryExpression, PredicateExpressions.VariableID, QueryExpression)
    /// A value that must not be `nil` (`!`).
    indirect case forceUnwrap(QueryExpression)
    /// A function applied to a value, with an argument for those that take one.
    indirect case function(Function, QueryExpression, QueryExpression?)
    /// A function that binds each element of a sequence to a variable and evaluates a
    /// closure's body with it.
    indirect case closure(ClosureFunction, QueryExpression, PredicateExpressions.VariableID, QueryExpression)
    /// Whether `value` lies in `lower...upper` (closed) or `lower..<upper`.
    indirect case inRange(QueryExpression, lower: QueryExpression, upper: QueryExpression, closed: Bool)
    /// Whether a value can be cast to a type; `cast` converts it.
    indirect case cast(QueryExpression, typeName: String, conditional: Bool, check: @Sendable (SnapshotValue) -> Bool)
    /// The element at an index or key.
    indirect case subscripted(QueryExpression, QueryExpression, defaultValue: QueryExpression?)
    /// A set of identifiers the model's identifier must be in.
    case identifierIn(Set<PersistentIdentifier>)

    /// The expression as text, as ``ModelContext/explain(_:)`` and error messages show it.
    public var description: String {
        switch self {
        case .constant(let v): return v.description
        case .variable(let id): return "$\(id.hashValue & 0xff)"
        case .property(let base, _, _, let name):
            if case .variable = base { return name }
            return "\(base).\(name)"
        case .modelID(let base): return "\(base).persistentModelID"
        case .member(let base, let name, _): return "\(base).\(name)"
        case .apply(let base, let applier): return "\(base).\(applier.name)"
        case .count(let base): return "\(base).count"
        case .isEmpty(let base): return "\(base).isEmpty"
        case .compare(let op, let l, let r): return "\(l) \(op.rawValue) \(r)"
        case .and(let l, let r): return "(\(l) AND \(r))"
        case .or(let l, let r): return "(\(l) OR \(r))"
        case .not(let x): return "NOT \(x)"
        case .arithmetic(let op, let l, let r): return "(\(l) \(op.rawValue) \(r))"
        case .negate(let x): return "-\(x)"
        case .conditional(let t, let a, let b): return "(\(t) ? \(a) : \(b))"
        case .nilCoalesce(let l, let r): return "(\(l) ?? \(r))"
        case .optionalFlatMap(let w, _, let t): return "\(w)?.{\(t)}"
        case .forceUnwrap(let x): return "\(x)!"
        case .function(let f, let a, let b): return "\(a).\(f.rawValue)(\(b.map(\.description) ?? ""))"
        case .closure(let f, let s, _, let t): return "\(s).\(f.rawValue) { \(t) }"
        case .inRange(let v, let lo, let hi, let closed): return "\(v) IN \(lo)\(closed ? "..." : "..<")\(hi)"
        case .cast(let x, let name, let conditional, _): return "(\(x) as\(conditional ? "?" : "!") \(name))"
        case .subscripted(let x, let i, _): return "\(x)[\(i)]"
        case .identifierIn(let ids): return "persistentModelID IN (\(ids.count) identifiers)"
        }
    }
}

/// Applies a key path that is not a stored property to a decoded value, for predicates
/// over computed members of composite values (such as `place.isValid`).
public struct KeyPathApplier: @unchecked Sendable {
    // @unchecked Sendable: holds an immutable key path and a closure over metatypes.
    let name: String
    let apply: (SnapshotValue) throws -> SnapshotValue
}
