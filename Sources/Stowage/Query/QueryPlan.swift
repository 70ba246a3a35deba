import Foundation
import IndexKey

/// How a store answers one fetch: which records it reads, in what order, what it still
/// has to test, and where it stops.
///
/// ``description`` is the `explain` text, which tests assert on, as GRDB's tests assert
/// on SQL, so that a planner regression shows up as a diff.
public struct QueryPlan: Sendable, CustomStringConvertible {
    /// One bound of a key range.
    struct Bound: Sendable {
        let key: IndexKey
        let inclusive: Bool
    }

    /// How records are found.
    enum Access: Sendable {
        /// Every record, in primary-key order.
        case fullScan
        /// The records with these identifiers.
        case identifiers([PersistentIdentifier])
        /// The entries of index `index` between `lower` and `upper`, forwards or backwards.
        indirect case indexScan(index: Int, lower: Bound?, upper: Bound?, reverse: Bool, text: ScanText)
        /// The one record a one-column unique index holds for a value: one look-up, through
        /// the index's hash table when it has one (``UniqueKeyHint``). It reads as the index
        /// scan it stands for (`INDEX Person(email) EQ email = …`).
        indirect case uniqueKey(UniqueLookup, text: ScanText)
        /// The union of several accesses, without duplicates.
        case union([Access])
    }

    /// A look-up of one value in a one-column unique index: the index, its column, the
    /// value's encoded key and the index's hash table. ``QueryPlanner/uniqueLookup(_:_:)``
    /// finds it, and the fetch runs it without building the rest of a plan.
    struct UniqueLookup: Sendable {
        let index: Int
        let column: Int
        let key: IndexKey
        let hint: UniqueKeyHint?
    }

    /// What an index scan reads, kept as values and turned into text only for `explain`.
    struct ScanText: Sendable, CustomStringConvertible {
        let index: String
        let equal: [(String, SnapshotValue)]
        var lower: (String, Bool, SnapshotValue)?
        var upper: (String, Bool, SnapshotValue)?
        var prefix: (String, String)?
        /// Whether every column of a unique index is fixed, so one lookup answers.
        var isExactUniqueLookup = false

        init(index: String, equal: [(String, SnapshotValue)]) {
            self.index = index
            self.equal = equal
        }

        var description: String {
            var text = index
            if !equal.isEmpty { text += " EQ " + equal.map { "\($0.0) = \($0.1)" }.joined(separator: ", ") }
            if let (name, inclusive, value) = lower { text += " RANGE \(name) \(inclusive ? ">=" : ">") \(value)" }
            if let (name, inclusive, value) = upper {
                text += "\(lower == nil ? " RANGE" : " AND") \(name) \(inclusive ? "<=" : "<") \(value)"
            }
            if let (name, value) = prefix { text += " PREFIX \(name) \(String(reflecting: value))" }
            return text
        }
    }

    let entityName: String
    let access: Access
    /// What must still be tested on each record; `nil` when the access is exact.
    let residual: QueryExpression?
    /// The sort still to do after access and filtering; empty when the access gives the order.
    let sort: [SortKey]
    /// Whether the access already yields the requested order.
    let orderedByIndex: Bool
    let offset: Int
    let limit: Int?

    /// The plan as ``ModelContext/explain(_:)`` prints it: the access (`SCAN`, `IDS`,
    /// `INDEX`, …), then `FILTER`, `ORDER BY INDEX` or `SORT`, `OFFSET` and `LIMIT` as they
    /// apply, joined by `; `.
    public var description: String {
        var parts = [Self.describe(access, entityName)]
        if let residual { parts.append("FILTER \(residual)") }
        if orderedByIndex {
            parts.append("ORDER BY INDEX")
        } else if !sort.isEmpty {
            parts.append("SORT " + sort.map(\.description).joined(separator: ", "))
        }
        if offset > 0 { parts.append("OFFSET \(offset)") }
        if let limit { parts.append("LIMIT \(limit)") }
        return parts.joined(separator: "; ")
    }

    static func describe(_ access: Access, _ entityName: String) -> String {
        switch access {
        case .fullScan: return "SCAN \(entityName)"
        case .identifiers(let ids): return "IDS \(entityName) (\(ids.count))"
        case .indexScan(_, _, _, let reverse, let text): return "INDEX \(text)" + (reverse ? " REVERSE" : "")
        case .uniqueKey(_, let text): return "INDEX \(text)"
        case .union(let parts): return "UNION(" + parts.map { describe($0, entityName) }.joined(separator: " | ") + ")"
        }
    }
}
