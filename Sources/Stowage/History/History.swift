import Foundation

// SwiftData's History API: what each save changed, read back as transactions
// (`ModelContext.fetchHistory(_:)`), in the shapes Apple declares.

/// A token that orders a store's transactions: an app keeps the last one it processed
/// and asks for the transactions after it.
public protocol HistoryToken: Comparable, Hashable, Identifiable, Sendable {}

/// One saved transaction of a store's history.
public protocol HistoryTransaction: Hashable, Identifiable, Sendable {
    associatedtype TokenType: Comparable, Hashable, Identifiable, Sendable
    associatedtype TransactionIdentifier: Comparable, Hashable, Sendable
    var author: String? { get }
    var changes: [HistoryChange] { get }
    var storeIdentifier: String { get }
    var timestamp: Date { get }
    var token: TokenType { get }
    var transactionIdentifier: TransactionIdentifier { get }
}

/// An insert in a transaction.
public protocol HistoryInsert<Model>: Sendable {
    associatedtype Model: PersistentModel
    associatedtype ChangeIdentifier: Comparable, Hashable, Sendable
    associatedtype TransactionIdentifier: Comparable, Hashable, Sendable
    var changeIdentifier: ChangeIdentifier { get }
    var changedPersistentIdentifier: PersistentIdentifier { get }
    var transactionIdentifier: TransactionIdentifier { get }
}

/// An update in a transaction, with the attributes it changed.
public protocol HistoryUpdate<Model>: Sendable {
    associatedtype Model: PersistentModel
    associatedtype ChangeIdentifier: Comparable, Hashable, Sendable
    associatedtype TransactionIdentifier: Comparable, Hashable, Sendable
    typealias PropertyUpdate = PartialKeyPath<Model> & Sendable
    var changeIdentifier: ChangeIdentifier { get }
    var changedPersistentIdentifier: PersistentIdentifier { get }
    var transactionIdentifier: TransactionIdentifier { get }
    var updatedAttributes: [any PartialKeyPath<Model> & Sendable] { get }
}

/// A delete in a transaction, with the values the model's `.preserveValueOnDeletion`
/// attributes had.
public protocol HistoryDelete<Model>: Sendable {
    associatedtype Model: PersistentModel
    associatedtype ChangeIdentifier: Comparable, Hashable, Sendable
    associatedtype TransactionIdentifier: Comparable, Hashable, Sendable
    var changeIdentifier: ChangeIdentifier { get }
    var changedPersistentIdentifier: PersistentIdentifier { get }
    var tombstone: HistoryTombstone<Model> { get }
    var transactionIdentifier: TransactionIdentifier { get }
}

/// One change of a transaction.
public enum HistoryChange: Sendable {
    case insert(any HistoryInsert)
    case update(any HistoryUpdate)
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

    public var id: String { "\(storeIdentifier)#\(transaction)" }

    public static func < (lhs: Self, rhs: Self) -> Bool {
        lhs.storeIdentifier == rhs.storeIdentifier
            ? lhs.transaction < rhs.transaction : lhs.storeIdentifier < rhs.storeIdentifier
    }
}

/// A transaction of the history of Stowage's stores.
public struct DefaultHistoryTransaction: HistoryTransaction {
    public typealias TokenType = DefaultHistoryToken
    public typealias TransactionIdentifier = Int64

    public let storeIdentifier: String
    /// The bundle that saved, in SwiftData. Linux has no bundles: Stowage records the name
    /// of the program that saved (`ProcessInfo.processName`, the executable's name). Empty
    /// for a transaction of a log file written before format version 6.
    public let bundleIdentifier: String
    /// The process that saved: its process identifier (`getpid()`) in decimal. Empty for a
    /// transaction of a log file written before format version 6.
    public let processIdentifier: String
    public let transactionIdentifier: Int64
    public let token: DefaultHistoryToken
    public let author: String?
    public let changes: [HistoryChange]
    public let timestamp: Date

    public var id: Int64 { transactionIdentifier }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.storeIdentifier == rhs.storeIdentifier && lhs.transactionIdentifier == rhs.transactionIdentifier
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(storeIdentifier)
        hasher.combine(transactionIdentifier)
    }
}

/// An insert of a Stowage history transaction.
public struct DefaultHistoryInsert<Model: PersistentModel>: HistoryInsert, Hashable {
    public let changeIdentifier: Int64
    public let changedPersistentIdentifier: PersistentIdentifier
    public let transactionIdentifier: Int64
}

/// An update of a Stowage history transaction.
public struct DefaultHistoryUpdate<Model: PersistentModel>: HistoryUpdate, Hashable {
    public let changeIdentifier: Int64
    public let changedPersistentIdentifier: PersistentIdentifier
    public let transactionIdentifier: Int64
    /// The attributes and relationships the save changed, by key path, in schema order.
    public let updatedAttributes: [any PartialKeyPath<Model> & Sendable]

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.changeIdentifier == rhs.changeIdentifier && lhs.transactionIdentifier == rhs.transactionIdentifier
            && lhs.changedPersistentIdentifier == rhs.changedPersistentIdentifier
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(changeIdentifier)
        hasher.combine(transactionIdentifier)
    }
}

/// A delete of a Stowage history transaction.
public struct DefaultHistoryDelete<Model: PersistentModel>: HistoryDelete, Hashable {
    public let changeIdentifier: Int64
    public let changedPersistentIdentifier: PersistentIdentifier
    public let transactionIdentifier: Int64
    public let tombstone: HistoryTombstone<Model>

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.changeIdentifier == rhs.changeIdentifier && lhs.transactionIdentifier == rhs.transactionIdentifier
            && lhs.changedPersistentIdentifier == rhs.changedPersistentIdentifier
    }

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

    public init(predicate: Predicate<TransactionType>? = nil) {
        self.predicate = predicate
        self.sortBy = []
    }

    public init(predicate: Predicate<TransactionType>? = nil, sortBy: [SortDescriptor<TransactionType>] = []) {
        self.predicate = predicate
        self.sortBy = sortBy
    }
}

/// A store that keeps its history: every Stowage store does.
public protocol HistoryProviding<HistoryType> {
    associatedtype HistoryType: HistoryTransaction
    static var historyType: HistoryType.Type { get }
    func fetchHistory(_ descriptor: HistoryDescriptor<HistoryType>) throws -> [HistoryType]
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
