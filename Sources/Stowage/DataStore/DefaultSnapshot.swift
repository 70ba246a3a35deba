import Foundation

/// The value form of a model that a store keeps.
public protocol DataStoreSnapshot: Codable, Sendable {
    /// The model's identifier.
    var persistentIdentifier: PersistentIdentifier { get }
    /// A copy with a new identifier, and with relationship values remapped.
    func copy(
        persistentIdentifier: PersistentIdentifier, remappedIdentifiers: [PersistentIdentifier: PersistentIdentifier]?
    ) -> Self
}

/// One model's identifier and its property values, in the entity's schema order.
///
/// Relationship values are `.identifier` (to-one) or an `.array` of them (to-many).
public struct DefaultSnapshot: DataStoreSnapshot, Hashable {
    /// The identifier of the model the snapshot is of.
    public let persistentIdentifier: PersistentIdentifier
    /// The values, in the order of ``Schema/Entity/properties``.
    public var values: [SnapshotValue]

    /// A snapshot of the model `persistentIdentifier` names, with its values in schema order.
    public init(persistentIdentifier: PersistentIdentifier, values: [SnapshotValue]) {
        self.persistentIdentifier = persistentIdentifier
        self.values = values
    }

    /// The value of the property called `name` in `entity`.
    /// - Complexity: O(1).
    public func value(forKey name: String, in entity: Schema.Entity) -> SnapshotValue? {
        entity.indexByName[name].flatMap { $0 < values.count ? values[$0] : nil }
    }

    /// A copy under `persistentIdentifier` whose relationship values name, in place of each
    /// key of `remappedIdentifiers`, its value: how a store turns the temporary identifiers
    /// of a save's inserts into the permanent ones it gave them.
    public func copy(
        persistentIdentifier: PersistentIdentifier, remappedIdentifiers: [PersistentIdentifier: PersistentIdentifier]?
    ) -> DefaultSnapshot {
        guard let map = remappedIdentifiers, !map.isEmpty, values.contains(where: \.mayHoldIdentifiers) else {
            return DefaultSnapshot(persistentIdentifier: persistentIdentifier, values: values)
        }
        return DefaultSnapshot(persistentIdentifier: persistentIdentifier, values: values.map { Self.remap($0, map) })
    }

    static func remap(_ value: SnapshotValue, _ map: [PersistentIdentifier: PersistentIdentifier]) -> SnapshotValue {
        switch value {
        case .identifier(let id): return .identifier(map[id] ?? id)
        case .array(let items) where items.contains(where: { if case .identifier = $0 { true } else { false } }):
            return .array(items.map { remap($0, map) })
        default: return value
        }
    }
}

extension SnapshotValue {
    /// Whether the value is an identifier or an array, which may hold identifiers.
    var mayHoldIdentifiers: Bool {
        switch self {
        case .identifier, .array: true
        default: false
        }
    }
}
