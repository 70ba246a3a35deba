import Foundation
import Observation

/// A class whose stored properties a ``ModelContext`` persists.
///
/// Do not conform to this protocol by hand: apply `@Model` to a class, and the macro
/// writes the conformance, the schema metadata and the property accessors. A model is
/// `Observable`, `Hashable` (by identity) and `Identifiable`. Like SwiftData's models, it
/// is not `Sendable`: hand its ``persistentModelID`` to other actors instead.
public protocol PersistentModel: AnyObject, Observable, Hashable, Identifiable {
    /// The storage behind the model's properties.
    var persistentBackingData: ModelBackingData { get set }
    /// The stored properties, as the `@Model` macro describes them.
    static var schemaMetadata: [Schema.PropertyMetadata] { get }
    /// Creates a model around existing backing data. Stores and contexts call this.
    init(backingData: ModelBackingData)

    /// The entity name: the class's own name. Written by `@Model`.
    static var _stowageEntityName: String { get }
    /// The model class this one inherits from, when that is a model class too (model
    /// inheritance). Written by `@Model`; `nil` for a class with no model superclass.
    static var _stowageSuperentityType: (any PersistentModel.Type)? { get }
    /// Key-path groups from `#Index`. Written by `#Index`.
    static var _stowageIndexes: [[AnyKeyPath]] { get }
    /// Key-path groups from `#Unique`. Written by `#Unique`.
    static var _stowageUniqueness: [[AnyKeyPath]] { get }
    /// Whether a model's backing data is the whole of its state, so that
    /// ``ModelContext/enumerate(_:batchSize:allowEscapingMutations:block:)`` may refill a
    /// model its block has let go with the next record. Written by `@Model`: `true` for a
    /// `final` class with no superclass, no `deinit` and no stored property it does not
    /// persist. Stowage's own.
    static var _stowageRecyclable: Bool { get }
    /// Whether nothing but the model holds its backing data, for a recyclable model; when
    /// so, the model also drops its observation registrar unless it is `observation` (the
    /// registrar of the batch that will read it next), so that its next read asks
    /// ``ModelBackingData/_firstObservation()`` again, as the model is about to hold
    /// another record. Written by `@Model`.
    func _stowageReleaseForRefill(keeping observation: _ModelObservation?) -> Bool
    /// The model's observation registrar, if one of its properties was read (and so
    /// someone may observe it): what a merge of another context's save tells of the
    /// properties it changes. Written by `@Model`; `nil` for a model the macro did not write.
    var _stowageObservation: _ModelObservation? { get }
}

extension PersistentModel {
    public static var _stowageEntityName: String {
        String(describing: Self.self).split(separator: ".").last.map(String.init) ?? String(describing: Self.self)
    }
    public static var _stowageSuperentityType: (any PersistentModel.Type)? { nil }
    public static var _stowageIndexes: [[AnyKeyPath]] { [] }
    public static var _stowageUniqueness: [[AnyKeyPath]] { [] }
    public static var _stowageRecyclable: Bool { false }
    public func _stowageReleaseForRefill(keeping observation: _ModelObservation?) -> Bool { false }
    public var _stowageObservation: _ModelObservation? { nil }

    /// The model's identifier: temporary until its first save, permanent after.
    public var persistentModelID: PersistentIdentifier { persistentBackingData.persistentModelID }

    /// The context the model is registered in, or `nil` if it was never inserted, has
    /// been deleted and saved, or its context no longer exists.
    ///
    /// A model holds its context weakly, so that a context and its models never keep each
    /// other alive; keep the context as long as you use its models' relationships.
    public var modelContext: ModelContext? { persistentBackingData.context }

    /// Whether the model has unsaved changes in its context.
    public var hasChanges: Bool {
        guard let context = persistentBackingData.context else { return false }
        return context.hasPendingChanges(persistentModelID)
    }

    /// Whether the model has been deleted from its context.
    public var isDeleted: Bool { persistentBackingData.isDeleted }

    /// Whether the two are the same object.
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs === rhs }
    /// Hashes the object's identity.
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
    /// The model's ``persistentModelID``.
    public var id: PersistentIdentifier { persistentModelID }
}

// MARK: - Property access the @Model macro writes

extension PersistentModel {
    /// Reads an attribute.
    public func getValue<Value>(forKey keyPath: KeyPath<Self, Value>) -> Value {
        persistentBackingData.attributeValue(keyPath, as: Value.self, owner: self)
    }

    /// Writes an attribute and records the change in the model's context.
    public func setValue<Value>(forKey keyPath: KeyPath<Self, Value>, to newValue: Value) {
        persistentBackingData.setAttributeValue(keyPath, newValue, owner: self)
    }

    /// Reads an optional to-one relationship.
    public func getValue<Value: PersistentModel>(forKey keyPath: KeyPath<Self, Value?>) -> Value? {
        persistentBackingData.relatedModels(keyPath, as: Value.self, owner: self).first
    }

    /// Reads a non-optional to-one relationship.
    public func getValue<Value: PersistentModel>(forKey keyPath: KeyPath<Self, Value>) -> Value {
        if let model = persistentBackingData.relatedModels(keyPath, as: Value.self, owner: self).first {
            return model
        }
        preconditionFailure(
            "\(Self.self).\(keyPath): the related \(Value.self) was deleted; declare the relationship optional")
    }

    /// Reads a to-many relationship.
    public func getValue<Value: PersistentModel>(forKey keyPath: KeyPath<Self, [Value]>) -> [Value] {
        persistentBackingData.relatedModels(keyPath, as: Value.self, owner: self)
    }

    /// Reads an optional to-many relationship.
    public func getValue<Value: PersistentModel>(forKey keyPath: KeyPath<Self, [Value]?>) -> [Value]? {
        persistentBackingData.relatedModels(keyPath, as: Value.self, owner: self)
    }

    /// Writes an optional to-one relationship, and updates the inverse at once.
    public func setValue<Value: PersistentModel>(forKey keyPath: KeyPath<Self, Value?>, to newValue: Value?) {
        persistentBackingData.setRelated(keyPath, newValue.map { [$0] } ?? [], owner: self)
    }

    /// Writes a non-optional to-one relationship, and updates the inverse at once.
    public func setValue<Value: PersistentModel>(forKey keyPath: KeyPath<Self, Value>, to newValue: Value) {
        persistentBackingData.setRelated(keyPath, [newValue], owner: self)
    }

    /// Writes a to-many relationship, and updates the inverses at once.
    public func setValue<Value: PersistentModel>(forKey keyPath: KeyPath<Self, [Value]>, to newValue: [Value]) {
        persistentBackingData.setRelated(keyPath, newValue, owner: self)
    }

    /// Writes an optional to-many relationship, and updates the inverses at once.
    public func setValue<Value: PersistentModel>(forKey keyPath: KeyPath<Self, [Value]?>, to newValue: [Value]?) {
        persistentBackingData.setRelated(keyPath, newValue ?? [], owner: self)
    }
}

// MARK: Property access by position, which `@Model` writes when it knows the position

/// `@Model` passes each persisted property's position among the class's persisted
/// properties, which is its position in the entity, when it can tell it from the
/// declaration (not when `#if` leaves it open). A read or write then skips finding the
/// property by its key path (a locked table look-up), and the key path is made only when
/// a relationship needs it: the argument is an autoclosure.
///
/// Stowage's own: SwiftData's macro writes `getValue(forKey:)` and `setValue(forKey:to:)`,
/// which Stowage has too. Do not call these yourself: a wrong position reads another
/// property.
extension PersistentModel {
    /// Reads the attribute at `index`. Inlinable, so that the model class's own
    /// `persistentBackingData` is called directly, not through the protocol.
    @inlinable
    public func _getValue<Value>(forKey keyPath: @autoclosure () -> KeyPath<Self, Value>, at index: Int) -> Value {
        persistentBackingData.attributeValue(at: index, as: Value.self, owner: self)
    }

    /// Writes the attribute at `index`.
    @inlinable
    public func _setValue<Value>(
        forKey keyPath: @autoclosure () -> KeyPath<Self, Value>, at index: Int, to newValue: Value
    ) {
        persistentBackingData.setAttributeValue(at: index, newValue, owner: self)
    }

    /// Reads an optional to-one relationship.
    public func _getValue<Value: PersistentModel>(
        forKey keyPath: @autoclosure () -> KeyPath<Self, Value?>, at index: Int
    ) -> Value? {
        getValue(forKey: keyPath())
    }

    /// Reads a non-optional to-one relationship.
    public func _getValue<Value: PersistentModel>(
        forKey keyPath: @autoclosure () -> KeyPath<Self, Value>, at index: Int
    ) -> Value {
        getValue(forKey: keyPath())
    }

    /// Reads a to-many relationship.
    public func _getValue<Value: PersistentModel>(
        forKey keyPath: @autoclosure () -> KeyPath<Self, [Value]>, at index: Int
    ) -> [Value] {
        getValue(forKey: keyPath())
    }

    /// Reads an optional to-many relationship.
    public func _getValue<Value: PersistentModel>(
        forKey keyPath: @autoclosure () -> KeyPath<Self, [Value]?>, at index: Int
    ) -> [Value]? {
        getValue(forKey: keyPath())
    }

    /// Writes an optional to-one relationship.
    public func _setValue<Value: PersistentModel>(
        forKey keyPath: @autoclosure () -> KeyPath<Self, Value?>, at index: Int, to newValue: Value?
    ) {
        setValue(forKey: keyPath(), to: newValue)
    }

    /// Writes a non-optional to-one relationship.
    public func _setValue<Value: PersistentModel>(
        forKey keyPath: @autoclosure () -> KeyPath<Self, Value>, at index: Int, to newValue: Value
    ) {
        setValue(forKey: keyPath(), to: newValue)
    }

    /// Writes a to-many relationship.
    public func _setValue<Value: PersistentModel>(
        forKey keyPath: @autoclosure () -> KeyPath<Self, [Value]>, at index: Int, to newValue: [Value]
    ) {
        setValue(forKey: keyPath(), to: newValue)
    }

    /// Writes an optional to-many relationship.
    public func _setValue<Value: PersistentModel>(
        forKey keyPath: @autoclosure () -> KeyPath<Self, [Value]?>, at index: Int, to newValue: [Value]?
    ) {
        setValue(forKey: keyPath(), to: newValue)
    }
}

/// The type of the stored-property placeholders `@Model` writes; it holds nothing.
public struct _StowagePersistedProperty: Sendable {
    public init() {}
}

/// The key path `@Model` keeps beside each persisted property of a non-generic class, made
/// once and handed to Observation on every read and write (a key path literal in the
/// accessors was looked up on every access). It is `Sendable` by fiat: a key path literal
/// without subscript arguments holds no mutable state. A box, rather than a
/// `nonisolated(unsafe)` static key path, because Swift 6 infers some key path literals to be
/// `Sendable` and then warns that `nonisolated(unsafe)` is unnecessary, once per property.
public struct _StowageKeyPath<Root, Value>: @unchecked Sendable {
    public let keyPath: KeyPath<Root, Value>

    @inlinable public init(_ keyPath: KeyPath<Root, Value>) { self.keyPath = keyPath }
}

/// Groups key paths for `#Index` and `#Unique`.
public func _stowageKeyPathGroups<T>(_ type: T.Type, _ groups: [[PartialKeyPath<T>]]) -> [[AnyKeyPath]] {
    groups.map { $0.map { $0 as AnyKeyPath } }
}
