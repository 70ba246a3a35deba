import Foundation

// Equality, ordering and ranges.

extension PredicateExpressions.Equal: QueryCompilable {
    func compile(into compiler: inout PredicateCompiler) throws -> (QueryExpression, PredicateCompiler.Kind) {
        (.compare(.equal, try compiler.compile(lhs).0, try compiler.compile(rhs).0), .value)
    }
}

extension PredicateExpressions.NotEqual: QueryCompilable {
    func compile(into compiler: inout PredicateCompiler) throws -> (QueryExpression, PredicateCompiler.Kind) {
        (.compare(.notEqual, try compiler.compile(lhs).0, try compiler.compile(rhs).0), .value)
    }
}

extension PredicateExpressions.Comparison: QueryCompilable {
    func compile(into compiler: inout PredicateCompiler) throws -> (QueryExpression, PredicateCompiler.Kind) {
        let operation: QueryExpression.ComparisonOperator =
            switch op {
            case .lessThan: .less
            case .lessThanOrEqual: .lessOrEqual
            case .greaterThan: .greater
            case .greaterThanOrEqual: .greaterOrEqual
            @unknown default: throw PredicateCompiler.unsupported("comparison operator \(op)")
            }
        return (.compare(operation, try compiler.compile(lhs).0, try compiler.compile(rhs).0), .value)
    }
}

extension PredicateExpressions.RangeExpressionContains: QueryCompilable {
    func compile(into compiler: inout PredicateCompiler) throws -> (QueryExpression, PredicateCompiler.Kind) {
        let value = try compiler.compile(element).0
        if let closed = range as? any _RangeBounds {
            let (lower, upper) = try closed.bounds(&compiler)
            return (.inRange(value, lower: lower, upper: upper, closed: closed.isClosed), .value)
        }
        if let constant = range as? any _ConstantRange {
            let (lower, upper, isClosed) = try constant.constantBounds()
            return (.inRange(value, lower: .constant(lower), upper: .constant(upper), closed: isClosed), .value)
        }
        throw PredicateCompiler.unsupported("contains on \(PredicateCompiler.name(of: RangeExpression.self))")
    }
}

/// Range nodes whose bounds are expressions.
protocol _RangeBounds {
    var isClosed: Bool { get }
    func bounds(_ compiler: inout PredicateCompiler) throws -> (QueryExpression, QueryExpression)
}

extension PredicateExpressions.ClosedRange: _RangeBounds {
    var isClosed: Bool { true }
    func bounds(_ compiler: inout PredicateCompiler) throws -> (QueryExpression, QueryExpression) {
        (try compiler.compile(lower).0, try compiler.compile(upper).0)
    }
}

extension PredicateExpressions.Range: _RangeBounds {
    var isClosed: Bool { false }
    func bounds(_ compiler: inout PredicateCompiler) throws -> (QueryExpression, QueryExpression) {
        (try compiler.compile(lower).0, try compiler.compile(upper).0)
    }
}

/// A captured constant range, such as `let r = 1...5` used as `r.contains($0.n)`.
protocol _ConstantRange {
    func constantBounds() throws -> (SnapshotValue, SnapshotValue, Bool)
}

extension PredicateExpressions.Value: _ConstantRange {
    func constantBounds() throws -> (SnapshotValue, SnapshotValue, Bool) {
        if let range = value as? any _SwiftRange { return try range.snapshotBounds() }
        throw PredicateCompiler.unsupported("a captured \(Output.self) used as a range")
    }
}

protocol _SwiftRange {
    func snapshotBounds() throws -> (SnapshotValue, SnapshotValue, Bool)
}

extension Swift.ClosedRange: _SwiftRange {
    func snapshotBounds() throws -> (SnapshotValue, SnapshotValue, Bool) {
        (try PredicateCompiler.constant(lowerBound), try PredicateCompiler.constant(upperBound), true)
    }
}

extension Swift.Range: _SwiftRange {
    func snapshotBounds() throws -> (SnapshotValue, SnapshotValue, Bool) {
        (try PredicateCompiler.constant(lowerBound), try PredicateCompiler.constant(upperBound), false)
    }
}
