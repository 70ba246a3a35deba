import Foundation

// The common expression nodes again, conforming only when their children do, so that a
// predicate made entirely of them compiles with static calls after one cached
// conformance check at the root, instead of a dynamic cast at every node. A predicate
// with any other node takes the general path in `PredicateCompiler.compile(_:)`, which
// also names a node it cannot compile.

/// A node whose whole subtree compiles without dynamic casts.
protocol FastQueryCompilable: SendableMetatype {
    func compileFast(into compiler: inout PredicateCompiler) throws -> (QueryExpression, PredicateCompiler.Kind)
}

extension PredicateExpressions.Variable: FastQueryCompilable {
    func compileFast(into compiler: inout PredicateCompiler) throws -> (QueryExpression, PredicateCompiler.Kind) {
        (.variable(key), compiler.kinds[key] ?? .value)
    }
}

extension PredicateExpressions.KeyPath: FastQueryCompilable where Root: FastQueryCompilable {
    func compileFast(into compiler: inout PredicateCompiler) throws -> (QueryExpression, PredicateCompiler.Kind) {
        let base = try root.compileFast(into: &compiler)
        return try compiler.keyPath(base: base, keyPath: keyPath, valueType: Root.Output.self, outputType: Output.self)
    }
}

extension PredicateExpressions.Value: FastQueryCompilable {
    func compileFast(into compiler: inout PredicateCompiler) throws -> (QueryExpression, PredicateCompiler.Kind) {
        (.constant(try PredicateCompiler.constant(value)), .value)
    }
}

extension PredicateExpressions.NilLiteral: FastQueryCompilable {
    func compileFast(into compiler: inout PredicateCompiler) throws -> (QueryExpression, PredicateCompiler.Kind) {
        (.constant(.null), .value)
    }
}

extension PredicateExpressions.Equal: FastQueryCompilable where LHS: FastQueryCompilable, RHS: FastQueryCompilable {
    func compileFast(into compiler: inout PredicateCompiler) throws -> (QueryExpression, PredicateCompiler.Kind) {
        (.compare(.equal, try lhs.compileFast(into: &compiler).0, try rhs.compileFast(into: &compiler).0), .value)
    }
}

extension PredicateExpressions.NotEqual: FastQueryCompilable where LHS: FastQueryCompilable, RHS: FastQueryCompilable {
    func compileFast(into compiler: inout PredicateCompiler) throws -> (QueryExpression, PredicateCompiler.Kind) {
        (.compare(.notEqual, try lhs.compileFast(into: &compiler).0, try rhs.compileFast(into: &compiler).0), .value)
    }
}

extension PredicateExpressions.Comparison: FastQueryCompilable
where LHS: FastQueryCompilable, RHS: FastQueryCompilable {
    func compileFast(into compiler: inout PredicateCompiler) throws -> (QueryExpression, PredicateCompiler.Kind) {
        let operation: QueryExpression.ComparisonOperator =
            switch op {
            case .lessThan: .less
            case .lessThanOrEqual: .lessOrEqual
            case .greaterThan: .greater
            case .greaterThanOrEqual: .greaterOrEqual
            @unknown default: throw PredicateCompiler.unsupported("comparison operator \(op)")
            }
        return (
            .compare(operation, try lhs.compileFast(into: &compiler).0, try rhs.compileFast(into: &compiler).0), .value
        )
    }
}

extension PredicateExpressions.Conjunction: FastQueryCompilable
where LHS: FastQueryCompilable, RHS: FastQueryCompilable {
    func compileFast(into compiler: inout PredicateCompiler) throws -> (QueryExpression, PredicateCompiler.Kind) {
        (.and(try lhs.compileFast(into: &compiler).0, try rhs.compileFast(into: &compiler).0), .value)
    }
}

extension PredicateExpressions.Disjunction: FastQueryCompilable
where LHS: FastQueryCompilable, RHS: FastQueryCompilable {
    func compileFast(into compiler: inout PredicateCompiler) throws -> (QueryExpression, PredicateCompiler.Kind) {
        (.or(try lhs.compileFast(into: &compiler).0, try rhs.compileFast(into: &compiler).0), .value)
    }
}

extension PredicateExpressions.Negation: FastQueryCompilable where Wrapped: FastQueryCompilable {
    func compileFast(into compiler: inout PredicateCompiler) throws -> (QueryExpression, PredicateCompiler.Kind) {
        (.not(try wrapped.compileFast(into: &compiler).0), .value)
    }
}

extension PredicateExpressions.SequenceStartsWith: FastQueryCompilable
where Base: FastQueryCompilable, Prefix: FastQueryCompilable {
    func compileFast(into compiler: inout PredicateCompiler) throws -> (QueryExpression, PredicateCompiler.Kind) {
        (
            .function(.startsWith, try base.compileFast(into: &compiler).0, try prefix.compileFast(into: &compiler).0),
            .value
        )
    }
}

extension PredicateExpressions.CollectionContainsCollection: FastQueryCompilable
where Base: FastQueryCompilable, Other: FastQueryCompilable {
    func compileFast(into compiler: inout PredicateCompiler) throws -> (QueryExpression, PredicateCompiler.Kind) {
        (
            .function(.contains, try base.compileFast(into: &compiler).0, try other.compileFast(into: &compiler).0),
            .value
        )
    }
}
