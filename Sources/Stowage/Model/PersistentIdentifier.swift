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
        /// A custom store's primary key of a type other than an integer (a `UUID`, a
        /// `String`), as its JSON encoding. Stowage's own stores use ``permanent(_:)``.
        case keyed(String)
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
        switch scope.kind {
        case .temporary: .temporary(UInt64(bitPattern: raw))
        case .integer: .permanent(raw)
        case .keyed: .keyed(scope.encodedKey(raw))
        }
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
        case .keyed(let encoded):
            let scope = IdentifierScope.interned(entityName: entityName, storeIdentifier: storeIdentifier, kind: .keyed)
            self.init(scope: scope, raw: scope.number(forEncodedKey: encoded))
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

    /// Hashes the key and the entity and store it belongs to.
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

    /// Whether two identifiers name the same model: the same key of the same entity in the
    /// same store (or the same temporary identifier).
    public static func == (lhs: PersistentIdentifier, rhs: PersistentIdentifier) -> Bool {
        lhs.raw == rhs.raw && lhs.scope === rhs.scope
    }

    /// Whether the identifier is temporary (the model has not been saved yet).
    public var isTemporary: Bool { scope.kind == .temporary }

    /// The store's integer primary key, or `nil` for a temporary identifier or one whose key
    /// is of another type (see ``primaryKey(as:)``).
    public var primaryKey: Int64? { scope.kind == .integer ? raw : nil }

    /// The primary key a store gave ``identifier(for:entityName:primaryKey:)``, decoded as
    /// `type`, or `nil` for a temporary identifier or a key of another type. Stowage's own:
    /// SwiftData has no public way back from an identifier to its key.
    public func primaryKey<T: Decodable>(as type: T.Type) -> T? {
        switch scope.kind {
        case .temporary: return nil
        case .integer:
            if let value = raw as? T { return value }
            return try? JSONDecoder().decode(T.self, from: Data(String(raw).utf8))
        case .keyed:
            return try? JSONDecoder().decode(T.self, from: Data(scope.encodedKey(raw).utf8))
        }
    }

    private static let counter = Atomic<UInt64>(1)

    /// A new temporary identifier in `scope`, an entity's temporary scope.
    static func temporary(in scope: IdentifierScope) -> PersistentIdentifier {
        let next = counter.wrappingAdd(1, ordering: .relaxed).oldValue
        return PersistentIdentifier(scope: scope, raw: Int64(bitPattern: next))
    }

    /// A new temporary identifier for a model of `entityName`.
    static func temporary(entityName: String) -> PersistentIdentifier {
        temporary(in: .interned(entityName: entityName, storeIdentifier: nil, kind: .temporary))
    }

    /// The permanent identifier of the record with `primaryKey` in this identifier's entity
    /// and store: how a store that reads many rows names them without looking the entity's
    /// scope up again for each. For an identifier that is not permanent with an integer key,
    /// the scope is looked up by name.
    package func withPrimaryKey(_ primaryKey: Int64) -> PersistentIdentifier {
        guard scope.kind == .integer else {
            return .permanent(entityName: entityName, storeIdentifier: storeIdentifier ?? "", primaryKey: primaryKey)
        }
        return PersistentIdentifier(scope: scope, raw: primaryKey)
    }

    /// A permanent identifier in the store `storeIdentifier`.
    public static func permanent(entityName: String, storeIdentifier: String, primaryKey: Int64)
        -> PersistentIdentifier
    {
        permanent(
            in: .interned(entityName: entityName, storeIdentifier: storeIdentifier, isTemporary: false),
            primaryKey: primaryKey)
    }

    /// The permanent identifier of the record with `primaryKey` of `entityName` in the store
    /// `storeIdentifier`: how a custom store names the records it hands a context
    /// (SwiftData's `identifier(for:entityName:primaryKey:)`). The key may be any `Codable`
    /// and `Hashable` value: an integer, a `UUID`, a `String`, a struct of several parts.
    ///
    /// An integer key that fits in `Int64` is carried as it is. Any other key is carried as
    /// its JSON encoding (with sorted keys), which is what makes two identifiers equal and
    /// what the identifier's `Codable` form writes, so it survives a round trip through
    /// another process. Where Stowage differs: SwiftData requires the key to be `Comparable`
    /// and `CustomStringConvertible` too; Stowage asks for less, so every key SwiftData
    /// takes is taken here. Identifiers of such keys order by their encoded key. Each
    /// distinct key is remembered for the life of the process (about its encoded length plus
    /// 40 bytes), as a table from keys to the 64-bit numbers identifiers hold.
    public static func identifier<T: Codable & Hashable>(
        for storeIdentifier: String, entityName: String, primaryKey: T
    ) throws -> PersistentIdentifier {
        if let integer = primaryKey as? any BinaryInteger, let key = Int64(exactly: integer) {
            return permanent(entityName: entityName, storeIdentifier: storeIdentifier, primaryKey: key)
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let encoded: String
        do {
            encoded = String(decoding: try encoder.encode(primaryKey), as: UTF8.self)
        } catch {
            throw DataStoreError(
                .unsupportedFeature, "the primary key \(primaryKey) of \(entityName) could not be encoded: \(error)")
        }
        return PersistentIdentifier(entityName: entityName, storeIdentifier: storeIdentifier, storage: .keyed(encoded))
    }

    /// Orders by store, then entity, then key; temporary identifiers sort after permanent ones.
    public static func < (lhs: PersistentIdentifier, rhs: PersistentIdentifier) -> Bool {
        if lhs.scope !== rhs.scope {
            if lhs.storeIdentifier != rhs.storeIdentifier {
                return (lhs.storeIdentifier ?? "\u{10FFFF}") < (rhs.storeIdentifier ?? "\u{10FFFF}")
            }
            if lhs.entityName != rhs.entityName { return lhs.entityName < rhs.entityName }
            if lhs.scope.kind != rhs.scope.kind { return lhs.scope.kind < rhs.scope.kind }
        }
        if lhs.scope.kind == .keyed {
            return lhs.scope.encodedKey(lhs.raw).utf8.lexicographicallyPrecedes(rhs.scope.encodedKey(rhs.raw).utf8)
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

    /// Encodes the entity name, the store identifier and the key, so that an identifier can
    /// be kept (in a file, a URL, a message) and decoded later.
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

/// The part of an identifier that many identifiers share: an entity, a store, and the kind
/// of key. Each distinct one is made once and lives for the process, so an identifier refers
/// to it without reference counting.
final class IdentifierScope: Sendable {
    /// What an identifier's 64-bit number means.
    enum Kind: Int, Comparable, Sendable {
        /// A store's integer primary key.
        case integer
        /// A custom store's key of another type, numbered in the scope's table of keys.
        case keyed
        /// A temporary counter's value.
        case temporary

        static func < (lhs: Kind, rhs: Kind) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    let entityName: String
    let storeIdentifier: String?
    let kind: Kind
    var isTemporary: Bool { kind == .temporary }
    /// A number unique to the scope, mixed into identifiers' hashes.
    let serial: Int

    /// For a keyed scope: each encoded key's number, and the keys by number.
    private let keys = PosixMutex<(numbers: [String: Int64], encoded: [String])>(([:], []))

    private init(entityName: String, storeIdentifier: String?, kind: Kind, serial: Int) {
        self.entityName = entityName
        self.storeIdentifier = storeIdentifier
        self.kind = kind
        self.serial = serial
    }

    /// The number of an encoded key in this keyed scope, assigned on first use.
    func number(forEncodedKey key: String) -> Int64 {
        keys.withLock { table in
            if let number = table.numbers[key] { return number }
            let number = Int64(table.encoded.count)
            table.numbers[key] = number
            table.encoded.append(key)
            return number
        }
    }

    /// The encoded key with `number` in this keyed scope.
    func encodedKey(_ number: Int64) -> String {
        keys.withLock { table in
            table.encoded.indices.contains(Int(number)) ? table.encoded[Int(number)] : "null"
        }
    }

    private struct Key: Hashable {
        let entityName: String
        let storeIdentifier: String?
        let kind: Kind
    }

    /// Every scope made so far. It only grows: a process names few entities and opens few
    /// stores, and identifiers rely on their scope never being freed.
    private static let all = PosixMutex<[Key: IdentifierScope]>([:])

    /// The one scope with these parts, made on first use. Takes a lock; callers on hot paths
    /// look their scope up once and keep it.
    static func interned(entityName: String, storeIdentifier: String?, kind: Kind) -> IdentifierScope {
        let key = Key(entityName: entityName, storeIdentifier: storeIdentifier, kind: kind)
        return all.withLock { scopes in
            if let scope = scopes[key] { return scope }
            let scope = IdentifierScope(
                entityName: entityName, storeIdentifier: storeIdentifier, kind: kind, serial: scopes.count + 1)
            scopes[key] = scope
            return scope
        }
    }

    /// The one integer-keyed or temporary scope with these parts.
    static func interned(entityName: String, storeIdentifier: String?, isTemporary: Bool) -> IdentifierScope {
        interned(entityName: entityName, storeIdentifier: storeIdentifier, kind: isTemporary ? .temporary : .integer)
    }
}

extension PersistentIdentifier: CustomStringConvertible {
    /// The entity and key, for logs and messages: `Trip/p12@log-…` for a stored model
    /// (`k` and the encoded key for a key that is not an integer), `Trip/t3` for a
    /// temporary identifier.
    public var description: String {
        switch storage {
        case .temporary(let n): "\(entityName)/t\(n)"
        case .permanent(let k): "\(entityName)/p\(k)@\(storeIdentifier ?? "?")"
        case .keyed(let k): "\(entityName)/k\(k)@\(storeIdentifier ?? "?")"
        }
    }
}
