import Foundation

// Conjunction, disjunction, negation, the ternary, and optionals.

extension PredicateExpressions.Conjunction: QueryCompilable {
    func compile(into compiler: inout PredicateCompiler) throws -> (QueryExpression, PredicateCompiler.Kind) {
        (.and(try compiler.compile(lhs).0, try compiler.compile(rhs).0), .value)
    }
}

extension PredicateExpressions.Disjunction: QueryCompilable {
    func compile(into compiler: inout PredicateCompiler) throws -> (QueryExpression, PredicateCompiler.Kind) {
        (.or(try compiler.compile(lhs).0, try compiler.compile(rhs).0), .value)
    }
}

extension PredicateExpressions.Negation: QueryCompilable {
    func compile(into compiler: inout PredicateCompiler) throws -> (QueryExpression, PredicateCompiler.Kind) {
        (.not(try compiler.compile(wrapped).0), .value)
    }
}

extension PredicateExpressions.Conditional: QueryCompilable {
    func compile(into compiler: inout PredicateCompiler) throws -> (QueryExpression, PredicateCompiler.Kind) {
        let (a, kind) = try compiler.compile(trueBranch)
        return (.conditional(try compiler.compile(test).0, a, try compiler.compile(falseBranch).0), kind)
    }
}

extension PredicateExpressions.NilCoalesce: QueryCompilable {
    func compile(into compiler: inout PredicateCompiler) throws -> (QueryExpression, PredicateCompiler.Kind) {
        let (l, kind) = try compiler.compile(lhs)
        return (.nilCoalesce(l, try compiler.compile(rhs).0), kind)
    }
}

extension PredicateExpressions.OptionalFlatMap: QueryCompilable {
    func compile(into compiler: inout PredicateCompiler) throws -> (QueryExpression, PredicateCompiler.Kind) {
        let (w, kind) = try compiler.compile(wrapped)
        compiler.kinds[variable.key] = kind
        let (t, resultKind) = try compiler.compile(transform)
        return (.optionalFlatMap(w, variable.key, t), resultKind)
    }
}

extension PredicateExpressions.ForcedUnwrap: QueryCompilable {
    func compile(into compiler: inout PredicateCompiler) throws -> (QueryExpression, PredicateCompiler.Kind) {
        let (x, kind) = try compiler.compile(inner)
        return (.forceUnwrap(x), kind)
    }
}

extension PredicateExpressions.ConditionalCast: QueryCompilable {
    func compile(into compiler: inout PredicateCompiler) throws -> (QueryExpression, PredicateCompiler.Kind) {
        let (x, kind) = try compiler.compile(input)
        return (.cast(x, typeName: "\(Desired.self)", conditional: true, check: castCheck(Desired.self)), kind)
    }
}

extension PredicateExpressions.ForceCast: QueryCompilable {
    func compile(into compiler: inout PredicateCompiler) throws -> (QueryExpression, PredicateCompiler.Kind) {
        let (x, kind) = try compiler.compile(input)
        return (.cast(x, typeName: "\(Desired.self)", conditional: false, check: castCheck(Desired.self)), kind)
    }
}

extension PredicateExpressions.TypeCheck: QueryCompilable {
    func compile(into compiler: inout PredicateCompiler) throws -> (QueryExpression, PredicateCompiler.Kind) {
        let (x, _) = try compiler.compile(input)
        let check = castCheck(Desired.self)
        return (
            .conditional(
                .cast(x, typeName: "\(Desired.self)", conditional: true, check: check), .constant(.bool(true)),
                .constant(.bool(false))), .value
        )
    }
}

/// Whether a stored value can stand for a value of `type`: its snapshot form decodes
/// as that type.
func castCheck<T>(_ type: T.Type) -> @Sendable (SnapshotValue) -> Bool {
    let name = String(describing: type)
    return { value in
        if value.isNull { return false }
        switch value {
        case .int, .uint:
            return [
                "Int", "Int64", "Int32", "Int16", "Int8", "UInt", "UInt64", "UInt32", "UInt16", "UInt8", "Double",
                "Float",
            ].contains(name)
        case .double: return name == "Double" || name == "Float"
        case .string: return name == "String"
        case .bool: return name == "Bool"
        case .date: return name == "Date"
        case .uuid: return name == "UUID"
        case .data: return name == "Data"
        case .url: return name == "URL"
        case .decimal: return name == "Decimal"
        default: return true
        }
    }
}
