import Foundation

// SwiftData's History API: what each save changed, read back as transactions
// (`ModelContext.fetchHistory(_:)`), in the shapes Apple declares.

/// A token that orders a store's transactions: an app keeps the last one it processed
/// and asks for the transactions after it.
public protocol HistoryToken: Comparable, Hashable, Identifiable, Sendable {}

/// One saved transaction of a store's history.
public protocol HistoryTransaction: Hashable, Identifiable, Sendable {
    /// The type of the token that marks the transaction's place in its store's history.
    associatedtype TokenType: Comparable, Hashable, Identifiable, Sendable
    /// The type of the identifier that orders a store's transactions.
    associatedtype TransactionIdentifier: Comparable, Hashable, Sendable
    /// The ``ModelContext/author`` of the context that saved, or `nil` if it had none.
    var author: String? { get }
    /// The inserts, updates and deletes of the save, in the order the store recorded them.
    var changes: [HistoryChange] { get }
    /// The identifier of the store the transaction was saved to.
    var storeIdentifier: String { get }
    /// When the save was made.
    var timestamp: Date { get }
    /// The transaction's place in its store's history: keep it to fetch the transactions
    /// saved after it.
    var token: TokenType { get }
    /// The identifier of the transaction, higher for each later save to its store.
    var transactionIdentifier: TransactionIdentifier { get }
}

/// An insert in a transaction.
public protocol HistoryInsert<Model>: Sendable {
    /// The model class of the inserted record.
    associatedtype Model: PersistentModel
    /// The type of the identifier of a change within its transaction.
    associatedtype ChangeIdentifier: Comparable, Hashable, Sendable
    /// The type of the identifier of the transaction.
    associatedtype TransactionIdentifier: Comparable, Hashable, Sendable
    /// The change's identifier within its transaction.
    var changeIdentifier: ChangeIdentifier { get }
    /// The permanent identifier of the inserted model.
    var changedPersistentIdentifier: PersistentIdentifier { get }
    /// The identifier of the transaction the insert belongs to.
    var transactionIdentifier: TransactionIdentifier { get }
}

/// An update in a transaction, with the attributes it changed.
public protocol HistoryUpdate<Model>: Sendable {
    /// The model class of the updated record.
    associatedtype Model: PersistentModel
    /// The type of the identifier of a change within its transaction.
    associatedtype ChangeIdentifier: Comparable, Hashable, Sendable
    /// The type of the identifier of the transaction.
    associatedtype TransactionIdentifier: Comparable, Hashable, Sendable
    /// A key path of an updated property.
    typealias PropertyUpdate = PartialKeyPath<Model> & Sendable
    /// The change's identifier within its transaction.
    var changeIdentifier: ChangeIdentifier { get }
    /// The identifier of the updated model.
    var changedPersistentIdentifier: PersistentIdentifier { get }
    /// The identifier of the transaction the update belongs to.
    var transactionIdentifier: TransactionIdentifier { get }
    /// The properties whose values the save changed.
    var updatedAttributes: [any PartialKeyPath<Model> & Sendable] { get }
}

/// A delete in a transaction, with the values the model's `.preserveValueOnDeletion`
/// attributes had.
public protocol HistoryDelete<Model>: Sendable {
    /// The model class of the deleted record.
    associatedtype Model: PersistentModel
    /// The type of the identifier of a change within its transaction.
    associatedtype ChangeIdentifier: Comparable, Hashable, Sendable
    /// The type of the identifier of the transaction.
    associatedtype TransactionIdentifier: Comparable, Hashable, Sendable
    /// The change's identifier within its transaction.
    var changeIdentifier: ChangeIdentifier { get }
    /// The identifier the deleted model had.
    var changedPersistentIdentifier: PersistentIdentifier { get }
    /// The values the model's `.preserveValueOnDeletion` attributes had when it was deleted.
    var tombstone: HistoryTombstone<Model> { get }
    /// The identifier of the transaction the delete belongs to.
    var transactionIdentifier: TransactionIdentifier { get }
}

/// One change of a transaction.
public enum HistoryChange: Sendable {
    /// A model the save inserted.
    case insert(any HistoryInsert)
    /// A model the save changed, with the properties it changed.
    case update(any HistoryUpdate)
    /// A model the save deleted, with its preserved values.
    case delete(any HistoryDelete)

    /// The identifier of the model the change is about.
    public var changedPersistentIdentifier: PersistentIdentifier {
        switch self {
        case .insert(let insert): insert.changedPersistentIdentifier
        case .update(let update): update.changedPersistentIdentifier
        case .delete(let delete): delete.changedPersistentIdentifier
        }
    }
}

/// What a deleted model left in the history: the values of its attributes marked
/// `@Attribute(.preserveValueOnDeletion)` when it was deleted, read by key path.
///
/// SwiftData's tombstone is also a `Sequence`; Stowage's is not yet (its element type is
/// not documented). Read the values by key path, or all of them through ``values``.
public struct HistoryTombstone<Model: PersistentModel>: Sendable {
    /// The preserved values by property name.
    let preserved: [String: SnapshotValue]

    /// The preserved value of the attribute `keyPath` names, or `nil` when it was not
    /// preserved (an attribute without `.preserveValueOnDeletion`) or was `nil`.
    public subscript(keyPath: PartialKeyPath<Model>) -> (any Sendable)? {
        guard let entity = Model.schemaEntity, let property = entity.property(for: keyPath),
            let value = preserved[property.name]
        else { return nil }
        return entity.decodedValue(value, at: property.index)
    }

    /// Every preserved value, by property name, decoded: Stowage's addition.
    public var values: [String: any Sendable] {
        guard let entity = Model.schemaEntity else { return [:] }
        var result: [String: any Sendable] = [:]
        for (name, value) in preserved {
            guard let property = entity.property(named: name),
                let decoded = entity.decodedValue(value, at: property.index)
            else { continue }
            result[name] = decoded
        }
        return result
    }
}

/// The token of a transaction of Stowage's stores: the store and the transaction's place
/// in it. Tokens of one store order as their transactions do; tokens of different stores
/// order by store identifier. `Codable`, so that an app can keep the last one it read.
public struct DefaultHistoryToken: HistoryToken, Codable {
    /// The store the token covers.
    public let storeIdentifier: String
    /// The transaction identifier it stands at.
    let transaction: Int64

    /// The store identifier and the transaction, as one string (`<store>#<transaction>`).
    public var id: String { "\(storeIdentifier)#\(transaction)" }

    /// Whether `lhs` comes before `rhs`: by transaction within one store, by store
    /// identifier across stores.
    public static func < (lhs: Self, rhs: Self) -> Bool {
        lhs.storeIdentifier == rhs.storeIdentifier
            ? lhs.transaction < rhs.transaction : lhs.storeIdentifier < rhs.storeIdentifier
    }
}

/// A transaction of the history of Stowage's stores.
public struct DefaultHistoryTransaction: HistoryTransaction {
    /// Stowage's tokens mark a transaction by store and transaction identifier.
    public typealias TokenType = DefaultHistoryToken
    /// A store's transactions have identifiers that increase in the order they were saved.
    public typealias TransactionIdentifier = Int64

    /// The identifier of the store the transaction was saved to.
    public let storeIdentifier: String
    /// The bundle that saved, in SwiftData. Linux has no bundles: Stowage records the name
    /// of the program that saved (`ProcessInfo.processName`, the executable's name). Empty
    /// for a transaction of a log file written before format version 6.
    public let bundleIdentifier: String
    /// The process that saved: its process identifier (`getpid()`) in decimal. Empty for a
    /// transaction of a log file written before format version 6.
    public let processIdentifier: String
    /// The transaction's number in its store, higher for each later save.
    public let transactionIdentifier: Int64
    /// The transaction's place in its store's history: keep it, and ask for
    /// `#Predicate { $0.token > kept }` to read only later transactions.
    public let token: DefaultHistoryToken
    /// The ``ModelContext/author`` of the context that saved, or `nil` if it had none.
    public let author: String?
    /// The save's inserts, updates and deletes.
    public let changes: [HistoryChange]
    /// When the save was made, to the millisecond.
    public let timestamp: Date

    /// The transaction identifier.
    public var id: Int64 { transactionIdentifier }

    /// Whether two values are the same transaction of the same store.
    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.storeIdentifier == rhs.storeIdentifier && lhs.transactionIdentifier == rhs.transactionIdentifier
    }

    /// Hashes the store and transaction identifiers, what ``==(_:_:)`` compares.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(storeIdentifier)
        hasher.combine(transactionIdentifier)
    }
}

/// An insert of a Stowage history transaction.
public struct DefaultHistoryInsert<Model: PersistentModel>: HistoryInsert, Hashable {
    /// The change's position among its transaction's changes, from 0.
    public let changeIdentifier: Int64
    /// The permanent identifier of the model the change is about.
    public let changedPersistentIdentifier: PersistentIdentifier
    /// The identifier of the transaction the change belongs to.
    public let transactionIdentifier: Int64
}

/// An update of a Stowage history transaction.
public struct DefaultHistoryUpdate<Model: PersistentModel>: HistoryUpdate, Hashable {
    /// The change's position among its transaction's changes, from 0.
    public let changeIdentifier: Int64
    /// The permanent identifier of the model the change is about.
    public let changedPersistentIdentifier: PersistentIdentifier
    /// The identifier of the transaction the change belongs to.
    public let transactionIdentifier: Int64
    /// The attributes and relationships the save changed, by key path, in schema order.
    public let updatedAttributes: [any PartialKeyPath<Model> & Sendable]

    /// Whether two values are the same change of the same transaction.
    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.changeIdentifier == rhs.changeIdentifier && lhs.transactionIdentifier == rhs.transactionIdentifier
            && lhs.changedPersistentIdentifier == rhs.changedPersistentIdentifier
    }

    /// Hashes the change and transaction identifiers.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(changeIdentifier)
        hasher.combine(transactionIdentifier)
    }
}

/// A delete of a Stowage history transaction.
public struct DefaultHistoryDelete<Model: PersistentModel>: HistoryDelete, Hashable {
    /// The change's position among its transaction's changes, from 0.
    public let changeIdentifier: Int64
    /// The permanent identifier of the model the change is about.
    public let changedPersistentIdentifier: PersistentIdentifier
    /// The identifier of the transaction the change belongs to.
    public let transactionIdentifier: Int64
    /// The values the model's `.preserveValueOnDeletion` attributes had when it was deleted.
    public let tombstone: HistoryTombstone<Model>

    /// Whether two values are the same change of the same transaction.
    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.changeIdentifier == rhs.changeIdentifier && lhs.transactionIdentifier == rhs.transactionIdentifier
            && lhs.changedPersistentIdentifier == rhs.changedPersistentIdentifier
    }

    /// Hashes the change and transaction identifiers.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(changeIdentifier)
        hasher.combine(transactionIdentifier)
    }
}

/// Which transactions to fetch, or delete, and in what order.
public struct HistoryDescriptor<TransactionType: HistoryTransaction> {
    /// Which transactions; `nil` takes every one.
    public var predicate: Predicate<TransactionType>?
    /// Their order; with none, transactions come in the order they were saved.
    public var sortBy: [SortDescriptor<TransactionType>]
    /// At most this many; `nil` (or 0) for all.
    public var fetchLimit: Int?

    /// A descriptor of the transactions `predicate` selects (every one when `nil`), in the
    /// order they were saved.
    public init(predicate: Predicate<TransactionType>? = nil) {
        self.predicate = predicate
        self.sortBy = []
    }

    /// A descriptor of the transactions `predicate` selects (every one when `nil`), in the
    /// order `sortBy` gives (the order they were saved when it is empty).
    public init(predicate: Predicate<TransactionType>? = nil, sortBy: [SortDescriptor<TransactionType>] = []) {
        self.predicate = predicate
        self.sortBy = sortBy
    }
}

/// A store that keeps its history: every Stowage store does.
///
/// A custom ``DataStore`` that conforms to it answers ``ModelContext/fetchHistory(_:)`` and
/// ``ModelContext/deleteHistory(_:)`` for the models it holds.
public protocol HistoryProviding<HistoryType> {
    /// The type of the store's transactions.
    associatedtype HistoryType: HistoryTransaction
    /// The store's transaction type, as a value.
    static var historyType: HistoryType.Type { get }
    /// The transactions `descriptor` selects, in its order, up to its limit.
    func fetchHistory(_ descriptor: HistoryDescriptor<HistoryType>) throws -> [HistoryType]
    /// Removes the transactions `descriptor` selects from the history; the records stay.
    func deleteHistory(_ descriptor: HistoryDescriptor<HistoryType>) throws
}

extension PersistentModel {
    /// The model's entity, as every schema describes it.
    static var schemaEntity: Schema.Entity? { EntityRegistry.entity(for: Self.self) }
}

extension Schema.Entity {
    /// A stored attribute value as the Swift value its property holds; `nil` for a
    /// relationship or a value that does not decode.
    func decodedValue(_ value: SnapshotValue, at index: Int) -> (any Sendable)? {
        guard index < slotKinds.count, case .attribute(let decode, _) = slotKinds[index],
            let decoded = try? decode(value)
        else { return nil }
        // Attribute values are values (strings, numbers, dates, data, Codable values):
        // `Sendable` is a marker protocol with no runtime form, so `Any` and `any Sendable`
        // have one layout, and no cast can check it.
        return sendable(decoded)
    }
}

/// `value` as `any Sendable`: an attribute's value (a string, number, date, data or Codable
/// value), which the conversion of an attribute made. `Sendable` is a marker protocol with
/// no runtime form, so no cast can check it.
func sendable(_ value: Any) -> any Sendable {
    if let string = value as? String { return string }
    if let int = value as? Int { return int }
    if let double = value as? Double { return double }
    if let bool = value as? Bool { return bool }
    if let date = value as? Date { return date }
    if let data = value as? Data { return data }
    if let uuid = value as? UUID { return uuid }
    if let url = value as? URL { return url }
    if let decimal = value as? Decimal { return decimal }
    let any: Any = value
    return withUnsafeBytes(of: any) { $0.load(as: (any Sendable).self) }
}
