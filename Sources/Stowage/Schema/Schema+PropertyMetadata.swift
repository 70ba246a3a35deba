import Foundation

extension Schema {
    /// One stored property of a model class, as the `@Model` macro describes it.
    ///
    /// SwiftData's `PropertyMetadata` carries a name, a key path, a default value and the
    /// attribute or relationship options. Stowage's also carries the value type and how to
    /// convert values to and from ``SnapshotValue``, which the macro captures through the
    /// property's static type.
    public struct PropertyMetadata: @unchecked Sendable, CustomStringConvertible {
        // @unchecked Sendable: every stored field is immutable after the macro builds it;
        // the key path is immutable, and the conversion closures capture only metatypes.

        /// The property's name.
        public let name: String
        /// The key path of the property on its model class.
        public let keypath: AnyKeyPath
        /// The property's default value from its declaration, if it has one.
        public let defaultValue: Any?
        /// The ``Schema/Attribute`` or ``Schema/Relationship`` options.
        public var metadata: Any? { relationship ?? attribute }
        /// The attribute options, for an attribute.
        public let attribute: Attribute?
        /// The relationship, for a relationship.
        public let relationship: Relationship?
        /// The Swift type of the value, for messages and schema comparison.
        public let typeName: String
        /// Whether the property can hold `nil`.
        public let isOptional: Bool
        /// The property's position in snapshots.
        public internal(set) var index: Int = 0

        let encode: @Sendable (Any) throws -> SnapshotValue
        let decode: @Sendable (SnapshotValue) throws -> Any
        /// The stored values `decode` turns into the property's type without fail, when its
        /// type has fast conversions and no transformer.
        package internal(set) var caseCheck: PropertyCodec.CaseCheck?

        /// Whether the property is a relationship.
        public var isRelationship: Bool { relationship != nil }

        /// The name the property had in an earlier schema, if any.
        public var originalName: String? { attribute?.originalName ?? relationship?.originalName }

        /// The property as a declaration would name it: `name: String?`.
        public var description: String { "\(name): \(typeName)\(isOptional ? "?" : "")" }

        init(
            name: String, keypath: AnyKeyPath, defaultValue: Any?, attribute: Attribute?,
            relationship: Relationship?, typeName: String, isOptional: Bool,
            encode: @escaping @Sendable (Any) throws -> SnapshotValue,
            decode: @escaping @Sendable (SnapshotValue) throws -> Any
        ) {
            self.name = name
            self.keypath = keypath
            self.defaultValue = defaultValue
            self.attribute = attribute
            self.relationship = relationship
            self.typeName = typeName
            self.isOptional = isOptional
            self.encode = encode
            self.decode = decode
        }
    }
}

/// Lets code that only has an `Any` find out whether it holds an `Optional`.
protocol _OptionalValue: SendableMetatype {
    var _wrapped: Any? { get }
    static var _wrappedType: Any.Type { get }
    static var _none: Self { get }
}

extension Optional: _OptionalValue {
    var _wrapped: Any? { self.map { $0 as Any } }
    static var _wrappedType: Any.Type { Wrapped.self }
    static var _none: Self { .none }
}

// MARK: - Builders the @Model macro calls

extension Schema.PropertyMetadata {
    /// Describes a Codable attribute. Called by the code `@Model` generates.
    public static func _attribute<Root, Value: Codable>(
        _ keyPath: KeyPath<Root, Value>, name: String, defaultValue: Value? = nil,
        attribute: Schema.Attribute? = nil
    ) -> Schema.PropertyMetadata {
        let transformer = attribute?.transformerType
        let isOptional = Value.self is any _OptionalValue.Type
        let fast = transformer == nil ? PropertyCodec.fast(Value.self) : nil
        var property = Schema.PropertyMetadata(
            name: name, keypath: keyPath, defaultValue: defaultValue,
            attribute: attribute ?? Schema.Attribute(), relationship: nil,
            typeName: typeName(Value.self), isOptional: isOptional,
            encode: CodableCoding<Value>(fast: fast, transformer: transformer).encode,
            decode: CodableCoding<Value>(fast: fast, transformer: transformer).decode)
        if fast != nil { property.caseCheck = PropertyCodec.caseCheck(Value.self) }
        return property
    }

    /// Describes an attribute whose type is not Codable; it must name a transformer
    /// with `.transformable(by:)`. Called by the code `@Model` generates.
    public static func _attribute<Root, Value>(
        _ keyPath: KeyPath<Root, Value>, name: String, defaultValue: Value? = nil,
        attribute: Schema.Attribute? = nil
    ) -> Schema.PropertyMetadata {
        let transformer = attribute?.transformerType
        return Schema.PropertyMetadata(
            name: name, keypath: keyPath, defaultValue: defaultValue,
            attribute: attribute ?? Schema.Attribute(), relationship: nil,
            typeName: typeName(Value.self), isOptional: Value.self is any _OptionalValue.Type,
            encode: { any in
                guard let transformer else {
                    throw SwiftDataError(
                        .unsupportedValue,
                        "\(name): \(Value.self) is not Codable; give it @Attribute(.transformable(by:))")
                }
                return try transform(any, with: transformer)
            },
            decode: { snapshot in
                guard let transformer else {
                    throw SwiftDataError(.unsupportedValue, "\(name): \(Value.self) is not Codable")
                }
                return try reverseTransform(snapshot, Value.self, with: transformer)
            })
    }

    /// Describes an optional to-one relationship.
    public static func _relationship<Root, Destination: PersistentModel>(
        _ keyPath: KeyPath<Root, Destination?>, name: String, defaultValue: Destination?? = nil,
        relationship: Schema.Relationship? = nil
    ) -> Schema.PropertyMetadata {
        makeRelationship(keyPath, name, relationship, Destination.self, toOne: true, optional: true)
    }

    /// Describes a non-optional to-one relationship.
    public static func _relationship<Root, Destination: PersistentModel>(
        _ keyPath: KeyPath<Root, Destination>, name: String, defaultValue: Destination? = nil,
        relationship: Schema.Relationship? = nil
    ) -> Schema.PropertyMetadata {
        makeRelationship(keyPath, name, relationship, Destination.self, toOne: true, optional: false)
    }

    /// Describes a to-many relationship.
    public static func _relationship<Root, Destination: PersistentModel>(
        _ keyPath: KeyPath<Root, [Destination]>, name: String, defaultValue: [Destination]? = nil,
        relationship: Schema.Relationship? = nil
    ) -> Schema.PropertyMetadata {
        makeRelationship(keyPath, name, relationship, Destination.self, toOne: false, optional: false)
    }

    /// Describes an optional to-many relationship.
    public static func _relationship<Root, Destination: PersistentModel>(
        _ keyPath: KeyPath<Root, [Destination]?>, name: String, defaultValue: [Destination]?? = nil,
        relationship: Schema.Relationship? = nil
    ) -> Schema.PropertyMetadata {
        makeRelationship(keyPath, name, relationship, Destination.self, toOne: false, optional: true)
    }

    /// Describes a property declared without `@Relationship`: an attribute, or a
    /// relationship when the value type is a model or an array of models. Called by the
    /// code `@Model` generates; overload resolution picks the kind from the static type.
    public static func _property<Root, Value: Codable>(
        _ keyPath: KeyPath<Root, Value>, name: String, defaultValue: Value? = nil, attribute: Schema.Attribute? = nil
    ) -> Schema.PropertyMetadata {
        _attribute(keyPath, name: name, defaultValue: defaultValue, attribute: attribute)
    }

    /// Describes a non-Codable attribute (it needs `.transformable(by:)`).
    public static func _property<Root, Value>(
        _ keyPath: KeyPath<Root, Value>, name: String, defaultValue: Value? = nil, attribute: Schema.Attribute? = nil
    ) -> Schema.PropertyMetadata {
        _attribute(keyPath, name: name, defaultValue: defaultValue, attribute: attribute)
    }

    /// Describes an optional to-one relationship declared without `@Relationship`.
    public static func _property<Root, Destination: PersistentModel>(
        _ keyPath: KeyPath<Root, Destination?>, name: String, defaultValue: Destination?? = nil,
        attribute: Schema.Attribute? = nil
    ) -> Schema.PropertyMetadata {
        makeRelationship(keyPath, name, nil, Destination.self, toOne: true, optional: true)
    }

    /// Describes a to-one relationship declared without `@Relationship`.
    public static func _property<Root, Destination: PersistentModel>(
        _ keyPath: KeyPath<Root, Destination>, name: String, defaultValue: Destination? = nil,
        attribute: Schema.Attribute? = nil
    ) -> Schema.PropertyMetadata {
        makeRelationship(keyPath, name, nil, Destination.self, toOne: true, optional: false)
    }

    /// Describes a to-many relationship declared without `@Relationship`.
    public static func _property<Root, Destination: PersistentModel>(
        _ keyPath: KeyPath<Root, [Destination]>, name: String, defaultValue: [Destination]? = nil,
        attribute: Schema.Attribute? = nil
    ) -> Schema.PropertyMetadata {
        makeRelationship(keyPath, name, nil, Destination.self, toOne: false, optional: false)
    }

    /// Describes an optional to-many relationship declared without `@Relationship`.
    public static func _property<Root, Destination: PersistentModel>(
        _ keyPath: KeyPath<Root, [Destination]?>, name: String, defaultValue: [Destination]?? = nil,
        attribute: Schema.Attribute? = nil
    ) -> Schema.PropertyMetadata {
        makeRelationship(keyPath, name, nil, Destination.self, toOne: false, optional: true)
    }

    private static func makeRelationship<Destination: PersistentModel>(
        _ keyPath: AnyKeyPath, _ name: String, _ declared: Schema.Relationship?,
        _ destination: Destination.Type, toOne: Bool, optional: Bool
    ) -> Schema.PropertyMetadata {
        var relationship = declared ?? Schema.Relationship()
        relationship.destinationType = destination
        relationship.destination = Destination._stowageEntityName
        relationship.isToOne = toOne
        let typeName = toOne ? Destination._stowageEntityName : "[\(Destination._stowageEntityName)]"
        return Schema.PropertyMetadata(
            name: name, keypath: keyPath, defaultValue: nil, attribute: nil, relationship: relationship,
            typeName: typeName, isOptional: optional,
            encode: { _ in .null }, decode: { _ in () })
    }

    static func typeName(_ type: Any.Type) -> String {
        if let optional = type as? any _OptionalValue.Type { return typeName(optional._wrappedType) }
        return String(describing: type)
    }
}

/// A Codable attribute's conversions. A value of a generic type rather than closures
/// that capture `Value.self`: the metatype of a type that is not `SendableMetatype` may not
/// be captured by a `@Sendable` closure, but the type's own methods may use it.
private struct CodableCoding<Value: Codable>: Sendable {
    let fast: (PropertyCodec.Encode, PropertyCodec.Decode)?
    let transformer: ValueTransformer.Type?

    @Sendable func encode(_ any: Any) throws -> SnapshotValue {
        if let fast, let value = fast.0(any) { return value }
        if let transformer { return try transform(any, with: transformer) }
        return try encodeValue(any, as: Value.self)
    }

    @Sendable func decode(_ snapshot: SnapshotValue) throws -> Any {
        if let fast, let value = fast.1(snapshot) { return value }
        if let transformer { return try reverseTransform(snapshot, Value.self, with: transformer) }
        return try decodeValue(Value.self, from: snapshot)
    }
}

private func encodeValue<Value: Encodable>(_ any: Any, as _: Value.Type) throws -> SnapshotValue {
    if let direct = SnapshotValueEncoder.directValue(any) { return direct }
    if let optional = any as? any _OptionalValue {
        guard let wrapped = optional._wrapped else { return .null }
        if let direct = SnapshotValueEncoder.directValue(wrapped) { return direct }
    }
    guard let value = any as? Value else {
        throw SwiftDataError(.unsupportedValue, "expected a value of type \(Value.self), got \(type(of: any))")
    }
    return try SnapshotValueEncoder.encode(value)
}

private func decodeValue<Value: Decodable>(_ type: Value.Type, from snapshot: SnapshotValue) throws -> Value {
    if let optional = Value.self as? any _OptionalValue.Type {
        if snapshot.isNull, let none = optional._none as? Value { return none }
    }
    return try SnapshotValueDecoder.decode(Value.self, from: snapshot)
}

private func transform(_ any: Any, with transformer: ValueTransformer.Type) throws -> SnapshotValue {
    if let optional = any as? any _OptionalValue, optional._wrapped == nil { return .null }
    guard let data = transformer.init().transformedValue(any) as? Data else {
        throw SwiftDataError(.unsupportedValue, "\(transformer) did not transform \(type(of: any)) into Data")
    }
    return .data(data)
}

private func reverseTransform<Value>(
    _ snapshot: SnapshotValue, _ type: Value.Type, with transformer: ValueTransformer.Type
)
    throws -> Value
{
    if snapshot.isNull, let optional = Value.self as? any _OptionalValue.Type, let none = optional._none as? Value {
        return none
    }
    guard case .data(let data) = snapshot,
        let value = transformer.init().reverseTransformedValue(data) as? Value
    else {
        throw SwiftDataError(
            .modelValidationFailure, "\(transformer) could not turn stored data back into \(Value.self)")
    }
    return value
}
