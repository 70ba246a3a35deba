import Foundation
import Stowage

/// A place, stored as a composite attribute whose fields predicates can query.
public struct Place: Codable, Hashable, Sendable {
    public var latitude: Double
    public var longitude: Double
    public init(latitude: Double, longitude: Double) {
        self.latitude = latitude
        self.longitude = longitude
    }
}

/// A category, stored as its raw value.
public enum Category: String, Codable, Sendable, CaseIterable {
    case clothes, documents, gear
}

/// An enum with payloads, stored as an object.
public enum Reminder: Codable, Hashable, Sendable {
    case none
    case at(Date)
    case before(days: Int)
}

@Model
public final class Trip {
    public var name: String
    public var destination: String
    public var startDate: Date
    public var budget: Double = 0
    public var isFavorite = false
    public var place: Place?
    @Relationship(deleteRule: .cascade, inverse: \Item.trip) public var items: [Item] = []
    @Relationship(deleteRule: .nullify, inverse: \Badge.trips) public var tags: [Badge] = []
    @Transient public var isSelected = false

    public init(name: String, destination: String = "", startDate: Date = Date(timeIntervalSince1970: 0)) {
        self.name = name
        self.destination = destination
        self.startDate = startDate
    }

    /// Computed, so predicates cannot use it.
    public var isExpensive: Bool { budget > 1000 }
}

@Model
public final class Item {
    public var name: String
    public var category: Category
    public var weight: Double = 0
    public var isPacked = false
    public var quantity: Int = 1
    public var note: String?
    public var trip: Trip?

    public init(name: String, category: Category = .gear, weight: Double = 0, trip: Trip? = nil) {
        self.name = name
        self.category = category
        self.weight = weight
        self.trip = trip
    }
}

@Model
public final class Badge {
    @Attribute(.unique) public var label: String
    public var trips: [Trip] = []

    public init(label: String) {
        self.label = label
    }
}

@Model
public final class Person {
    @Attribute(.unique) public var email: String
    public var name: String
    public var age: Int = 0
    #Unique<Person>([\.name, \.age])
    #Index<Person>([\.name], [\.age, \.name])

    public init(email: String, name: String, age: Int = 0) {
        self.email = email
        self.name = name
        self.age = age
    }
}

/// A folder that refuses to be deleted while it holds documents.
@Model
public final class Folder {
    public var name: String
    @Relationship(deleteRule: .deny, inverse: \Document.folder) public var documents: [Document] = []
    public init(name: String) { self.name = name }
}

@Model
public final class Document {
    public var title: String
    public var folder: Folder?
    public init(title: String, folder: Folder? = nil) {
        self.title = title
        self.folder = folder
    }
}

/// Every supported value type in one model.
@Model
public final class Sample {
    public var bool: Bool = false
    public var int: Int = 0
    public var int8: Int8 = 0
    public var int16: Int16 = 0
    public var int32: Int32 = 0
    public var int64: Int64 = 0
    public var uint: UInt = 0
    public var uint8: UInt8 = 0
    public var uint16: UInt16 = 0
    public var uint32: UInt32 = 0
    public var uint64: UInt64 = 0
    public var float: Float = 0
    public var double: Double = 0
    public var string: String = ""
    public var date: Date = Date(timeIntervalSince1970: 0)
    public var data: Data = Data()
    public var url: URL = URL(fileURLWithPath: "/")
    public var uuid: UUID = UUID()
    public var decimal: Decimal = 0
    public var optionalInt: Int?
    public var optionalString: String?
    public var array: [String] = []
    public var set: Set<Int> = []
    public var dictionary: [String: Int] = [:]
    public var intKeyed: [Int: String] = [:]
    public var category: Category = .gear
    public var reminder: Reminder = .none
    public var place: Place = Place(latitude: 0, longitude: 0)
    public var places: [Place] = []

    public init() {}
}

/// Versioned schemas nest models in an enum, as SwiftData's `VersionedSchema` does.
public enum SchemaV1: VersionedSchema {
    public static var versionIdentifier: Schema.Version { Schema.Version(1, 0, 0) }
    public static var models: [any PersistentModel.Type] { [Note.self] }

    @Model
    public final class Note {
        public var text: String
        public init(text: String) { self.text = text }
    }
}

/// The lesson's trip with a one-way relationship and the default delete rule.
@Model
public final class Outing {
    public var city: String
    @Relationship public var stops: [Stop] = []
    public init(city: String) { self.city = city }
}

/// The same with `.cascade`.
@Model
public final class Expedition {
    public var city: String
    @Relationship(deleteRule: .cascade) public var stops: [Stop] = []
    public init(city: String) { self.city = city }
}

/// A model that does not point back at its owner.
@Model
public final class Stop {
    public var name: String
    public init(name: String) { self.name = name }
}

/// A chore with a compound index, for the planner's tests.
@Model
public final class Chore {
    public var seq: Int
    public var title: String
    public var priority: Int
    public var isCompleted: Bool
    public var dueDate: Date?
    #Index<Chore>([\.isCompleted, \.priority], [\.dueDate], [\.title], [\.priority])

    public init(seq: Int, title: String, priority: Int, isCompleted: Bool, dueDate: Date?) {
        self.seq = seq
        self.title = title
        self.priority = priority
        self.isCompleted = isCompleted
        self.dueDate = dueDate
    }
}

/// Every model the tests use.
nonisolated(unsafe) public let allTestModels: [any PersistentModel.Type] = [
    Trip.self, Item.self, Badge.self, Person.self, Folder.self, Document.self, Sample.self, SchemaV1.Note.self,
    Outing.self, Expedition.self, Stop.self, Chore.self,
]
