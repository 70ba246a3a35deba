import Foundation

// Arithmetic.

extension PredicateExpressions.Arithmetic: QueryCompilable {
    func compile(into compiler: inout PredicateCompiler) throws -> (QueryExpression, PredicateCompiler.Kind) {
        let operation: QueryExpression.ArithmeticOperator =
            switch op {
            case .add: .add
            case .subtract: .subtract
            case .multiply: .multiply
            @unknown default: throw PredicateCompiler.unsupported("arithmetic operator \(op)")
            }
        return (.arithmetic(operation, try compiler.compile(lhs).0, try compiler.compile(rhs).0), .value)
    }
}

extension PredicateExpressions.FloatDivision: QueryCompilable {
    func compile(into compiler: inout PredicateCompiler) throws -> (QueryExpression, PredicateCompiler.Kind) {
        (.arithmetic(.divide, try compiler.compile(lhs).0, try compiler.compile(rhs).0), .value)
    }
}

extension PredicateExpressions.IntDivision: QueryCompilable {
    func compile(into compiler: inout PredicateCompiler) throws -> (QueryExpression, PredicateCompiler.Kind) {
        (.arithmetic(.integerDivide, try compiler.compile(lhs).0, try compiler.compile(rhs).0), .value)
    }
}

extension PredicateExpressions.IntRemainder: QueryCompilable {
    func compile(into compiler: inout PredicateCompiler) throws -> (QueryExpression, PredicateCompiler.Kind) {
        (.arithmetic(.remainder, try compiler.compile(lhs).0, try compiler.compile(rhs).0), .value)
    }
}

extension PredicateExpressions.UnaryMinus: QueryCompilable {
    func compile(into compiler: inout PredicateCompiler) throws -> (QueryExpression, PredicateCompiler.Kind) {
        (.negate(try compiler.compile(wrapped).0), .value)
    }
}
