import Foundation
import Synchronization

/// Compiles Foundation's `Predicate` into a ``QueryExpression``.
///
/// Each family of `PredicateExpressions` nodes conforms to ``QueryCompilable`` in its
/// own file, in the order Foundation declares them. A node without a conformance, or a
/// key path that is not a stored property, is an error that names it: Stowage never
/// crashes on a predicate and never silently matches everything.
struct PredicateCompiler {
    /// What a compiled subexpression evaluates to, as far as the compiler can tell.
    enum Kind {
        /// A model of this entity (`.identifier` at run time).
        case model(Schema.Entity)
        /// A to-many relationship to this entity (an array of identifiers).
        case models(Schema.Entity)
        /// Any other value.
        case value
    }

    let schema: Schema
    var kinds = VariableKinds()

    /// The kind of each variable in scope. A predicate binds one to three of them, so a
    /// list searched from the end, without a dictionary's allocation and hashing on every
    /// fetch.
    struct VariableKinds {
        /// The first variable set, held inline: most predicates have only their model's,
        /// and so make no allocation for the list.
        private var first: (key: PredicateExpressions.VariableID, kind: Kind)?
        /// The variables set after it (those of nested closures), innermost last.
        private var entries: [(key: PredicateExpressions.VariableID, kind: Kind)] = []

        subscript(key: PredicateExpressions.VariableID) -> Kind? {
            get {
                if let found = entries.last(where: { $0.key == key }) { return found.kind }
                return first.flatMap { $0.key == key ? $0.kind : nil }
            }
            set {
                if let position = entries.lastIndex(where: { $0.key == key }) {
                    if let newValue { entries[position].kind = newValue } else { entries.remove(at: position) }
                } else if first?.key == key {
                    first = newValue.map { (key, $0) }
                } else if let newValue {
                    if first == nil && entries.isEmpty {
                        first = (key, newValue)
                    } else {
                        entries.append((key, newValue))
                    }
                }
            }
        }
    }

    init(schema: Schema) {
        self.schema = schema
    }

    static func unsupported(_ what: String) -> SwiftDataError {
        SwiftDataError(.unsupportedPredicate, "unsupported predicate expression: \(what)")
    }

    /// Compiles a predicate's expression whose variable `root` is the model of `entity`.
    /// - Throws: ``SwiftDataError`` `.unsupportedPredicate`, naming the expression.
    static func compile(
        _ expression: any StandardPredicateExpression<Bool>, root: PredicateExpressions.VariableID,
        entity: Schema.Entity, schema: Schema
    ) throws -> QueryExpression {
        var compiler = PredicateCompiler(schema: schema)
        compiler.kinds[root] = .model(entity)
        switch fastCompiler(for: expression) {
        case .some(let fast):
            // The cached compiler was made for exactly this expression type.
            return try Self.callFast(fast.compile, on: expression, into: &compiler)
        case .none:
            return try compiler.compile(expression).0
        }
    }

    /// Compiles the fast expression whose value `pointer` points at.
    typealias FastCompile = @Sendable (UnsafeRawPointer, inout PredicateCompiler) throws -> QueryExpression

    /// A fast compiler, held by a class: a closure kept in a dictionary directly is stored
    /// at the dictionary's generic abstraction, and taking it out allocated a thunk on
    /// every fetch, which every call then went through.
    final class FastCompiler: Sendable {
        let compile: FastCompile
        init(_ compile: @escaping FastCompile) { self.compile = compile }
    }

    /// Whether each predicate expression type compiles on the fast path, and how, found
    /// once per type: the conditional conformance check behind `as? any
    /// FastQueryCompilable` is costly, and was made on every fetch (see
    /// `Benchmarks/RESULTS.md`, "Measurements behind the code").
    private static let fastCompilers = PosixMutex<[ObjectIdentifier: FastCompiler?]>([:])

    /// The fast compiler for the dynamic type of `expression`, or `nil` when that type
    /// takes the general path.
    static func fastCompiler<Expression: StandardPredicateExpression<Bool>>(for expression: Expression)
        -> FastCompiler?
    {
        // The existential argument is opened: `Expression` is the expression's own type.
        let key = ObjectIdentifier(Expression.self)
        if let known = fastCompilers.withLock({ $0[key] }) { return known }
        var made: FastCompiler?
        if let fast = expression as? any FastQueryCompilable { made = FastCompiler(makeFastCompile(fast)) }
        fastCompilers.withLock { $0[key] = .some(made) }
        return made
    }

    private static func makeFastCompile<Node: FastQueryCompilable>(_: Node) -> FastCompile {
        { pointer, compiler in
            try pointer.assumingMemoryBound(to: Node.self).pointee.compileFast(into: &compiler).0
        }
    }

    /// Calls `fast` on `expression`, opened to its concrete type and passed by address.
    private static func callFast<Expression: StandardPredicateExpression<Bool>>(
        _ fast: FastCompile, on expression: Expression, into compiler: inout PredicateCompiler
    ) throws -> QueryExpression {
        try withUnsafePointer(to: expression) { try fast(UnsafeRawPointer($0), &compiler) }
    }

    /// Compiles any expression node.
    mutating func compile(_ node: Any) throws -> (QueryExpression, Kind) {
        guard let compilable = node as? any QueryCompilable else {
            throw Self.unsupported(Self.name(of: type(of: node)))
        }
        return try compilable.compile(into: &self)
    }

    /// The node's type name without Foundation's module prefixes.
    static func name(of type: Any.Type) -> String {
        String(describing: type).replacingOccurrences(of: "PredicateExpressions.", with: "")
    }

    /// Compiles a key path step applied to `base`.
    mutating func keyPath(base: (QueryExpression, Kind), keyPath: AnyKeyPath, valueType: Any.Type, outputType: Any.Type)
        throws -> (QueryExpression, Kind)
    {
        switch base.1 {
        case .model(let entity):
            if keyPath == entity.persistentModelIDKeyPath {
                return (.modelID(base.0), .value)
            }
            guard let index = entity.index(forKeyPath: keyPath) else {
                throw Self.unsupported(
                    "\(keyPath) is not a stored property of \(entity.name) (stored: "
                        + entity.properties.map(\.name).joined(separator: ", ") + ")")
            }
            // The property's parts are read where they lie, without copying its whole
            // metadata on every fetch.
            let expression = QueryExpression.property(
                base.0, entity: entity.name, index: entity.properties[index].index, name: entity.properties[index].name)
            if let relationship = entity.properties[index].relationship,
                let destinationType = relationship.destinationType
            {
                let destination =
                    schema.entity(forModelType: destinationType) ?? EntityRegistry.entity(for: destinationType)
                return (expression, relationship.isToOne ? .model(destination) : .models(destination))
            }
            return (expression, .value)
        case .models:
            if let collection = valueType as? any _ModelArray.Type {
                if keyPath == collection._countKeyPath { return (.count(base.0), .value) }
                if keyPath == collection._isEmptyKeyPath { return (.isEmpty(base.0), .value) }
            }
            throw Self.unsupported(
                "\(keyPath) on a to-many relationship (count, isEmpty and contains(where:) are supported)")
        case .value:
            return (try Self.valueKeyPath(base: base.0, keyPath: keyPath, valueType: valueType), .value)
        }
    }

    /// A key path into a plain value: `count` and `isEmpty` of strings and collections, a
    /// field of a composite struct, or any other key path applied to the decoded value.
    static func valueKeyPath(base: QueryExpression, keyPath: AnyKeyPath, valueType: Any.Type) throws -> QueryExpression
    {
        if let known = knownKeyPath(keyPath, base: base) { return known }
        guard let decodable = valueType as? any Decodable.Type else {
            throw unsupported("\(keyPath) on \(valueType), which is not Codable")
        }
        let applier = try makeApplier(keyPath, decodable)
        let description = String(describing: keyPath)
        let prefix = "\\" + String(describing: valueType) + "."
        if description.hasPrefix(prefix) {
            let field = String(description.dropFirst(prefix.count))
            if !field.isEmpty, field.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }) {
                return .member(base, name: field, fallback: applier)
            }
        }
        return .apply(base, applier)
    }

    static func knownKeyPath(_ keyPath: AnyKeyPath, base: QueryExpression) -> QueryExpression? {
        switch keyPath {
        case \String.count, \[String].count, \[Int].count, \[Double].count, \[UUID].count, \[Date].count,
            \Data.count, \Set<String>.count, \Set<Int>.count, \Substring.count:
            return .count(base)
        case \String.isEmpty, \[String].isEmpty, \[Int].isEmpty, \[Double].isEmpty, \[UUID].isEmpty,
            \[Date].isEmpty, \Data.isEmpty, \Set<String>.isEmpty, \Set<Int>.isEmpty:
            return .isEmpty(base)
        default:
            return nil
        }
    }

    static func makeApplier<Root: Decodable>(_ keyPath: AnyKeyPath, _ root: Root.Type) throws -> KeyPathApplier {
        let name = String(describing: keyPath).split(separator: ".").last.map(String.init) ?? "\(keyPath)"
        return KeyPathApplier(name: name) { value in
            let decoded = try SnapshotValueDecoder.decode(Root.self, from: value)
            guard let result = decoded[keyPath: keyPath] else { return .null }
            if let direct = SnapshotValueEncoder.directValue(result) { return direct }
            if let optional = result as? any _OptionalValue {
                guard let wrapped = optional._wrapped else { return .null }
                if let direct = SnapshotValueEncoder.directValue(wrapped) { return direct }
            }
            guard let encodable = result as? any Encodable else {
                throw SwiftDataError(
                    .unsupportedPredicate, "\(keyPath) gives \(type(of: result)), which is not Codable")
            }
            return try SnapshotValueEncoder.encode(encodable)
        }
    }

    /// The snapshot value of a captured constant.
    static func constant(_ value: Any) throws -> SnapshotValue {
        if let direct = SnapshotValueEncoder.directValue(value) { return direct }
        if let optional = value as? any _OptionalValue {
            guard let wrapped = optional._wrapped else { return .null }
            return try constant(wrapped)
        }
        if let result = value as? ComparisonResult { return .int(Int64(result.rawValue)) }
        if let model = value as? any PersistentModel { return .identifier(model.persistentModelID) }
        if let models = value as? [any PersistentModel] {
            return .array(models.map { .identifier($0.persistentModelID) })
        }
        guard let encodable = value as? any Encodable else {
            throw unsupported("a captured value of type \(type(of: value)), which is not Codable")
        }
        return try SnapshotValueEncoder.encode(encodable)
    }
}

/// A `PredicateExpressions` node that Stowage can compile.
protocol QueryCompilable {
    /// Compiles the node, and reports what it evaluates to.
    func compile(into compiler: inout PredicateCompiler) throws -> (QueryExpression, PredicateCompiler.Kind)
}

/// Arrays of models, so that `count` and `isEmpty` on to-many relationships are known.
protocol _ModelArray {
    static var _countKeyPath: AnyKeyPath { get }
    static var _isEmptyKeyPath: AnyKeyPath { get }
}

extension Array: _ModelArray where Element: PersistentModel {
    static var _countKeyPath: AnyKeyPath { \[Element].count }
    static var _isEmptyKeyPath: AnyKeyPath { \[Element].isEmpty }
}

extension PersistentModel {
    static var _persistentModelIDKeyPath: AnyKeyPath { \Self.persistentModelID }
}
