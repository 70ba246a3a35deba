import Foundation
import Synchronization

/// The identity of one model, unique across stores and stable across launches once saved.
///
/// A model gets a *temporary* identifier when it is created. When the context saves it,
/// the store assigns a *permanent* one and the context remaps the model to it, as SwiftData
/// does. Identifiers are values: `Sendable`, so they are what you hand to another actor or
/// context, which then fetches its own model with ``ModelContext/model(for:)``.
public struct PersistentIdentifier: Hashable, Comparable, Codable, Sendable {
    /// How the identifier is stored: assigned by a store, or handed out before save.
    public enum Storage: Hashable, Codable, Sendable {
        /// Handed out when the model was created; never stored.
        case temporary(UInt64)
        /// A store's primary key for the record.
        case permanent(Int64)
    }

    /// The name of the model's entity.
    public let entityName: String
    /// The identifier of the store that owns the record, or `nil` while temporary.
    public let storeIdentifier: String?
    /// The key itself.
    public let storage: Storage

    /// Creates an identifier. Stores call this with their own primary keys.
    public init(entityName: String, storeIdentifier: String?, storage: Storage) {
        self.entityName = entityName
        self.storeIdentifier = storeIdentifier
        self.storage = storage
    }

    /// Hashes the key alone: it is what tells identifiers apart in practice, and hashing
    /// the entity and store names for every dictionary access cost more than it saved.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(storage)
    }

    public static func == (lhs: PersistentIdentifier, rhs: PersistentIdentifier) -> Bool {
        lhs.storage == rhs.storage && lhs.entityName == rhs.entityName && lhs.storeIdentifier == rhs.storeIdentifier
    }

    /// Whether the identifier is temporary (the model has not been saved yet).
    public var isTemporary: Bool {
        if case .temporary = storage { return true }
        return false
    }

    /// The store's primary key, or `nil` for a temporary identifier.
    public var primaryKey: Int64? {
        if case .permanent(let key) = storage { return key }
        return nil
    }

    private static let counter = Atomic<UInt64>(1)

    /// A new temporary identifier for a model of `entityName`.
    static func temporary(entityName: String) -> PersistentIdentifier {
        let next = counter.wrappingAdd(1, ordering: .relaxed).oldValue
        return PersistentIdentifier(entityName: entityName, storeIdentifier: nil, storage: .temporary(next))
    }

    /// A permanent identifier in the store `storeIdentifier`.
    public static func permanent(entityName: String, storeIdentifier: String, primaryKey: Int64)
        -> PersistentIdentifier
    {
        PersistentIdentifier(entityName: entityName, storeIdentifier: storeIdentifier, storage: .permanent(primaryKey))
    }

    /// Orders by store, then entity, then key; temporary identifiers sort after permanent ones.
    public static func < (lhs: PersistentIdentifier, rhs: PersistentIdentifier) -> Bool {
        if lhs.storeIdentifier != rhs.storeIdentifier {
            return (lhs.storeIdentifier ?? "\u{10FFFF}") < (rhs.storeIdentifier ?? "\u{10FFFF}")
        }
        if lhs.entityName != rhs.entityName { return lhs.entityName < rhs.entityName }
        switch (lhs.storage, rhs.storage) {
        case (.permanent(let a), .permanent(let b)): return a < b
        case (.temporary(let a), .temporary(let b)): return a < b
        case (.permanent, .temporary): return true
        case (.temporary, .permanent): return false
        }
    }
}

extension PersistentIdentifier: CustomStringConvertible {
    public var description: String {
        switch storage {
        case .temporary(let n): "\(entityName)/t\(n)"
        case .permanent(let k): "\(entityName)/p\(k)@\(storeIdentifier ?? "?")"
        }
    }
}
