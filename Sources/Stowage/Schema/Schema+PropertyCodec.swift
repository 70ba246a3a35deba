import Foundation

/// Conversions between a property's Swift values and ``SnapshotValue`` for the common
/// leaf types, chosen once per property from its static type, so that saving and
/// fetching do not walk a chain of dynamic casts for every value.
enum PropertyCodec {
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
        switch type {
        case is String.Type:
            return ({ ($0 as? String).map(SnapshotValue.string) }, { if case .string(let v) = $0 { v } else { nil } })
        case is Int.Type:
            return (
                { ($0 as? Int).map { .int(Int64($0)) } },
                { if case .int(let v) = $0 { Int(exactly: v) } else { nil } }
            )
        case is Int64.Type:
            return ({ ($0 as? Int64).map(SnapshotValue.int) }, { if case .int(let v) = $0 { v } else { nil } })
        case is Int32.Type:
            return (
                { ($0 as? Int32).map { .int(Int64($0)) } },
                { if case .int(let v) = $0 { Int32(exactly: v) } else { nil } }
            )
        case is Double.Type:
            return ({ ($0 as? Double).map(SnapshotValue.double) }, { if case .double(let v) = $0 { v } else { nil } })
        case is Float.Type:
            return (
                { ($0 as? Float).map { .double(Double($0)) } },
                { if case .double(let v) = $0 { Float(v) } else { nil } }
            )
        case is Bool.Type:
            return ({ ($0 as? Bool).map(SnapshotValue.bool) }, { if case .bool(let v) = $0 { v } else { nil } })
        case is Date.Type:
            return ({ ($0 as? Date).map(SnapshotValue.date) }, { if case .date(let v) = $0 { v } else { nil } })
        case is UUID.Type:
            return ({ ($0 as? UUID).map(SnapshotValue.uuid) }, { if case .uuid(let v) = $0 { v } else { nil } })
        case is Data.Type:
            return ({ ($0 as? Data).map(SnapshotValue.data) }, { if case .data(let v) = $0 { v } else { nil } })
        case is URL.Type:
            return ({ ($0 as? URL).map(SnapshotValue.url) }, { if case .url(let v) = $0 { v } else { nil } })
        case is Decimal.Type:
            return (
                { ($0 as? Decimal).map(SnapshotValue.decimal) }, { if case .decimal(let v) = $0 { v } else { nil } }
            )
        default:
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
