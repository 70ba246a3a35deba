import Foundation
@_spi(Testing) import Stowage
import StowageTestSupport
import Testing

@Model
final class Crew {
    var name: String
    @Relationship(deleteRule: .cascade, minimumModelCount: 2, maximumModelCount: 3, inverse: \Sailor.crew)
    var sailors: [Sailor] = []
    @Relationship(maximumModelCount: 1, inverse: \Boat.crew) var boats: [Boat]? = []
    init(name: String) { self.name = name }
}

@Model
final class Sailor {
    var name: String
    var crew: Crew?
    init(name: String) { self.name = name }
}

@Model
final class Boat {
    var name: String
    var crew: Crew?
    init(name: String) { self.name = name }
}

/// `minimumModelCount` and `maximumModelCount` hold at save, with an error that names the
/// model and the relationship, and nothing saved.
@Suite("Relationship counts")
struct RelationshipCountTests {
    static let stores = StoreFactory.all.map(\.name)

    private func context(_ store: String) throws -> (ModelContainer, ModelContext) {
        let factory = try #require(StoreFactory.all.first { $0.name == store })
        let container = try factory.make(Schema([Crew.self, Sailor.self, Boat.self]))
        return (container, ModelContext(container))
    }

    @Test(arguments: stores)
    func tooFewOrTooManyFailTheSaveAndNameTheRelationship(store: String) throws {
        let (container, context) = try context(store)
        let crew = Crew(name: "Aurora")
        crew.sailors = [Sailor(name: "Ana")]
        context.insert(crew)
        let error = try #require(throws: SwiftDataError.self) { try context.save() }
        #expect(error.code == .modelValidationFailure)
        #expect(error.message.contains("Crew.sailors"))
        #expect(error.message.contains("holds 1"))
        #expect(try ModelContext(container).fetchCount(FetchDescriptor<Crew>()) == 0)

        crew.sailors.append(Sailor(name: "Bo"))
        try context.save()
        #expect(try ModelContext(container).fetchCount(FetchDescriptor<Sailor>()) == 2)

        crew.sailors += [Sailor(name: "Cy"), Sailor(name: "Di")]
        #expect(throws: SwiftDataError.modelValidationFailure) { try context.save() }
        crew.sailors.removeLast()
        try context.save()
        // The one taken out of the crew is saved too, without a crew.
        #expect(try ModelContext(container).fetchCount(FetchDescriptor<Sailor>()) == 4)
        #expect(
            try ModelContext(container).fetchCount(FetchDescriptor<Sailor>(predicate: #Predicate { $0.crew == nil }))
                == 1)
    }

    /// Setting the to-one side changes the to-many side's count too; a deleted member no
    /// longer counts; an optional relationship may hold none but not more than its maximum.
    @Test(arguments: stores)
    func inversesDeletesAndOptionalRelationshipsCount(store: String) throws {
        let (_, context) = try context(store)
        let crew = Crew(name: "Borealis")
        let a = Sailor(name: "A")
        let b = Sailor(name: "B")
        crew.sailors = [a, b]
        context.insert(crew)
        try context.save()

        context.delete(b)
        #expect(throws: SwiftDataError.modelValidationFailure) { try context.save() }
        context.rollback()

        let c = Sailor(name: "C")
        context.insert(c)
        c.crew = crew
        try context.save()
        #expect(crew.sailors.count == 3)
        let d = Sailor(name: "D")
        context.insert(d)
        d.crew = crew
        #expect(throws: SwiftDataError.modelValidationFailure) { try context.save() }
        context.rollback()

        crew.boats = [Boat(name: "Skiff"), Boat(name: "Dinghy")]
        #expect(throws: SwiftDataError.modelValidationFailure) { try context.save() }
        crew.boats = nil
        try context.save()
    }
}
