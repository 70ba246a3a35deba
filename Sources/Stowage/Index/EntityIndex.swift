import BTree
import Foundation
import IndexKey

/// One B+tree index over some of an entity's properties: a `#Index` entry, a `#Unique`
/// entry, or an `@Attribute(.unique)` property.
///
/// Keys are the order-preserving encoding of the indexed values (`Formats/index-key.md`).
/// A unique index maps that tuple to the record's primary key; a non-unique index appends
/// the primary key to the tuple, so equal tuples stay distinct and sort by primary key.
package struct EntityIndex: Sendable, CustomStringConvertible {
    /// How a column's values are encoded, so constants can be coerced to match.
    enum ColumnKind: Sendable {
        case int, uint, double, bool, other
    }

    let entityName: String
    let columns: [Int]
    let columnNames: [String]
    let columnKinds: [ColumnKind]
    let isUnique: Bool
    var tree: BTree<IndexKey, Int64>
    /// For a one-column unique index of at least ``UniqueKeyHint/minimumEntries``
    /// records, a hash table of candidates beside the tree (see ``UniqueKeyHint``). Copies
    /// of the index share it.
    var hint: UniqueKeyHint?
    /// `Entity(column, …)`, as `explain` shows it.
    package let description: String

    init(entity: Schema.Entity, columns names: [String], isUnique: Bool) {
        self.entityName = entity.name
        self.columnNames = names
        self.columns = names.compactMap { entity.property(named: $0)?.index }
        self.columnKinds = names.map { name in
            switch entity.property(named: name)?.typeName {
            case "Int", "Int8", "Int16", "Int32", "Int64": .int
            case "UInt", "UInt8", "UInt16", "UInt32", "UInt64": .uint
            case "Double", "Float", "CGFloat": .double
            case "Bool": .bool
            default: .other
            }
        }
        self.isUnique = isUnique
        self.tree = BTree()
        self.description = "\(entity.name)(\(names.joined(separator: ", ")))"
    }

    /// The encoded tuple of a record's indexed values.
    func tupleKey(_ snapshot: DefaultSnapshot) -> IndexKey {
        var encoder = IndexKeyEncoder()
        for column in columns {
            Self.append(column < snapshot.values.count ? snapshot.values[column] : .null, to: &encoder)
        }
        return encoder.key
    }

    /// The key a record is stored under.
    func entryKey(_ snapshot: DefaultSnapshot, primaryKey: Int64) -> IndexKey {
        let tuple = tupleKey(snapshot)
        return isUnique ? tuple : tuple.appendingPrimaryKey(primaryKey)
    }

    /// Whether a column's values can be ordered and ranged over by key.
    func isOrderable(column position: Int) -> Bool { true }

    /// Encodes one value as a key component.
    package static func append(_ value: SnapshotValue, to encoder: inout IndexKeyEncoder) {
        switch value {
        case .null: encoder.appendNil()
        case .bool(let v): encoder.append(v)
        case .int(let v): encoder.append(v)
        case .uint(let v): encoder.append(v)
        case .double(let v): encoder.append(v)
        case .string(let v): encoder.append(v)
        case .date(let v): encoder.append(v)
        case .data(let v): encoder.append(v)
        case .uuid(let v): encoder.append(v)
        case .url(let v): encoder.append(v.absoluteString)
        case .decimal(let v):
            // Ordered by its Double value, with the exact text after it so that unique
            // constraints compare exactly. The planner does not range over decimals.
            encoder.append(NSDecimalNumber(decimal: v).doubleValue)
            encoder.append("\(v)")
        case .array, .object, .identifier:
            // Not orderable; encoded exactly for equality (unique constraints).
            encoder.append(Array(value.description.utf8))
        }
    }

    /// `value` converted to the way the column at `position` stores numbers, or `nil`
    /// when it cannot be converted exactly (the term then stays a filter).
    func coerce(_ value: SnapshotValue, column position: Int) -> SnapshotValue? {
        switch (columnKinds[position], value) {
        case (_, .null): return .null
        case (.int, .int), (.uint, .uint), (.double, .double), (.bool, .bool): return value
        case (.int, .uint(let v)): return Int64(exactly: v).map(SnapshotValue.int)
        case (.int, .double(let v)): return Int64(exactly: v).map(SnapshotValue.int)
        case (.uint, .int(let v)): return UInt64(exactly: v).map(SnapshotValue.uint)
        case (.uint, .double(let v)): return UInt64(exactly: v).map(SnapshotValue.uint)
        case (.double, .int(let v)): return Double(exactly: v).map(SnapshotValue.double)
        case (.double, .uint(let v)): return Double(exactly: v).map(SnapshotValue.double)
        case (.other, .decimal), (.other, .array), (.other, .object), (.other, .identifier): return nil
        case (.other, let v): return v
        default: return nil
        }
    }
}
