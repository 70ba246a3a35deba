import Foundation

/// Conversions between a property's Swift values and ``SnapshotValue`` for the common
/// leaf types, chosen once per property from its static type, so that saving and
/// fetching do not walk a chain of dynamic casts for every value.
package enum PropertyCodec {
    typealias Encode = @Sendable (Any) -> SnapshotValue?
    typealias Decode = @Sendable (SnapshotValue) -> Any?

    /// The fast conversions for `Value`, or `nil` when it needs the general path.
    static func fast<Value>(_ type: Value.Type) -> (Encode, Decode)? {
        if let pair = leaf(type) { return pair }
        if let optional = type as? any _OptionalValue.Type, let wrapped = leaf(optional._wrappedType) {
            nonisolated(unsafe) let none = optional._noneAsAny  // an immutable boxed nil
            return (
                { any in
                    guard let optional = any as? any _OptionalValue else { return nil }
                    guard let value = optional._wrapped else { return .null }
                    return wrapped.0(value)
                },
                { snapshot in
                    if case .null = snapshot { return none }
                    return wrapped.1(snapshot).flatMap { optional._wrap($0) }
                }
            )
        }
        return nil
    }

    private static func leaf(_ type: Any.Type) -> (Encode, Decode)? {
        switch leafCase(type) {
        case .string:
            return ({ ($0 as? String).map(SnapshotValue.string) }, { if case .string(let v) = $0 { v } else { nil } })
        case .int:
            return (
                { ($0 as? Int).map { .int(Int64($0)) } },
                { if case .int(let v) = $0 { Int(exactly: v) } else { nil } }
            )
        case .int64:
            return ({ ($0 as? Int64).map(SnapshotValue.int) }, { if case .int(let v) = $0 { v } else { nil } })
        case .int32:
            return (
                { ($0 as? Int32).map { .int(Int64($0)) } },
                { if case .int(let v) = $0 { Int32(exactly: v) } else { nil } }
            )
        case .double:
            return ({ ($0 as? Double).map(SnapshotValue.double) }, { if case .double(let v) = $0 { v } else { nil } })
        case .float:
            return (
                { ($0 as? Float).map { .double(Double($0)) } },
                { if case .double(let v) = $0 { Float(v) } else { nil } }
            )
        case .bool:
            return ({ ($0 as? Bool).map(SnapshotValue.bool) }, { if case .bool(let v) = $0 { v } else { nil } })
        case .date:
            return ({ ($0 as? Date).map(SnapshotValue.date) }, { if case .date(let v) = $0 { v } else { nil } })
        case .uuid:
            return ({ ($0 as? UUID).map(SnapshotValue.uuid) }, { if case .uuid(let v) = $0 { v } else { nil } })
        case .data:
            return ({ ($0 as? Data).map(SnapshotValue.data) }, { if case .data(let v) = $0 { v } else { nil } })
        case .url:
            return ({ ($0 as? URL).map(SnapshotValue.url) }, { if case .url(let v) = $0 { v } else { nil } })
        case .decimal:
            return (
                { ($0 as? Decimal).map(SnapshotValue.decimal) }, { if case .decimal(let v) = $0 { v } else { nil } }
            )
        case nil:
            return nil
        }
    }
}

extension Optional {
    static var _noneAsAny: Any { Self.none as Any }
}

extension _OptionalValue {
    /// `nil` of this optional type, boxed.
    static var _noneAsAny: Any { _none }
    /// `value` wrapped in this optional type, when it has the wrapped type.
    static func _wrap(_ value: Any) -> Any? {
        value as? Self
    }
}

extension PropertyCodec {
    /// Which stored values the fast conversion of a property's type decodes: exactly the
    /// values for which ``fast(_:)``'s decode gives a value. A model whose every value
    /// passes can keep the values as fetched and decode each one when it is read, without
    /// a decode that could fail at that point (`ModelBackingData`).
    package struct CaseCheck: Sendable, Hashable {
        package enum Leaf: Sendable, Hashable {
            case string, int, int32, int64, double, float, bool, date, uuid, data, url, decimal
        }
        package let leaf: Leaf
        /// `Optional` of the leaf type: `.null` decodes too.
        package let isOptional: Bool

        /// Switches on the value alone, then compares the leaf: a switch over the pair
        /// copied the value into it, a retain and a release for a string.
        func accepts(_ value: SnapshotValue) -> Bool {
            switch value {
            case .null: isOptional
            case .string: leaf == .string
            case .int(let v):
                switch leaf {
                case .int64: true
                case .int: Int(exactly: v) != nil
                case .int32: Int32(exactly: v) != nil
                default: false
                }
            case .double: leaf == .double || leaf == .float
            case .bool: leaf == .bool
            case .date: leaf == .date
            case .uuid: leaf == .uuid
            case .data: leaf == .data
            case .url: leaf == .url
            case .decimal: leaf == .decimal
            default: false
            }
        }
    }

    /// The check for `Value`, when ``fast(_:)`` has conversions for it.
    static func caseCheck<Value>(_ type: Value.Type) -> CaseCheck? {
        if let leaf = leafCase(type) { return CaseCheck(leaf: leaf, isOptional: false) }
        if let optional = type as? any _OptionalValue.Type, let leaf = leafCase(optional._wrappedType) {
            return CaseCheck(leaf: leaf, isOptional: true)
        }
        return nil
    }

    /// The common leaf type `type` is, if it is one: the one list of them that both the
    /// fast conversions and their checks follow.
    static func leafCase(_ type: Any.Type) -> CaseCheck.Leaf? {
        switch type {
        case is String.Type: .string
        case is Int.Type: .int
        case is Int64.Type: .int64
        case is Int32.Type: .int32
        case is Double.Type: .double
        case is Float.Type: .float
        case is Bool.Type: .bool
        case is Date.Type: .date
        case is UUID.Type: .uuid
        case is Data.Type: .data
        case is URL.Type: .url
        case is Decimal.Type: .decimal
        default: nil
        }
    }
}
