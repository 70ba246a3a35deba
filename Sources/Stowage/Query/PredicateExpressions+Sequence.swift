import Foundation

// Sequences and collections: containment, prefixes, closures, min and max, subscripts.

extension PredicateExpressions.SequenceContains: QueryCompilable {
    func compile(into compiler: inout PredicateCompiler) throws -> (QueryExpression, PredicateCompiler.Kind) {
        let (s, kind) = try compiler.compile(sequence)
        let (e, _) = try compiler.compile(element)
        if case .models = kind {
            return (.function(.sequenceContains, s, e), .value)
        }
        return (.function(.sequenceContains, s, e), .value)
    }
}

extension PredicateExpressions.SequenceContainsWhere: QueryCompilable {
    func compile(into compiler: inout PredicateCompiler) throws -> (QueryExpression, PredicateCompiler.Kind) {
        let (s, kind) = try compiler.compile(sequence)
        compiler.kinds[variable.key] = elementKind(kind)
        return (.closure(.containsWhere, s, variable.key, try compiler.compile(test).0), .value)
    }
}

extension PredicateExpressions.SequenceAllSatisfy: QueryCompilable {
    func compile(into compiler: inout PredicateCompiler) throws -> (QueryExpression, PredicateCompiler.Kind) {
        let (s, kind) = try compiler.compile(sequence)
        compiler.kinds[variable.key] = elementKind(kind)
        return (.closure(.allSatisfy, s, variable.key, try compiler.compile(test).0), .value)
    }
}

extension PredicateExpressions.Filter: QueryCompilable {
    func compile(into compiler: inout PredicateCompiler) throws -> (QueryExpression, PredicateCompiler.Kind) {
        let (s, kind) = try compiler.compile(sequence)
        compiler.kinds[variable.key] = elementKind(kind)
        return (.closure(.filter, s, variable.key, try compiler.compile(filter).0), kind)
    }
}

extension PredicateExpressions.SequenceStartsWith: QueryCompilable {
    func compile(into compiler: inout PredicateCompiler) throws -> (QueryExpression, PredicateCompiler.Kind) {
        (.function(.startsWith, try compiler.compile(base).0, try compiler.compile(prefix).0), .value)
    }
}

extension PredicateExpressions.CollectionContainsCollection: QueryCompilable {
    func compile(into compiler: inout PredicateCompiler) throws -> (QueryExpression, PredicateCompiler.Kind) {
        (.function(.contains, try compiler.compile(base).0, try compiler.compile(other).0), .value)
    }
}

extension PredicateExpressions.SequenceMinimum: QueryCompilable {
    func compile(into compiler: inout PredicateCompiler) throws -> (QueryExpression, PredicateCompiler.Kind) {
        (.function(.min, try compiler.compile(elements).0, nil), .value)
    }
}

extension PredicateExpressions.SequenceMaximum: QueryCompilable {
    func compile(into compiler: inout PredicateCompiler) throws -> (QueryExpression, PredicateCompiler.Kind) {
        (.function(.max, try compiler.compile(elements).0, nil), .value)
    }
}

extension PredicateExpressions.CollectionIndexSubscript: QueryCompilable {
    func compile(into compiler: inout PredicateCompiler) throws -> (QueryExpression, PredicateCompiler.Kind) {
        let (w, kind) = try compiler.compile(wrapped)
        return (.subscripted(w, try compiler.compile(index).0, defaultValue: nil), elementKind(kind))
    }
}

extension PredicateExpressions.DictionaryKeySubscript: QueryCompilable {
    func compile(into compiler: inout PredicateCompiler) throws -> (QueryExpression, PredicateCompiler.Kind) {
        (.subscripted(try compiler.compile(wrapped).0, try compiler.compile(key).0, defaultValue: nil), .value)
    }
}

extension PredicateExpressions.DictionaryKeyDefaultValueSubscript: QueryCompilable {
    func compile(into compiler: inout PredicateCompiler) throws -> (QueryExpression, PredicateCompiler.Kind) {
        (
            .subscripted(
                try compiler.compile(wrapped).0, try compiler.compile(key).0,
                defaultValue: try compiler.compile(`default`).0), .value
        )
    }
}

/// The kind of one element of a sequence of this kind.
func elementKind(_ kind: PredicateCompiler.Kind) -> PredicateCompiler.Kind {
    if case .models(let entity) = kind { return .model(entity) }
    return .value
}
