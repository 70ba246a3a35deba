import Foundation
import Observation
import Stowage
import StowageTestSupport
import Synchronization
import Testing

/// A model class that is not `final`: its accessors refer to the key paths `@Model` makes
/// once through the class's own name, which must still type-check and observe.
@Model
class Vehicle {
    var name: String
    var wheels: Int

    init(name: String, wheels: Int) {
        self.name = name
        self.wheels = wheels
    }
}

@Suite("A model class that is not final")
struct NonFinalModelTests {
    @Test func savesFetchesAndIsObserved() throws {
        let container = try ModelContainer(
            for: Vehicle.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let context = ModelContext(container)
        context.insert(Vehicle(name: "bike", wheels: 2))
        try context.save()
        let bike = try #require(try context.fetch(FetchDescriptor<Vehicle>()).first)
        #expect(bike.name == "bike" && bike.wheels == 2)
        let changes = PosixMutex(0)
        withObservationTracking {
            _ = bike.wheels
        } onChange: {
            changes.withLock { $0 += 1 }
        }
        bike.name = "tricycle"
        #expect(changes.withLock { $0 } == 0, "a property the observer did not read")
        bike.wheels = 3
        #expect(changes.withLock { $0 } == 1)
        try context.save()
        let again = try ModelContext(container).fetch(FetchDescriptor<Vehicle>()).map { "\($0.name) \($0.wheels)" }
        #expect(again == ["tricycle 3"])
    }
}

/// A model class declared in a generic type, which cannot hold static stored properties:
/// `@Model` must not give it any.
struct GenericHolder<Content> {
    @Model
    final class Nested {
        var name: String
        init(name: String) { self.name = name }
    }
}

@Test func aModelInAGenericTypeCompilesAndReads() {
    let nested = GenericHolder<Int>.Nested(name: "inside")
    nested.name += " a generic type"
    #expect(nested.name == "inside a generic type")
}

/// A generic model class whose property has the generic type: the schema must describe
/// it through the builder for Codable values, so that it saves and reads back without a
/// transformer. (A `SendableMetatype` constraint on that builder once made such a property
/// pick the builder for non-Codable values instead.)
@Model
final class Labelled<Content: Codable> {
    var label: String
    var content: Content

    init(label: String, content: Content) {
        self.label = label
        self.content = content
    }
}

@Test func aGenericModelsCodablePropertySavesAndReadsBack() throws {
    let container = try ModelContainer(
        for: Labelled<[Int]>.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
    let context = ModelContext(container)
    context.insert(Labelled(label: "primes", content: [2, 3, 5, 7]))
    try context.save()
    let read = try ModelContext(container).fetch(FetchDescriptor<Labelled<[Int]>>())
    #expect(read.map(\.label) == ["primes"])
    #expect(read.first?.content == [2, 3, 5, 7])
}
