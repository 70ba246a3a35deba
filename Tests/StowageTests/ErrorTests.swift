import Foundation
@_spi(Testing) import Stowage
import StowageTestSupport
import Testing

@Suite("Clear errors for bad input")
struct ErrorTests {
    @Test func aModelTypeOutsideTheSchema() throws {
        let container = try ModelContainer(
            for: Trip.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let context = ModelContext(container)
        #expect(throws: SwiftDataError.unknownModelType) { _ = try context.fetch(FetchDescriptor<Person>()) }
        context.insert(Person(email: "e", name: "n"))
        #expect(throws: SwiftDataError.unknownModelType) { try context.save() }
    }

    @Test func aConfigurationSchemaThatDoesNotMatchTheContainer() throws {
        let configuration = ModelConfiguration(schema: Schema([Person.self]), isStoredInMemoryOnly: true)
        #expect(throws: SwiftDataError.configurationSchemaMismatch) {
            _ = try ModelContainer(for: Schema([Folder.self]), configurations: configuration)
        }
    }

    @Test func anOnDiskConfigurationOpensTheLogStore() throws {
        let url = LogTestDirectory.fresh().url.appendingPathComponent("nested/trips.store")
        do {
            let container = try ModelContainer(for: Trip.self, configurations: ModelConfiguration(url: url))
            #expect(container.storesForTesting.first is LogStore)
            let context = ModelContext(container)
            context.insert(Trip(name: "Porto"))
            try context.save()
        }
        let reopened = try ModelContainer(for: Trip.self, configurations: ModelConfiguration(url: url))
        #expect(try ModelContext(reopened).fetch(FetchDescriptor<Trip>()).map(\.name) == ["Porto"])
        #expect(ModelConfiguration("trips").url.lastPathComponent == "trips.store")
    }

    @Test func aSortOnARelationshipIsRefused() throws {
        let context = ModelContext(try memoryContainer())
        #expect(throws: SwiftDataError.unsupportedSortDescriptor) {
            _ = try context.fetch(FetchDescriptor<Item>(sortBy: [SortDescriptor(\.trip?.name)]))
        }
    }

    @Test func aStoredValueOfTheWrongTypeIsAnErrorNotATrap() throws {
        let container = try memoryContainer()
        let entity = try #require(container.schema.entitiesByName["Item"])
        var values = entity.properties.map { _ in SnapshotValue.null }
        values[entity.property(named: "name")!.index] = .int(3)
        try storeRecord(values, of: "Item", in: container)
        #expect(throws: SwiftDataError.modelValidationFailure) {
            _ = try ModelContext(container).fetch(FetchDescriptor<Item>())
        }
    }

    @Test func anIntegerThatDoesNotFitIsRefused() throws {
        let container = try memoryContainer()
        let entity = try #require(container.schema.entitiesByName["Sample"])
        var values = try ModelContext(container).snapshotForTesting(Sample()).values
        values[entity.property(named: "int8")!.index] = .int(300)
        try storeRecord(values, of: "Sample", in: container)
        do {
            _ = try ModelContext(container).fetch(FetchDescriptor<Sample>())
            Issue.record("fetch should have thrown")
        } catch let error as SwiftDataError {
            #expect(error.code == .modelValidationFailure)
            #expect(error.message.contains("int8"))
        }
    }
}

/// Saves a record with `values` for `entityName` straight into the container's first store,
/// past a model's type checks: a stored value a model could not have written.
func storeRecord(_ values: [SnapshotValue], of entityName: String, in container: ModelContainer) throws {
    let store = try #require(container.storesForTesting.first)
    let record = DefaultSnapshot(
        persistentIdentifier: PersistentIdentifier.temporaryForTesting(entityName: entityName), values: values)
    _ = try store.save(
        DataStoreSaveChangesRequest<DefaultSnapshot>(
            editingState: EditingState(), inserted: [record], updated: [], deleted: []))
}
