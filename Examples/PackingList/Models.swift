import Foundation
import Stowage

/// A trip that things are packed for.
@Model
final class Trip {
    @Attribute(.unique) var name: String
    @Relationship(deleteRule: .cascade, inverse: \PackingItem.trip) var items: [PackingItem] = []

    init(name: String) {
        self.name = name
    }
}

/// One thing to pack for a trip.
@Model
final class PackingItem {
    var name: String
    var category: String
    var isPacked = false
    var trip: Trip?

    init(name: String, category: String, trip: Trip) {
        self.name = name
        self.category = category
        self.trip = trip
    }

    static let categories = ["Clothes", "Documents", "Gear"]
}
