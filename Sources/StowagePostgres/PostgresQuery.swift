import Foundation
import Stowage

/// SQL text with its bound parameters, built up piece by piece.
struct PostgresStatement {
    var parameters: [String?] = []

    /// Binds `value` and returns its placeholder, cast to `kind`'s type.
    mutating func bind(_ value: String?, _ kind: PostgresColumnKind) -> String {
        parameters.append(value)
        return PostgresValues.placeholder(parameters.count, kind)
    }

    /// Binds `value` as-is and returns `$n::type`.
    mutating func bind(_ value: String?, as type: String) -> String {
        parameters.append(value)
        return "$\(parameters.count)::\(type)"
    }
}

/// A fetch, split between the server and memory: the part of the predicate SQL can say
/// exactly goes into `WHERE` (with bound parameters only), the rest (`residual`) is tested
/// on the snapshots that come back; the sort goes into `ORDER BY` when every key is a
/// column SQL orders as Swift does, and the window into `LIMIT`/`OFFSET` when nothing is
/// left for memory.
struct PostgresQueryPlan {
    var statement = PostgresStatement()
    /// The conditions of `WHERE`, joined by `AND`; empty for every row.
    var conditions: [String] = []
    /// What memory must still test, or `nil`.
    var residual: QueryExpression?
    var root: PredicateExpressions.VariableID?
    /// `ORDER BY` keys, or `nil` when the sort cannot be said in SQL.
    var orderBy: String?
    var limit: Int?
    var offset: Int
    /// Whether `WHERE` pins every column of a uniqueness constraint (or the key) to a value,
    /// so that at most one row matches and `ORDER BY` has nothing to order. PostgreSQL
    /// cannot see that itself: it would sort the index scan's one row.
    var atMostOneRow = false

    init(_ query: FetchQuery, table: PostgresEntityTable, store: String) {
        root = query.rootVariable
        limit = query.limit
        offset = query.offset
        // A hierarchy's table holds the rows of every entity of the hierarchy: a query that
        // reads only some of them says which.
        let read = query.entities.map(\.name)
        if table.isDiscriminated, Set(read) != Set(table.hierarchy) {
            conditions.append(
                "\"@entity\" = ANY(\(statement.bind(PostgresValues.arrayLiteral(read), as: "text[]")))")
        }
        if let identifiers = query.identifiers {
            let keys = identifiers.compactMap { id -> String? in
                guard table.shares(id.entityName), id.storeIdentifier == store, let key = id.primaryKey else {
                    return nil
                }
                return String(key)
            }
            conditions.append("\"pk\" = ANY(\(statement.bind(PostgresValues.arrayLiteral(keys), as: "bigint[]")))")
        }
        if let predicate = query.predicate {
            var translator = PostgresPredicateTranslator(table: table, store: store, root: query.rootVariable)
            var rest: [QueryExpression] = []
            var pinned: [String] = []
            for conjunct in Self.conjuncts(predicate) {
                if let sql = translator.translate(conjunct, into: &statement) {
                    conditions.append(sql.text)
                    // A string search is only a pre-filter (see the translator); memory decides.
                    if !sql.isExact { rest.append(conjunct) }
                    if sql.isExact, let column = translator.pinnedColumn(conjunct) { pinned.append(column) }
                } else {
                    rest.append(conjunct)
                }
            }
            residual = rest.isEmpty ? nil : rest.dropFirst().reduce(rest[0]) { .and($0, $1) }
            atMostOneRow =
                pinned.contains("pk") || table.uniqueness.contains { group in group.allSatisfy(pinned.contains) }
        }
        let keys = query.sort.map { key -> String? in
            guard let column = table.column(at: key.index), column.kind.isComparable else { return nil }
            // `nil` sorts first ascending and last descending, as in Swift; a column that
            // cannot hold `nil` says no more, so that its index (`ASC`, or `ASC NULLS FIRST`
            // for an optional one, as ``PostgresEntityTable`` makes it) gives the order.
            // The key names the table's column, not the select list's: a bare name in
            // `ORDER BY` means an output column of that name first, and the select list
            // reads `numeric` columns as text under their own names (see
            // ``PostgresEntityTable/selectExpression(_:)``), which would order `UInt64`s and
            // `Decimal`s as text ("10" before "9").
            let name = "\(quote(table.sqlName)).\(quote(column.name))"
            let direction = key.ascending ? "ASC" : "DESC"
            // `Decimal` orders NaN below every number, PostgreSQL's `numeric` above: NaN
            // goes first ascending (after `nil`) and last descending (before `nil`).
            let nanFirst =
                column.kind != .numeric
                ? "" : "(\(name) = 'NaN'::numeric) \(key.ascending ? "DESC NULLS FIRST" : "ASC NULLS LAST"), "
            guard column.isOptional else { return "\(nanFirst)\(name) \(direction)" }
            return "\(nanFirst)\(name) \(direction) NULLS \(key.ascending ? "FIRST" : "LAST")"
        }
        orderBy =
            keys.contains(where: { $0 == nil }) ? nil : (keys.compactMap { $0 } + ["\"pk\""]).joined(separator: ", ")
    }

    /// `a AND b AND c` as `[a, b, c]`.
    static func conjuncts(_ expression: QueryExpression) -> [QueryExpression] {
        if case .and(let a, let b) = expression { return conjuncts(a) + conjuncts(b) }
        return [expression]
    }

    /// Whether the window can go to the server: nothing is left for memory to filter.
    var windowInSQL: Bool { residual == nil }

    var whereClause: String {
        conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND ")
    }

    /// The `SELECT` for `columns` with the plan's filter, order and, when it may, window.
    func select(_ columns: String, from table: PostgresEntityTable, ordered: Bool = true) -> String {
        var sql = "SELECT \(columns) FROM \(quote(table.sqlName))\(whereClause)"
        if ordered, !atMostOneRow { sql += " ORDER BY \(orderBy ?? "\"pk\"")" }
        if windowInSQL {
            if let limit { sql += " LIMIT \(limit)" }
            if offset > 0 { sql += " OFFSET \(offset)" }
        }
        return sql
    }

    /// One line for `explain`.
    func description(_ table: PostgresEntityTable) -> String {
        var parts = ["PostgreSQL: " + select("*", from: table)]
        if let residual { parts.append("in memory: WHERE \(residual)") }
        if !windowInSQL, limit != nil || offset > 0 {
            parts.append(
                "in memory: "
                    + [offset > 0 ? "OFFSET \(offset)" : nil, limit.map { "LIMIT \($0)" }]
                    .compactMap { $0 }.joined(separator: " "))
        }
        return parts.joined(separator: "; ")
    }
}

/// Says a predicate's parts in SQL where SQL means the same as Swift, and gives up
/// (`nil`) elsewhere: those parts are tested in memory.
///
/// SQL's `NULL` (a comparison with a column that holds `nil`) means "no match", as a
/// comparison with `nil` means `false` in Swift: `WHERE` drops such a row, `AND` and `OR`
/// agree, and `NOT` is written `(…) IS NOT TRUE`, which keeps the row. `==` and `!=` with
/// `nil` become `IS NULL` and `IS NOT NULL`, and `!=` is `IS DISTINCT FROM`. Comparisons
/// stay bare (`"id" = $1`), so that the server can answer them from an index. Text is compared as bytes (`COLLATE "C"`), which orders UTF-8 as
/// Swift orders strings of Unicode scalars in canonical form. `contains` and `hasPrefix`
/// go to the server only where a match matters (not under `NOT`), and memory checks the
/// rows they let through, because the escape of U+0000 in stored text could let a row
/// through that does not match.
struct PostgresPredicateTranslator {
    let table: PostgresEntityTable
    let store: String
    let root: PredicateExpressions.VariableID?

    struct SQL {
        var text: String
        /// Whether the condition is exactly the expression (not a pre-filter).
        var isExact: Bool
    }

    /// `expression` as a condition, binding its values into `statement`; `nil`, with
    /// nothing bound, when it cannot be said exactly (or as a pre-filter).
    mutating func translate(_ expression: QueryExpression, into statement: inout PostgresStatement) -> SQL? {
        let saved = statement
        if let sql = condition(expression, positive: true, &statement) { return sql }
        statement = saved
        return nil
    }

    private func condition(_ e: QueryExpression, positive: Bool, _ s: inout PostgresStatement) -> SQL? {
        switch e {
        case .constant(.bool(let b)):
            return SQL(text: b ? "TRUE" : "FALSE", isExact: true)
        case .property:
            guard let column = column(e), column.kind == .boolean else { return nil }
            return SQL(text: quote(column.name), isExact: true)
        case .and(let a, let b):
            guard let x = condition(a, positive: positive, &s), let y = condition(b, positive: positive, &s) else {
                return nil
            }
            return SQL(text: "(\(x.text) AND \(y.text))", isExact: x.isExact && y.isExact)
        case .or(let a, let b):
            guard let x = condition(a, positive: positive, &s), let y = condition(b, positive: positive, &s) else {
                return nil
            }
            return SQL(text: "(\(x.text) OR \(y.text))", isExact: x.isExact && y.isExact)
        case .not(let a):
            guard let x = condition(a, positive: !positive, &s), x.isExact else { return nil }
            return SQL(text: "(\(x.text)) IS NOT TRUE", isExact: true)
        case .compare(let op, let l, let r):
            return comparison(op, l, r, &s).map { SQL(text: $0, isExact: true) }
        case .inRange(let value, let lower, let upper, let closed):
            guard let column = column(value), column.kind.isComparable,
                case .constant(let lo) = lower, case .constant(let hi) = upper, !lo.isNull, !hi.isNull,
                !lo.isNaN, !hi.isNaN, let a = parameter(lo, column), let b = parameter(hi, column)
            else { return nil }
            let name = quote(column.name)
            let text =
                "(\(name) >= \(s.bind(a, column.kind)) AND \(name) \(closed ? "<=" : "<") \(s.bind(b, column.kind)))"
            return SQL(text: text, isExact: true)
        case .function(.contains, let haystack, let needle?), .function(.startsWith, let haystack, let needle?):
            guard positive, let column = column(haystack), column.kind == .text,
                case .constant(.string(let pattern)) = needle
            else { return nil }
            let bound = s.bind(PostgresValues.escapeText(pattern), .text)
            let test =
                if case .function(.contains, _, _) = e { "strpos(\(quote(column.name)), \(bound)) > 0" } else {
                    "starts_with(\(quote(column.name)), \(bound))"
                }
            return SQL(text: test, isExact: false)
        case .function(.sequenceContains, .constant(.array(let items)), let element?):
            guard let column = column(element), column.kind != .json else { return nil }
            var texts: [String?] = []
            for item in items {
                guard !item.isNull, let text = parameter(item, column) else { return nil }
                texts.append(text)
            }
            let arrayType = column.kind == .timestamp ? "double precision[]" : column.kind.castType + "[]"
            let bound = s.bind(PostgresValues.arrayLiteral(texts), as: arrayType)
            let value =
                column.kind == .timestamp
                ? "EXTRACT(EPOCH FROM \(quote(column.name)))::double precision" : quote(column.name)
            return SQL(text: "\(value) = ANY(\(bound))", isExact: true)
        case .identifierIn(let identifiers):
            let keys = identifiers.compactMap { id -> String? in
                guard table.shares(id.entityName), id.storeIdentifier == store, let key = id.primaryKey else {
                    return nil
                }
                return String(key)
            }
            return SQL(
                text: "\"pk\" = ANY(\(s.bind(PostgresValues.arrayLiteral(keys), as: "bigint[]")))", isExact: true)
        default:
            return nil
        }
    }

    /// The property (or `pk`) whose column `e` pins to one value: an equality of a column
    /// of the record with a constant other than `nil` (SQL's `=`, which `NULL` never passes).
    func pinnedColumn(_ e: QueryExpression) -> String? {
        guard case .compare(.equal, let l, let r) = e else { return nil }
        for (side, other) in [(l, r), (r, l)] {
            if let column = column(side), case .constant(let value) = other, !value.isNull { return column.property }
        }
        return nil
    }

    /// `l op r` where one side is a column of the record and the other a constant or a
    /// column of the same kind.
    private func comparison(
        _ op: QueryExpression.ComparisonOperator, _ l: QueryExpression, _ r: QueryExpression,
        _ s: inout PostgresStatement
    ) -> String? {
        if let a = column(l), let b = column(r) {
            guard a.kind == b.kind, a.kind.isComparable || op == .equal || op == .notEqual, a.kind != .json else {
                return nil
            }
            switch op {
            case .equal: return "(\(quote(a.name)) IS NOT DISTINCT FROM \(quote(b.name)))"
            case .notEqual: return "(\(quote(a.name)) IS DISTINCT FROM \(quote(b.name)))"
            default:
                // (Two `Decimal`s, either of which may be NaN, are left to memory.)
                guard a.kind != .numeric else { return nil }
                let test = "\(quote(a.name)) \(Self.sql(op)) \(quote(b.name))"
                guard a.kind.isFloatingPoint else { return test }
                return "(\(test) AND \(Self.notNaN(a)) AND \(Self.notNaN(b)))"
            }
        }
        let (columnSide, constantSide, flipped): (QueryExpression, QueryExpression, Bool)
        if column(l) != nil, case .constant = r {
            (columnSide, constantSide, flipped) = (l, r, false)
        } else if column(r) != nil, case .constant = l {
            (columnSide, constantSide, flipped) = (r, l, true)
        } else {
            return nil
        }
        guard let column = column(columnSide), case .constant(let value) = constantSide, column.kind != .json else {
            return nil
        }
        let name = quote(column.name)
        if value.isNull {
            switch op {
            case .equal: return "(\(name) IS NULL)"
            case .notEqual: return "(\(name) IS NOT NULL)"
            default: return nil
            }
        }
        guard column.kind.isComparable || op == .equal || op == .notEqual, let text = parameter(value, column) else {
            return nil
        }
        let operation = flipped ? op.flipped : op
        // PostgreSQL orders NaN above every number (and equal to itself); in Swift NaN is
        // neither less nor greater than anything. An order with NaN is false, and a NaN
        // in the column must not pass `>` or `>=`. (`==` and `!=` stay as they are: NaN
        // equals NaN in SQL as in ``SnapshotValue/matches(_:)``, which the other stores use.)
        if column.kind.isFloatingPoint, operation != .equal, operation != .notEqual {
            if case .double(let d) = value, d.isNaN { return "FALSE" }
            let test = "\(name) \(Self.sql(operation)) \(s.bind(text, column.kind))"
            return operation == .greater || operation == .greaterOrEqual ? "(\(test) AND \(Self.notNaN(column)))" : test
        }
        // `Decimal` orders NaN below every number (and equal to itself), PostgreSQL's
        // `numeric` above every number: a NaN in the column passes `<` and `<=` and not
        // `>` or `>=`, and every number is greater than NaN.
        if column.kind == .numeric, operation != .equal, operation != .notEqual {
            let isNaN = "\(name) = 'NaN'::numeric"
            if value.isNaN {
                switch operation {
                case .less: return "FALSE"
                case .lessOrEqual: return "(\(isNaN))"
                case .greater: return Self.notNaN(column)
                default: return "(\(name) IS NOT NULL)"
                }
            }
            let test = "\(name) \(Self.sql(operation)) \(s.bind(text, column.kind))"
            switch operation {
            case .less, .lessOrEqual: return "(\(test) OR \(isNaN))"
            default: return "(\(test) AND \(Self.notNaN(column)))"
            }
        }
        let bound = s.bind(text, column.kind)
        switch operation {
        case .equal: return "\(name) = \(bound)"
        case .notEqual: return "(\(name) IS DISTINCT FROM \(bound))"
        default: return "\(name) \(Self.sql(operation)) \(bound)"
        }
    }

    /// That a floating-point column is not NaN, said as a bound on it (NaN is the greatest
    /// value in PostgreSQL), so that an index range scan can still answer the comparison.
    private static func notNaN(_ column: PostgresEntityTable.Column) -> String {
        "\(quote(column.name)) < 'NaN'::\(column.kind.sqlType)"
    }

    /// The column a value expression reads: a stored attribute or to-one relationship of
    /// the record under test, or its identifier (`pk`).
    private func column(_ e: QueryExpression) -> PostgresEntityTable.Column? {
        switch e {
        case .property(.variable(let variable), let entity, let index, _)
        where variable == root && entity == table.name:
            return table.column(at: index)
        case .modelID(.variable(let variable)) where variable == root:
            return PostgresEntityTable.Column(name: "pk", index: -1, kind: .reference(table.name), isOptional: false)
        default:
            return nil
        }
    }

    /// A constant's text for `column`, or `nil` when the column cannot take it (the
    /// comparison then stays in memory).
    private func parameter(_ value: SnapshotValue, _ column: PostgresEntityTable.Column) -> String? {
        if case .reference(let destination) = column.kind {
            // A reference to a model of a hierarchy may hold any of its entities' models.
            let root = table.roots[destination]
            guard case .identifier(let id) = value,
                id.entityName == destination || (root != nil && table.roots[id.entityName] == root),
                id.storeIdentifier == store
            else {
                return nil
            }
        }
        return try? PostgresValues.parameter(value, column.kind, column: column.name)
    }

    private static func sql(_ op: QueryExpression.ComparisonOperator) -> String {
        switch op {
        case .equal: "="
        case .notEqual: "<>"
        case .less: "<"
        case .lessOrEqual: "<="
        case .greater: ">"
        case .greaterOrEqual: ">="
        }
    }

}

extension SnapshotValue {
    /// Whether the value is a floating-point or decimal NaN.
    fileprivate var isNaN: Bool {
        switch self {
        case .double(let d): d.isNaN
        case .decimal(let d): d.isNaN
        default: false
        }
    }
}
