import Foundation
import IndexKey

/// Chooses a ``QueryPlan`` for a compiled fetch over an entity's indexes.
///
/// It uses, in order of preference: the fetch's own identifiers
/// (`FetchDescriptor`'s identifier set); a look-up of one value in a one-column unique
/// index, for a predicate that is that one equality (the most common fetch, planned before
/// anything else and without reading the predicate further); a set of identifiers in the
/// predicate; equality on the leading
/// columns of an index, with a range (`<`, `<=`, `>`, `>=`, a closed or half-open range,
/// or `starts(with:)`) on the next one; an `OR` whose every branch can use an index, as a
/// union; an index whose order satisfies `sortBy`, read in order and stopped at
/// `fetchOffset + fetchLimit`; otherwise a full scan. Whatever the access does not cover
/// exactly stays as a filter on snapshots.
struct QueryPlanner {
    let query: FetchQuery
    let indexes: [EntityIndex]

    /// One indexable condition on a property of the record under test.
    enum Term {
        case equal(column: Int, value: SnapshotValue)
        case range(column: Int, lower: (SnapshotValue, Bool)?, upper: (SnapshotValue, Bool)?)
        case prefix(column: Int, value: String)
        case identifiers([PersistentIdentifier])

        var column: Int? {
            switch self {
            case .equal(let c, _), .range(let c, _, _), .prefix(let c, _): c
            case .identifiers: nil
            }
        }
    }

    func plan() -> QueryPlan {
        if let ids = query.identifiers {
            return QueryPlan(
                entityName: query.entity.name, access: .identifiers(ids.sorted()), residual: query.predicate,
                sort: query.sort, orderedByIndex: false, offset: query.offset, limit: query.limit)
        }
        if let lookup = Self.uniqueLookup(query, indexes) {
            // One record at most: no filter, and the sort has nothing to order.
            let index = indexes[lookup.index]
            var text = QueryPlan.ScanText(
                index: index.description, equal: [(index.columnNames[0], Self.lookedUpValue(query, index))])
            text.isExactUniqueLookup = true
            return QueryPlan(
                entityName: query.entity.name, access: .uniqueKey(lookup, text: text), residual: nil,
                sort: query.sort, orderedByIndex: false, offset: 0, limit: query.limit)
        }
        let conjuncts = query.predicate.map(Self.conjuncts) ?? []
        let terms = conjuncts.map(term)

        // A set of identifiers beats everything.
        if let position = terms.firstIndex(where: { if case .identifiers? = $0 { true } else { false } }),
            case .identifiers(let ids)? = terms[position]
        {
            let access = QueryPlan.Access.identifiers(ids)
            return finish(access, consumed: [position], conjuncts: conjuncts, ordered: false)
        }

        // The best single index for the conjunction.
        if let best = bestIndex(terms) {
            let ordered = sortFollows(
                index: best.index, afterEqualColumns: best.equalCount, rangeColumn: best.rangeColumn)
            let reverse = ordered && query.sort.first.map { !$0.ascending } == true
            let access = scan(index: best.index, equal: best.equal, range: best.range, reverse: reverse)
            return finish(access, consumed: best.consumed, conjuncts: conjuncts, ordered: ordered)
        }

        // A list's `contains` of an indexed property (`names.contains($0.name)`, SQL's IN):
        // one equality scan of the index per distinct value, as an equality would take.
        if let (position, access) = listLookup(conjuncts) {
            return finish(access, consumed: [position], conjuncts: conjuncts, ordered: false)
        }

        // An OR whose branches can each use an index.
        for conjunct in conjuncts {
            guard case .or = conjunct else { continue }
            let branches = Self.disjuncts(conjunct)
            var parts: [QueryPlan.Access] = []
            for branch in branches {
                let branchTerms = Self.conjuncts(branch).map(term)
                if let ids = branchTerms.lazy.compactMap({ t -> [PersistentIdentifier]? in
                    if case .identifiers(let ids)? = t { return ids } else { return nil }
                }).first {
                    parts.append(.identifiers(ids))
                } else if let best = bestIndex(branchTerms) {
                    parts.append(scan(index: best.index, equal: best.equal, range: best.range, reverse: false))
                } else {
                    parts = []
                    break
                }
            }
            if !parts.isEmpty {
                return finish(.union(parts), consumed: [], conjuncts: conjuncts, ordered: false)
            }
        }

        // An index whose order is the sort order.
        if !query.sort.isEmpty {
            for position in indexes.indices where sortFollows(index: position, afterEqualColumns: 0, rangeColumn: nil) {
                let reverse = query.sort.first.map { !$0.ascending } == true
                return finish(
                    scan(index: position, equal: [], range: nil, reverse: reverse), consumed: [], conjuncts: conjuncts,
                    ordered: true)
            }
        }
        return finish(.fullScan, consumed: [], conjuncts: conjuncts, ordered: false)
    }

    /// The planner's first rule: for a query that is one equality between a property and a
    /// constant, with no identifiers and no offset, the look-up in the first one-column
    /// unique index over the property that takes the constant; `nil` otherwise. It is what
    /// ``bestIndex(_:)`` would choose for that query (an exact unique match outscores every
    /// other index), found without building the terms. A static function of the query, so
    /// that the fetch, which runs this rule before anything else, copies nothing to ask it.
    static func uniqueLookup(_ query: FetchQuery, _ indexes: [EntityIndex]) -> QueryPlan.UniqueLookup? {
        guard query.identifiers == nil, query.offset == 0, query.limit != 0,
            case .compare(.equal, let l, let r)? = query.predicate
        else { return nil }
        let column: Int
        let value: SnapshotValue
        if let c = Self.column(l, query), case .constant(let v) = r {
            (column, value) = (c, v)
        } else if let c = Self.column(r, query), case .constant(let v) = l {
            (column, value) = (c, v)
        } else {
            return nil
        }
        // Each index is read where it lies; a `for index in` loop copied each one.
        for i in indexes.indices
        where indexes[i].isUnique && indexes[i].columns.count == 1 && indexes[i].columns[0] == column {
            guard let coerced = indexes[i].coerce(value, column: 0) else { return nil }
            var encoder = IndexKeyEncoder()
            EntityIndex.append(coerced, to: &encoder)
            return QueryPlan.UniqueLookup(index: i, column: column, key: encoder.key, hint: indexes[i].hint)
        }
        return nil
    }

    /// The constant of a query ``uniqueLookup(_:_:)`` answers, as `index` holds it, for
    /// `explain`.
    private static func lookedUpValue(_ query: FetchQuery, _ index: EntityIndex) -> SnapshotValue {
        guard case .compare(.equal, let l, let r)? = query.predicate else { return .null }
        let value: SnapshotValue
        if case .constant(let v) = r {
            value = v
        } else if case .constant(let v) = l {
            value = v
        } else {
            return .null
        }
        return index.coerce(value, column: 0) ?? value
    }

    /// The most values a list's `contains` is looked up by, one index scan each; a longer
    /// list is a filter.
    static let listLookupLimit = 1024

    /// For the first conjunct that is a constant list's `contains` of a property that leads
    /// an index, its position and the union of one equality scan per distinct value; `nil`
    /// when there is none, or a value does not convert exactly to the column's kind.
    func listLookup(_ conjuncts: [QueryExpression]) -> (Int, QueryPlan.Access)? {
        for (position, conjunct) in conjuncts.enumerated() {
            guard case .function(.sequenceContains, .constant(.array(let items)), let element?) = conjunct,
                !items.isEmpty, items.count <= Self.listLookupLimit, let column = column(element),
                let indexPosition = indexes.indices.first(where: { indexes[$0].columns.first == column })
            else { continue }
            let index = indexes[indexPosition]
            var seen: Set<SnapshotValue> = []
            var parts: [QueryPlan.Access] = []
            for item in items {
                guard let coerced = index.coerce(item, column: 0) else { return nil }
                guard seen.insert(coerced).inserted else { continue }
                parts.append(scan(index: indexPosition, equal: [coerced], range: nil, reverse: false))
            }
            return (position, parts.count == 1 ? parts[0] : .union(parts))
        }
        return nil
    }

    // MARK: Choosing an index

    struct Candidate {
        let index: Int
        let equal: [SnapshotValue]
        let range: Term?
        let rangeColumn: Int?
        let consumed: Set<Int>
        let score: Int
        var equalCount: Int { equal.count }
    }

    func bestIndex(_ terms: [Term?]) -> Candidate? {
        var best: Candidate?
        for (position, index) in indexes.enumerated() {
            var equal: [SnapshotValue] = []
            var consumed: Set<Int> = []
            var range: Term?
            var rangeColumn: Int?
            columns: for (c, column) in index.columns.enumerated() {
                if let found = terms.enumerated().first(where: { _, t in
                    if case .equal(column, let v)? = t { return index.coerce(v, column: c) != nil }
                    return false
                }), case .equal(_, let value)? = found.element, let coerced = index.coerce(value, column: c) {
                    equal.append(coerced)
                    consumed.insert(found.offset)
                    continue columns
                }
                func fits(_ t: Term?) -> Bool {
                    switch t {
                    case .range(column, let lo, let hi)?:
                        return (lo.map { index.coerce($0.0, column: c) != nil } ?? true)
                            && (hi.map { index.coerce($0.0, column: c) != nil } ?? true)
                    case .prefix(column, _)?: return index.columnKinds[c] == .other
                    default: return false
                    }
                }
                if let found = terms.enumerated().first(where: { fits($0.element) }) {
                    range = found.element
                    rangeColumn = c
                    if case .range(_, var lower, var upper)? = found.element {
                        consumed.insert(found.offset)
                        // A bound the first term lacks, from another term on the column
                        // (`x >= a && x < b`): one range, not a range and a filter.
                        for (offset, term) in terms.enumerated() where offset != found.offset && fits(term) {
                            guard case .range(_, let lo, let hi)? = term else { continue }
                            let takesLower = lower == nil && lo != nil
                            let takesUpper = upper == nil && hi != nil
                            guard (takesLower || lo == nil) && (takesUpper || hi == nil) else { continue }
                            if takesLower { lower = lo }
                            if takesUpper { upper = hi }
                            consumed.insert(offset)
                        }
                        range = .range(column: column, lower: lower, upper: upper)
                    }
                }
                break
            }
            guard !equal.isEmpty || range != nil else { continue }
            let complete = index.isUnique && equal.count == index.columns.count
            let score = equal.count * 10 + (range != nil ? 5 : 0) + (complete ? 100 : 0) - index.columns.count
            if best == nil || score > best!.score {
                best = Candidate(
                    index: position, equal: equal, range: range.map { coerceRange($0, index, rangeColumn ?? 0) },
                    rangeColumn: rangeColumn, consumed: consumed, score: score)
            }
        }
        return best
    }

    func coerceRange(_ term: Term, _ index: EntityIndex, _ column: Int) -> Term {
        guard case .range(let c, let lo, let hi) = term else { return term }
        return .range(
            column: c, lower: lo.flatMap { v in index.coerce(v.0, column: column).map { ($0, v.1) } },
            upper: hi.flatMap { v in index.coerce(v.0, column: column).map { ($0, v.1) } })
    }

    /// Whether reading index `index` after `afterEqualColumns` equal columns gives the
    /// query's sort order.
    func sortFollows(index position: Int, afterEqualColumns equalCount: Int, rangeColumn: Int?) -> Bool {
        guard !query.sort.isEmpty else { return false }
        let index = indexes[position]
        let rest = Array(index.columns.dropFirst(equalCount))
        guard rest.count >= query.sort.count else { return false }
        let ascending = query.sort[0].ascending
        for (i, key) in query.sort.enumerated() where rest[i] != key.index || key.ascending != ascending {
            return false
        }
        if let rangeColumn, rangeColumn != equalCount { return false }
        return true
    }

    /// The key range for equal values on leading columns and an optional range after.
    func scan(index position: Int, equal: [SnapshotValue], range: Term?, reverse: Bool) -> QueryPlan.Access {
        let index = indexes[position]
        var prefix = IndexKeyEncoder()
        for value in equal { EntityIndex.append(value, to: &prefix) }
        var lower: QueryPlan.Bound?
        var upper: QueryPlan.Bound?
        let names = index.columnNames
        var text = QueryPlan.ScanText(index: index.description, equal: Array(zip(names, equal)))
        text.isExactUniqueLookup = index.isUnique && range == nil && equal.count == index.columns.count
        switch range {
        case .range(_, let lo, let hi)?:
            let name = names[equal.count]
            if let (value, inclusive) = lo {
                var e = IndexKeyEncoder(prefix: prefix.key)
                EntityIndex.append(value, to: &e)
                // An exclusive lower bound skips every entry that starts with the value.
                lower =
                    inclusive
                    ? .init(key: e.key, inclusive: true)
                    : e.key.prefixUpperBound.map { .init(key: $0, inclusive: true) }
                text.lower = (name, inclusive, value)
            }
            if let (value, inclusive) = hi {
                var e = IndexKeyEncoder(prefix: prefix.key)
                EntityIndex.append(value, to: &e)
                upper =
                    inclusive
                    ? e.key.prefixUpperBound.map { .init(key: $0, inclusive: false) }
                    : .init(key: e.key, inclusive: false)
                text.upper = (name, inclusive, value)
            }
            if lo == nil {
                // Values below the bound, but not nil (nil satisfies no comparison): start
                // after the entries whose ranged column is nil (tag 0x00).
                lower = .init(key: IndexKey(bytes: prefix.key.bytes + [0x01]), inclusive: true)
            }
            if hi == nil && !equal.isEmpty {
                upper = prefix.key.prefixUpperBound.map { .init(key: $0, inclusive: false) }
            }
        case .prefix(_, let value)?:
            var e = IndexKeyEncoder(prefix: prefix.key)
            e.append(value)
            // The encoded prefix without the string's two-byte terminator.
            let bytes = Array(e.key.bytes.dropLast(2))
            lower = .init(key: IndexKey(bytes: bytes), inclusive: true)
            upper = IndexKey(bytes: bytes).prefixUpperBound.map { .init(key: $0, inclusive: false) }
            text.prefix = (names[equal.count], value)
        default:
            if !equal.isEmpty {
                lower = .init(key: prefix.key, inclusive: true)
                upper = prefix.key.prefixUpperBound.map { .init(key: $0, inclusive: false) }
            }
        }
        return .indexScan(index: position, lower: lower, upper: upper, reverse: reverse, text: text)
    }

    func finish(_ access: QueryPlan.Access, consumed: Set<Int>, conjuncts: [QueryExpression], ordered: Bool)
        -> QueryPlan
    {
        let remaining = conjuncts.enumerated().filter { !consumed.contains($0.offset) }.map(\.element)
        let residual = remaining.isEmpty ? nil : remaining.dropFirst().reduce(remaining[0]) { .and($0, $1) }
        return QueryPlan(
            entityName: query.entity.name, access: access, residual: residual, sort: ordered ? [] : query.sort,
            orderedByIndex: ordered, offset: query.offset, limit: query.limit)
    }

    // MARK: Reading the predicate

    static func conjuncts(_ expression: QueryExpression) -> [QueryExpression] {
        if case .and(let l, let r) = expression { return conjuncts(l) + conjuncts(r) }
        return [expression]
    }

    static func disjuncts(_ expression: QueryExpression) -> [QueryExpression] {
        if case .or(let l, let r) = expression { return disjuncts(l) + disjuncts(r) }
        return [expression]
    }

    /// The property of the record under test that `expression` reads, if it is one.
    func column(_ expression: QueryExpression) -> Int? { Self.column(expression, query) }

    static func column(_ expression: QueryExpression, _ query: FetchQuery) -> Int? {
        guard case .property(.variable(let v), _, let index, _) = expression, v == query.rootVariable,
            !query.entity.properties[index].isRelationship
        else { return nil }
        return index
    }

    func isRootID(_ expression: QueryExpression) -> Bool {
        if case .modelID(.variable(let v)) = expression { return v == query.rootVariable }
        return false
    }

    func term(_ expression: QueryExpression) -> Term? {
        switch expression {
        case .compare(let op, let l, let r):
            if isRootID(l), case .constant(.identifier(let id)) = r, op == .equal { return .identifiers([id]) }
            if isRootID(r), case .constant(.identifier(let id)) = l, op == .equal { return .identifiers([id]) }
            var (column, value, operation) = (self.column(l), r, op)
            if column == nil {
                column = self.column(r)
                value = l
                operation = op.flipped
            }
            guard let column, case .constant(let constant) = value else { return nil }
            switch operation {
            case .equal: return .equal(column: column, value: constant)
            case .notEqual: return nil
            case _ where constant.isNull: return nil
            case .less: return .range(column: column, lower: nil, upper: (constant, false))
            case .lessOrEqual: return .range(column: column, lower: nil, upper: (constant, true))
            case .greater: return .range(column: column, lower: (constant, false), upper: nil)
            case .greaterOrEqual: return .range(column: column, lower: (constant, true), upper: nil)
            }
        case .property:
            if let column = column(expression), query.entity.properties[column].typeName == "Bool" {
                return .equal(column: column, value: .bool(true))
            }
        case .not(let inner):
            if let column = column(inner), query.entity.properties[column].typeName == "Bool",
                !query.entity.properties[column].isOptional
            {
                return .equal(column: column, value: .bool(false))
            }
        case .function(.startsWith, let base, .constant(.string(let prefix))?):
            if let column = column(base), !prefix.isEmpty { return .prefix(column: column, value: prefix) }
        case .function(.sequenceContains, .constant(.array(let items)), let element?) where isRootID(element):
            let ids = items.compactMap { if case .identifier(let id) = $0 { return id } else { return nil } }
            if ids.count == items.count { return .identifiers(ids) }
        case .inRange(let value, .constant(let lo), .constant(let hi), let closed):
            if let column = column(value), !lo.isNull, !hi.isNull {
                return .range(column: column, lower: (lo, true), upper: (hi, closed))
            }
        case .identifierIn(let ids):
            return .identifiers(ids.sorted())
        default:
            break
        }
        return nil
    }

}
