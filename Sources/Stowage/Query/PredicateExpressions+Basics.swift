import Foundation

// Variables, key paths and captured values.

extension PredicateExpressions.Variable: QueryCompilable {
    func compile(into compiler: inout PredicateCompiler) throws -> (QueryExpression, PredicateCompiler.Kind) {
        (.variable(key), compiler.kinds[key] ?? .value)
    }
}

extension PredicateExpressions.KeyPath: QueryCompilable {
    func compile(into compiler: inout PredicateCompiler) throws -> (QueryExpression, PredicateCompiler.Kind) {
        let base = try compiler.compile(root)
        return try compiler.keyPath(
            base: base, keyPath: keyPath, valueType: Root.Output.self, outputType: Output.self)
    }
}

extension PredicateExpressions.Value: QueryCompilable {
    func compile(into compiler: inout PredicateCompiler) throws -> (QueryExpression, PredicateCompiler.Kind) {
        (.constant(try PredicateCompiler.constant(value)), .value)
    }
}

extension PredicateExpressions.NilLiteral: QueryCompilable {
    func compile(into compiler: inout PredicateCompiler) throws -> (QueryExpression, PredicateCompiler.Kind) {
        (.constant(.null), .value)
    }
}
