import Foundation

/// The value form of one stored property, as it crosses the store boundary.
///
/// Every supported Swift type maps onto one case: integers of every width become
/// ``int(_:)`` or ``uint(_:)``, `Float` and `Double` become ``double(_:)``, Codable
/// enums become their raw value (or an object for enums with payloads), and Codable
/// structs become ``object(_:)`` with one entry per field. Relationships become
/// ``identifier(_:)`` values (an array of them for to-many).
///
/// Stowage goes further than SwiftData here: the value form is public, so a custom
/// ``DataStore`` can read and write snapshots without knowing the model classes.
public enum SnapshotValue: Sendable, Hashable, Codable {
    /// No value: an optional property that is `nil`.
    case null
    /// A `Bool`.
    case bool(Bool)
    /// A signed integer of any width.
    case int(Int64)
    /// An unsigned integer of any width.
    case uint(UInt64)
    /// A `Double`, or a `Float` widened to one.
    case double(Double)
    /// A `String`, or the raw value of a `String`-backed enum.
    case string(String)
    /// A `Date`.
    case date(Date)
    /// A `Data` value.
    case data(Data)
    /// A `UUID`.
    case uuid(UUID)
    /// A `URL`.
    case url(URL)
    /// A `Decimal`.
    case decimal(Decimal)
    /// An array or set, or a to-many relationship's identifiers, in order.
    indirect case array([SnapshotValue])
    /// A Codable value encoded with keys (a struct's fields, an enum case with payloads, a
    /// dictionary), by key.
    indirect case object([String: SnapshotValue])
    /// A to-one relationship: the identifier of the related model.
    case identifier(PersistentIdentifier)

    /// Whether the value is ``null``.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// A short name of the case, used in error messages.
    public var kindName: String {
        switch self {
        case .null: "null"
        case .bool: "Bool"
        case .int: "Int"
        case .uint: "UInt"
        case .double: "Double"
        case .string: "String"
        case .date: "Date"
        case .data: "Data"
        case .uuid: "UUID"
        case .url: "URL"
        case .decimal: "Decimal"
        case .array: "Array"
        case .object: "Object"
        case .identifier: "PersistentIdentifier"
        }
    }
}

extension SnapshotValue {
    /// The value as a `Double`, for any numeric case.
    var numericDouble: Double? {
        switch self {
        case .int(let v): Double(v)
        case .uint(let v): Double(v)
        case .double(let v): v
        case .decimal(let v): NSDecimalNumber(decimal: v).doubleValue
        default: nil
        }
    }

    var isNumeric: Bool {
        switch self {
        case .int, .uint, .double, .decimal: true
        default: false
        }
    }
}

// MARK: - Ordering

extension SnapshotValue {
    /// The rank of each case in the total order used for sorting mixed values.
    /// `null` sorts first, as SwiftData sorts `nil` first in ascending order.
    private var rank: Int {
        switch self {
        case .null: 0
        case .bool: 1
        case .int, .uint, .double, .decimal: 2
        case .string: 3
        case .date: 4
        case .data: 5
        case .uuid: 6
        case .url: 7
        case .array: 8
        case .object: 9
        case .identifier: 10
        }
    }

    /// A total order over snapshot values.
    ///
    /// Numbers compare by value across integer, floating-point and decimal cases.
    /// Strings compare as Swift's `<` does. `null` is less than everything else.
    /// Values of unrelated kinds order by kind, so that sorting never fails.
    ///
    /// - Complexity: O(*n*) in the size of the values for strings, data and arrays.
    public static func compare(_ lhs: SnapshotValue, _ rhs: SnapshotValue) -> ComparisonResult {
        switch (lhs, rhs) {
        case (.null, .null): return .orderedSame
        case (.bool(let a), .bool(let b)): return a == b ? .orderedSame : (!a ? .orderedAscending : .orderedDescending)
        case (.int(let a), .int(let b)): return order(a, b)
        case (.uint(let a), .uint(let b)): return order(a, b)
        case (.int(let a), .uint(let b)): return a < 0 ? .orderedAscending : order(UInt64(a), b)
        case (.uint(let a), .int(let b)): return b < 0 ? .orderedDescending : order(a, UInt64(b))
        case (.decimal(let a), .decimal(let b)): return order(a, b)
        case (.string(let a), .string(let b)): return order(a, b)
        case (.date(let a), .date(let b)): return order(a, b)
        case (.data(let a), .data(let b)): return lexicographic(Array(a), Array(b))
        case (.uuid(let a), .uuid(let b)): return order(a.uuidString, b.uuidString)
        case (.url(let a), .url(let b)): return order(a.absoluteString, b.absoluteString)
        case (.identifier(let a), .identifier(let b)): return order(a, b)
        case (.array(let a), .array(let b)):
            for (x, y) in zip(a, b) {
                let c = compare(x, y)
                if c != .orderedSame { return c }
            }
            return order(a.count, b.count)
        case (.object(let a), .object(let b)):
            let keys = Set(a.keys).union(b.keys).sorted()
            for key in keys {
                let c = compare(a[key] ?? .null, b[key] ?? .null)
                if c != .orderedSame { return c }
            }
            return .orderedSame
        default:
            if lhs.isNumeric && rhs.isNumeric {
                let a = lhs.numericDouble ?? 0
                let b = rhs.numericDouble ?? 0
                if a.isNaN || b.isNaN { return order(a.isNaN ? 1 : 0, b.isNaN ? 1 : 0) }
                return order(a, b)
            }
            return order(lhs.rank, rhs.rank)
        }
    }

    private static func order<T: Comparable>(_ a: T, _ b: T) -> ComparisonResult {
        a < b ? .orderedAscending : (b < a ? .orderedDescending : .orderedSame)
    }

    private static func lexicographic(_ a: [UInt8], _ b: [UInt8]) -> ComparisonResult {
        a.lexicographicallyPrecedes(b) ? .orderedAscending : (a == b ? .orderedSame : .orderedDescending)
    }

    /// Equality as predicates see it: numbers compare by value across cases.
    func matches(_ other: SnapshotValue) -> Bool {
        if self.isNumeric && other.isNumeric {
            return Self.compare(self, other) == .orderedSame
        }
        return self == other
    }
}

extension SnapshotValue: CustomStringConvertible {
    /// The value as a predicate would write it: `nil`, numbers and Booleans as Swift
    /// spells them, strings quoted.
    public var description: String {
        switch self {
        case .null: "nil"
        case .bool(let v): String(v)
        case .int(let v): String(v)
        case .uint(let v): String(v)
        case .double(let v): String(v)
        case .string(let v): String(reflecting: v)
        case .date(let v): v.formatted(.iso8601)
        case .data(let v): "<\(v.count) bytes>"
        case .uuid(let v): v.uuidString
        case .url(let v): v.absoluteString
        case .decimal(let v): "\(v)"
        case .array(let v): "[" + v.map(\.description).joined(separator: ", ") + "]"
        case .object(let v):
            "{" + v.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value.description)" }.joined(separator: ", ")
                + "}"
        case .identifier(let v): v.description
        }
    }
}
