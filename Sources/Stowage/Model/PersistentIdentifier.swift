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

    /// The entity, the store and the kind of key, shared by every identifier that has them.
    ///
    /// Held without reference counting: scopes are interned for the life of the process,
    /// so copying, hashing and comparing an identifier touch two words and no counts.
    unowned(unsafe) let scope: IdentifierScope
    /// The key's bits: a permanent key, or a temporary counter's value.
    private let raw: Int64

    /// The name of the model's entity.
    public var entityName: String { scope.entityName }
    /// The identifier of the store that owns the record, or `nil` while temporary.
    public var storeIdentifier: String? { scope.storeIdentifier }
    /// The key itself.
    public var storage: Storage {
        scope.isTemporary ? .temporary(UInt64(bitPattern: raw)) : .permanent(raw)
    }

    /// Creates an identifier. Stores call this with their own primary keys.
    public init(entityName: String, storeIdentifier: String?, storage: Storage) {
        switch storage {
        case .temporary(let n):
            self.init(
                scope: .interned(entityName: entityName, storeIdentifier: storeIdentifier, isTemporary: true),
                raw: Int64(bitPattern: n))
        case .permanent(let key):
            self.init(
                scope: .interned(entityName: entityName, storeIdentifier: storeIdentifier, isTemporary: false),
                raw: key)
        }
    }

    init(scope: IdentifierScope, raw: Int64) {
        self.scope = scope
        self.raw = raw
    }

    /// A permanent identifier in `scope`, which a store looked up once for an entity.
    static func permanent(in scope: IdentifierScope, primaryKey: Int64) -> PersistentIdentifier {
        PersistentIdentifier(scope: scope, raw: primaryKey)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(raw)
        hasher.combine(scope.serial)
    }

    /// What `Set` and `Dictionary` hash: the key and the scope's number through one
    /// multiply-and-shift mix (``keyHash(_:seed:)``), not `Hasher`. Identifiers key every
    /// dictionary a context keeps, and SipHash was a large part of a big save (see
    /// `Benchmarks/RESULTS.md`, "Measurements behind the code"). Keys are assigned by
    /// stores, not chosen by users, so the mix needs no defence against chosen collisions.
    public func _rawHashValue(seed: Int) -> Int {
        keyHash(UInt64(bitPattern: raw) ^ (UInt64(truncatingIfNeeded: scope.serial) &<< 48), seed: seed)
    }

    public static func == (lhs: PersistentIdentifier, rhs: PersistentIdentifier) -> Bool {
        lhs.raw == rhs.raw && lhs.scope === rhs.scope
    }

    /// Whether the identifier is temporary (the model has not been saved yet).
    public var isTemporary: Bool { scope.isTemporary }

    /// The store's primary key, or `nil` for a temporary identifier.
    public var primaryKey: Int64? { scope.isTemporary ? nil : raw }

    private static let counter = Atomic<UInt64>(1)

    /// A new temporary identifier in `scope`, an entity's temporary scope.
    static func temporary(in scope: IdentifierScope) -> PersistentIdentifier {
        let next = counter.wrappingAdd(1, ordering: .relaxed).oldValue
        return PersistentIdentifier(scope: scope, raw: Int64(bitPattern: next))
    }

    /// A new temporary identifier for a model of `entityName`.
    static func temporary(entityName: String) -> PersistentIdentifier {
        temporary(in: .interned(entityName: entityName, storeIdentifier: nil, isTemporary: true))
    }

    /// A permanent identifier in the store `storeIdentifier`.
    public static func permanent(entityName: String, storeIdentifier: String, primaryKey: Int64)
        -> PersistentIdentifier
    {
        permanent(
            in: .interned(entityName: entityName, storeIdentifier: storeIdentifier, isTemporary: false),
            primaryKey: primaryKey)
    }

    /// Orders by store, then entity, then key; temporary identifiers sort after permanent ones.
    public static func < (lhs: PersistentIdentifier, rhs: PersistentIdentifier) -> Bool {
        if lhs.scope !== rhs.scope {
            if lhs.storeIdentifier != rhs.storeIdentifier {
                return (lhs.storeIdentifier ?? "\u{10FFFF}") < (rhs.storeIdentifier ?? "\u{10FFFF}")
            }
            if lhs.entityName != rhs.entityName { return lhs.entityName < rhs.entityName }
            if lhs.isTemporary != rhs.isTemporary { return !lhs.isTemporary }
        }
        return lhs.isTemporary ? UInt64(bitPattern: lhs.raw) < UInt64(bitPattern: rhs.raw) : lhs.raw < rhs.raw
    }

    private enum CodingKeys: String, CodingKey {
        case entityName, storeIdentifier, storage
    }

    /// Decodes the same keyed form that earlier versions' synthesized conformance wrote.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            entityName: try container.decode(String.self, forKey: .entityName),
            storeIdentifier: try container.decodeIfPresent(String.self, forKey: .storeIdentifier),
            storage: try container.decode(Storage.self, forKey: .storage))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(entityName, forKey: .entityName)
        try container.encodeIfPresent(storeIdentifier, forKey: .storeIdentifier)
        try container.encode(storage, forKey: .storage)
    }
}

/// A hash of a 64-bit key for a dictionary's `seed`: SplitMix64's finalizer, which spreads
/// sequential keys over every bit. Used where keys are assigned by stores, not by users.
@inline(__always)
func keyHash(_ key: UInt64, seed: Int) -> Int {
    var x = key ^ UInt64(bitPattern: Int64(seed))
    x = (x ^ (x &>> 30)) &* 0xBF58_476D_1CE4_E5B9
    x = (x ^ (x &>> 27)) &* 0x94D0_49BB_1331_11EB
    return Int(bitPattern: UInt(truncatingIfNeeded: x ^ (x &>> 31)))
}

/// A 64-bit number a store assigns (a primary key, a file offset) as a dictionary key,
/// hashed with ``keyHash(_:seed:)`` instead of `Hasher`.
struct StoreNumber: Hashable {
    let value: Int64
    init(_ value: Int64) { self.value = value }
    func _rawHashValue(seed: Int) -> Int { keyHash(UInt64(bitPattern: value), seed: seed) }
}

/// The part of an identifier that many identifiers share: an entity, a store, and whether
/// the key is temporary. Each distinct one is made once and lives for the process, so an
/// identifier refers to it without reference counting.
final class IdentifierScope: Sendable {
    let entityName: String
    let storeIdentifier: String?
    let isTemporary: Bool
    /// A number unique to the scope, mixed into identifiers' hashes.
    let serial: Int

    private init(entityName: String, storeIdentifier: String?, isTemporary: Bool, serial: Int) {
        self.entityName = entityName
        self.storeIdentifier = storeIdentifier
        self.isTemporary = isTemporary
        self.serial = serial
    }

    private struct Key: Hashable {
        let entityName: String
        let storeIdentifier: String?
        let isTemporary: Bool
    }

    /// Every scope made so far. It only grows: a process names few entities and opens few
    /// stores, and identifiers rely on their scope never being freed.
    private static let all = Mutex<[Key: IdentifierScope]>([:])

    /// The one scope with these parts, made on first use. Takes a lock; callers on hot paths
    /// look their scope up once and keep it.
    static func interned(entityName: String, storeIdentifier: String?, isTemporary: Bool) -> IdentifierScope {
        let key = Key(entityName: entityName, storeIdentifier: storeIdentifier, isTemporary: isTemporary)
        return all.withLock { scopes in
            if let scope = scopes[key] { return scope }
            let scope = IdentifierScope(
                entityName: entityName, storeIdentifier: storeIdentifier, isTemporary: isTemporary,
                serial: scopes.count + 1)
            scopes[key] = scope
            return scope
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
