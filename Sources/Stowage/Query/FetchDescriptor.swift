import Foundation

/// What to fetch: a predicate, a sort order, and a window of results.
public struct FetchDescriptor<T: PersistentModel>: @unchecked Sendable {
    // @unchecked Sendable: Predicate and SortDescriptor are Sendable; the key paths are
    // immutable values.

    /// Which models to fetch; `nil` fetches all.
    public var predicate: Predicate<T>?
    /// The order of the results. `nil` values sort first in ascending order and last in
    /// descending order.
    public var sortBy: [SortDescriptor<T>]
    /// The most results to return.
    public var fetchLimit: Int?
    /// How many results to skip.
    public var fetchOffset: Int?
    /// Whether unsaved inserts, changes and deletes in the context count. The default is
    /// `true`, as in SwiftData.
    public var includePendingChanges: Bool = true
    /// The properties to load. Stowage accepts the hint and loads every property, which
    /// keeps models complete; the result is the same.
    public var propertiesToFetch: [PartialKeyPath<T>] = []
    /// Relationships whose models to load along with the results, in one request each.
    public var relationshipKeyPathsForPrefetching: [PartialKeyPath<T>] = []

    /// Creates a descriptor.
    public init(predicate: Predicate<T>? = nil, sortBy: [SortDescriptor<T>] = []) {
        self.predicate = predicate
        self.sortBy = sortBy
    }
}

extension FetchDescriptor {
    /// This descriptor as `query` asks for it: without its predicate when the query has
    /// none left, without its sort when the query has none, and with the query's window.
    /// A store reads the descriptor (a custom store does), so it must say what the context
    /// asks of the store, not what the app asked of the context.
    @usableFromInline
    func matching(_ query: FetchQuery) -> FetchDescriptor<T> {
        let offset = query.offset == 0 ? nil : query.offset
        if fetchLimit == query.limit, (fetchOffset ?? 0) == query.offset, predicate == nil || query.hasFilter,
            sortBy.isEmpty || !query.sort.isEmpty
        {
            return self
        }
        var copy = self
        copy.fetchLimit = query.limit
        copy.fetchOffset = offset
        if !query.hasFilter { copy.predicate = nil }
        if query.sort.isEmpty { copy.sortBy = [] }
        return copy
    }
}

extension FetchQuery {
    /// Whether the query filters at all: by a predicate or by identifiers.
    @usableFromInline
    var hasFilter: Bool { predicate != nil || identifiers != nil }
}

/// A fetch descriptor with its model type taken out: what ``ModelContext/fetch(_:)``
/// passes from the app's module, where it is specialized for the model type, to code that
/// is not generic. Code generic over the model type looked up the type metadata of
/// `FetchDescriptor<T>`, `[T]`, `Predicate<T>` and the like at run time, each time, a large
/// part of a point fetch (see `Benchmarks/RESULTS.md`, "Measurements behind the code").
@usableFromInline
struct ErasedFetchDescriptor {
    @usableFromInline let modelType: any PersistentModel.Type
    /// The predicate's expression and the variable it binds to the model, when there is one.
    @usableFromInline let predicate:
        (expression: any StandardPredicateExpression<Bool>, root: PredicateExpressions.VariableID)?
    /// Each sort descriptor's key path (`nil` when it has none) and whether it is ascending.
    @usableFromInline let sortBy: [(keyPath: AnyKeyPath?, ascending: Bool)]
    @usableFromInline let fetchLimit: Int?
    @usableFromInline let fetchOffset: Int?
    @usableFromInline let includePendingChanges: Bool
    @usableFromInline let prefetch: [AnyKeyPath]

    @inlinable
    init<T: PersistentModel>(_ descriptor: FetchDescriptor<T>) {
        modelType = T.self
        if let predicate = descriptor.predicate {
            self.predicate = (predicate.expression, predicate.variable.key)
        } else {
            self.predicate = nil
        }
        sortBy = descriptor.sortBy.isEmpty ? [] : descriptor.sortBy.map { ($0.keyPath, $0.order == .forward) }
        fetchLimit = descriptor.fetchLimit
        fetchOffset = descriptor.fetchOffset
        includePendingChanges = descriptor.includePendingChanges
        let prefetch = descriptor.relationshipKeyPathsForPrefetching
        self.prefetch = prefetch.isEmpty ? [] : prefetch.map { $0 }
    }
}

/// One sort key of a compiled query.
public struct SortKey: Sendable, CustomStringConvertible {
    /// The property's position in snapshots.
    public let index: Int
    /// The property's name.
    public let name: String
    /// Whether the order is ascending.
    public let ascending: Bool

    /// The property and the direction: `name ASC`.
    public var description: String { "\(name) \(ascending ? "ASC" : "DESC")" }
}

/// A fetch descriptor compiled against a schema: what every store evaluates.
public struct FetchQuery: Sendable, CustomStringConvertible {
    /// The entity to fetch.
    public private(set) var entity: Schema.Entity
    /// The entities whose records the query reads: ``entity`` and, with model inheritance,
    /// the schema's entities that inherit from it (a fetch of a base class returns its
    /// subclasses' models too). Their records hold the base's properties first, at the
    /// same positions, so the predicate and sort read them all alike.
    public internal(set) var entities: [Schema.Entity]
    /// Whether the query reads more than one entity's records.
    public var spansSubentities: Bool { entities.count > 1 }
    /// The compiled predicate, or `nil` for all records.
    public var predicate: QueryExpression?
    /// The variable the predicate binds to the record under test.
    public var rootVariable: PredicateExpressions.VariableID?
    /// The sort keys, most significant first.
    public var sort: [SortKey]
    /// The most results to return.
    public var limit: Int?
    /// How many results to skip.
    public var offset: Int
    /// When set, only records with these identifiers are candidates.
    public var identifiers: Set<PersistentIdentifier>?

    /// Compiles a descriptor.
    /// - Throws: ``SwiftDataError`` `.unknownModelType`, `.unsupportedPredicate` or
    ///   `.unsupportedSortDescriptor`.
    public init<T: PersistentModel>(_ descriptor: FetchDescriptor<T>, schema: Schema) throws {
        guard let entity = schema.entity(for: T.self) else {
            throw SwiftDataError(.unknownModelType, "\(T.self) is not in the container's schema")
        }
        try self.init(descriptor, entity: entity, schema: schema)
    }

    init<T: PersistentModel>(_ descriptor: FetchDescriptor<T>, entity: Schema.Entity, schema: Schema) throws {
        try self.init(ErasedFetchDescriptor(descriptor), entity: entity, schema: schema)
    }

    init(_ descriptor: ErasedFetchDescriptor, entity: Schema.Entity, schema: Schema) throws {
        self.entity = entity
        self.entities = schema.family(of: entity)
        if let (expression, root) = descriptor.predicate {
            self.predicate = try PredicateCompiler.compile(expression, root: root, entity: entity, schema: schema)
            self.rootVariable = root
        }
        self.sort = try descriptor.sortBy.map { sortDescriptor in
            guard let keyPath = sortDescriptor.keyPath else {
                throw SwiftDataError(.unsupportedSortDescriptor, "a sort descriptor without a key path")
            }
            guard let property = entity.property(for: keyPath), !property.isRelationship else {
                throw SwiftDataError(
                    .unsupportedSortDescriptor, "\(keyPath) is not a stored attribute of \(entity.name)")
            }
            return SortKey(index: property.index, name: property.name, ascending: sortDescriptor.ascending)
        }
        if let limit = descriptor.fetchLimit, limit < 0 {
            throw SwiftDataError(.unsupportedPredicate, "fetchLimit must not be negative (\(limit))")
        }
        self.limit = descriptor.fetchLimit
        self.offset = max(0, descriptor.fetchOffset ?? 0)
    }

    /// A query for all records of `entity` with the given identifiers.
    public init(entity: Schema.Entity, identifiers: Set<PersistentIdentifier>) {
        self.entity = entity
        self.entities = [entity]
        self.sort = []
        self.offset = 0
        self.identifiers = identifiers
    }

    /// The query over one of ``entities`` alone: the base's predicate and sort, which read
    /// properties by position, hold for a subentity's records as they are.
    func narrowed(to entity: Schema.Entity) -> FetchQuery {
        var query = self
        query.entity = entity
        query.entities = [entity]
        return query
    }

    /// Whether the query reads records of the entity called `name`.
    func reads(entityNamed name: String) -> Bool {
        entities.contains { $0.name == name }
    }

    /// Whether `a` sorts before `b` under this query's sort keys.
    public func areInIncreasingOrder(_ a: DefaultSnapshot, _ b: DefaultSnapshot) -> Bool {
        for key in sort {
            let c = SnapshotValue.compare(a.values[key.index], b.values[key.index])
            if c == .orderedSame { continue }
            return key.ascending ? c == .orderedAscending : c == .orderedDescending
        }
        return false
    }

    /// The query as one line: `FETCH Trip WHERE … ORDER BY … LIMIT …`.
    public var description: String {
        var parts = ["FETCH \(entity.name)"]
        if let identifiers { parts.append("IDS (\(identifiers.count))") }
        if let predicate { parts.append("WHERE \(predicate)") }
        if !sort.isEmpty { parts.append("ORDER BY " + sort.map(\.description).joined(separator: ", ")) }
        if offset > 0 { parts.append("OFFSET \(offset)") }
        if let limit { parts.append("LIMIT \(limit)") }
        return parts.joined(separator: "; ")
    }
}
