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
        if let (check, target) = try compiler.modelCast(from: kind, to: Desired.self) {
            return (.cast(x, typeName: target.name, conditional: true, check: check), .model(target))
        }
        return (.cast(x, typeName: "\(Desired.self)", conditional: true, check: castCheck(Desired.self)), kind)
    }
}

extension PredicateExpressions.ForceCast: QueryCompilable {
    func compile(into compiler: inout PredicateCompiler) throws -> (QueryExpression, PredicateCompiler.Kind) {
        let (x, kind) = try compiler.compile(input)
        if let (check, target) = try compiler.modelCast(from: kind, to: Desired.self) {
            return (.cast(x, typeName: target.name, conditional: false, check: check), .model(target))
        }
        return (.cast(x, typeName: "\(Desired.self)", conditional: false, check: castCheck(Desired.self)), kind)
    }
}

extension PredicateExpressions.TypeCheck: QueryCompilable {
    func compile(into compiler: inout PredicateCompiler) throws -> (QueryExpression, PredicateCompiler.Kind) {
        let (x, kind) = try compiler.compile(input)
        var check = castCheck(Desired.self)
        var name = "\(Desired.self)"
        if let (modelCheck, target) = try compiler.modelCast(from: kind, to: Desired.self) {
            check = modelCheck
            name = target.name
        }
        // The conditional cast is `nil` exactly when the check fails.
        return (
            .compare(.notEqual, .cast(x, typeName: name, conditional: true, check: check), .constant(.null)), .value
        )
    }
}

extension PredicateCompiler {
    /// For a model cast to a model class (`trip is BusinessTrip`, `trip as? BusinessTrip`),
    /// the check that a model's identifier is of that class's entity or one that inherits
    /// from it, and that entity, whose own properties the cast value then reads; `nil` when
    /// the cast is not of a model to a model class.
    /// - Throws: `.unsupportedPredicate` when the class is not in the schema.
    func modelCast(from kind: Kind, to desired: Any.Type) throws -> (@Sendable (SnapshotValue) -> Bool, Schema.Entity)?
    {
        guard case .model = kind, let type = desired as? any PersistentModel.Type else { return nil }
        guard let target = schema.entity(forModelType: type) else {
            throw Self.unsupported("a cast to \(type), which is not in the container's schema")
        }
        let names = Set(schema.family(of: target).map(\.name))
        return (
            { value in
                guard case .identifier(let id) = value else { return false }
                return names.contains(id.entityName)
            }, target
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
