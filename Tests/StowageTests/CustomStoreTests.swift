import Foundation
@_spi(Testing) import Stowage
import StowageTestSupport
import Testing

/// A store written against the public `DataStore` protocol, as an app writes one: the
/// context filters, sorts and cuts for it when it asks, counts and identifiers come from
/// the protocol's defaults, and a store of another snapshot type is refused clearly.
@Suite struct CustomStoreTests {
    /// Items named a to f with weights 5 to 0, and every other one with a note.
    func stocked() throws -> (ModelContainer, ModelContext) {
        let container = try StoreFactory.fileDictionary.container()
        let context = ModelContext(container)
        for (i, name) in ["a", "b", "c", "d", "e", "f"].enumerated() {
            let item = Item(name: name, weight: Double(5 - i))
            item.note = i % 2 == 0 ? "kept" : nil
            context.insert(item)
        }
        try context.save()
        return (container, ModelContext(container))
    }

    @Test func theContextFiltersSortsAndCutsForAStoreThatPrefersIt() throws {
        let (_, context) = try stocked()
        var descriptor = FetchDescriptor<Item>(
            predicate: #Predicate { $0.note != nil && $0.weight < 5 }, sortBy: [SortDescriptor(\.weight)])
        #expect(try context.fetch(descriptor).map(\.name) == ["e", "c"])
        descriptor.fetchLimit = 1
        #expect(try context.fetch(descriptor).map(\.name) == ["e"])
        descriptor.fetchOffset = 1
        #expect(try context.fetch(descriptor).map(\.name) == ["c"])
        #expect(try context.fetchCount(FetchDescriptor<Item>(predicate: #Predicate { $0.note == nil })) == 3)
        let sortedOnly = FetchDescriptor<Item>(sortBy: [SortDescriptor(\.weight, order: .reverse)])
        #expect(try context.fetch(sortedOnly).map(\.name) == ["a", "b", "c", "d", "e", "f"])
        var windowOnly = FetchDescriptor<Item>()
        windowOnly.fetchOffset = 4
        #expect(try context.fetch(windowOnly).map(\.name) == ["e", "f"])
        let ids = try context.fetchIdentifiers(
            FetchDescriptor<Item>(predicate: #Predicate { $0.weight >= 4 }, sortBy: [SortDescriptor(\.name)]))
        #expect(ids.count == 2)
        #expect(ids.compactMap { (context.model(for: $0) as? Item)?.name } == ["a", "b"])
    }

    @Test func pendingChangesMergeWithWhatTheContextFiltered() throws {
        let (_, context) = try stocked()
        let f = try #require(try context.fetch(FetchDescriptor<Item>(predicate: #Predicate { $0.name == "f" })).first)
        f.note = "now kept"
        context.insert(Item(name: "g", weight: 0.5))
        let kept = try context.fetch(
            FetchDescriptor<Item>(predicate: #Predicate { $0.note != nil }, sortBy: [SortDescriptor(\.name)]))
        #expect(kept.map(\.name) == ["a", "c", "e", "f"])
        let light = try context.fetch(
            FetchDescriptor<Item>(predicate: #Predicate { $0.weight < 1 }, sortBy: [SortDescriptor(\.weight)]))
        #expect(light.map(\.name) == ["f", "g"])
    }

    @Test func aReopenedStoreReadsWhatItsFileHolds() throws {
        let url = JSONTest.freshURL()
        let schema = Schema(allTestModels)
        do {
            let container = try ModelContainer(
                for: schema, configurations: [FileDictionaryStoreConfiguration(name: "d", schema: schema, fileURL: url)]
            )
            let context = ModelContext(container)
            context.insert(Trip(name: "Lisbon"))
            try context.save()
        }
        let container = try ModelContainer(
            for: schema, configurations: [FileDictionaryStoreConfiguration(name: "d", schema: schema, fileURL: url)])
        #expect(try ModelContext(container).fetch(FetchDescriptor<Trip>()).map(\.name) == ["Lisbon"])
        #expect(container.dataStoreConfigurations.first?.name == "d")
    }

    @Test func aConfigurationThatDoesNotValidateOpensNothing() throws {
        let url = URL(fileURLWithPath: "/nonexistent-\(UUID())/store.json")
        #expect(throws: DataStoreError.ioFailure) {
            try ModelContainer(
                for: Schema(allTestModels), configurations: [FileDictionaryStoreConfiguration(name: "d", fileURL: url)])
        }
        #expect(!FileManager.default.fileExists(atPath: url.deletingLastPathComponent().path))
    }

    @Test func aStoreOfAnotherSnapshotTypeIsRefusedAtOpen() throws {
        #expect(throws: DataStoreError.unsupportedFeature) {
            try ModelContainer(for: Schema(allTestModels), configurations: [OtherSnapshotConfiguration()])
        }
    }

    @Test func contextsOpenAndCloseTheirEditingStates() throws {
        let container = try StoreFactory.fileDictionary.container()
        let first = ModelContext(container)
        let store = try #require(container.storesForTesting.first as? FileDictionaryStore)
        let before = store.liveStates
        #expect(before.count == 1)
        var second: ModelContext? = ModelContext(container)
        #expect(store.liveStates.count == 2 && store.liveStates.isSuperset(of: before))
        _ = second?.hasChanges
        second = nil
        #expect(store.liveStates == before)
        withExtendedLifetime(first) {}
    }

    @Test func recordsTheStoreDeletesOnItsOwnLeaveTheContext() throws {
        let container = try StoreFactory.fileDictionary.container()
        let context = ModelContext(container)
        let store = try #require(container.storesForTesting.first as? FileDictionaryStore)
        let old = Trip(name: "expired")
        context.insert(old)
        try context.save()
        let oldID = old.persistentModelID
        store.expires = { (snapshot: DefaultSnapshot) in snapshot.persistentIdentifier == oldID }
        context.insert(Trip(name: "new"))
        try context.save()
        #expect(old.isDeleted)
        #expect((context.registeredModel(for: oldID) as Trip?) == nil)
        #expect(try context.fetch(FetchDescriptor<Trip>()).map(\.name) == ["new"])
    }

    @Test func identifiersTakeIntegerPrimaryKeysAsTheyAre() throws {
        let id = try PersistentIdentifier.identifier(for: "store", entityName: "Trip", primaryKey: 42)
        #expect(id == .permanent(entityName: "Trip", storeIdentifier: "store", primaryKey: 42))
        #expect(id.primaryKey == 42 && id.entityName == "Trip" && id.storeIdentifier == "store")
        #expect(id.primaryKey(as: Int.self) == 42)
        #expect(try PersistentIdentifier.identifier(for: "store", entityName: "Trip", primaryKey: UInt8(42)) == id)
    }

    /// A key of another type (Apple's own sample store keys records by `UUID`) makes an
    /// identifier that is equal only to one made from an equal key, reads its key back, and
    /// survives a round trip through JSON, as if sent to another process.
    @Test func identifiersTakeKeysOfAnyCodableType() throws {
        struct Compound: Codable, Hashable {
            var region: String
            var number: Int
        }
        let uuid = UUID()
        let byUUID = try PersistentIdentifier.identifier(for: "store", entityName: "Trip", primaryKey: uuid)
        #expect(try PersistentIdentifier.identifier(for: "store", entityName: "Trip", primaryKey: uuid) == byUUID)
        #expect(try PersistentIdentifier.identifier(for: "store", entityName: "Trip", primaryKey: UUID()) != byUUID)
        #expect(try PersistentIdentifier.identifier(for: "other", entityName: "Trip", primaryKey: uuid) != byUUID)
        #expect(try PersistentIdentifier.identifier(for: "store", entityName: "Stop", primaryKey: uuid) != byUUID)
        #expect(byUUID.primaryKey == nil && !byUUID.isTemporary)
        #expect(byUUID.primaryKey(as: UUID.self) == uuid)
        #expect(byUUID.primaryKey(as: Int.self) == nil)

        let lisbon = try PersistentIdentifier.identifier(for: "store", entityName: "Trip", primaryKey: "lisbon")
        let porto = try PersistentIdentifier.identifier(for: "store", entityName: "Trip", primaryKey: "porto")
        #expect(lisbon < porto && !(porto < lisbon))
        #expect(lisbon != (try PersistentIdentifier.identifier(for: "store", entityName: "Trip", primaryKey: 7)))
        let big = try PersistentIdentifier.identifier(for: "store", entityName: "Trip", primaryKey: UInt64.max)
        #expect(big.primaryKey == nil && big.primaryKey(as: UInt64.self) == UInt64.max)

        let compound = try PersistentIdentifier.identifier(
            for: "store", entityName: "Trip", primaryKey: Compound(region: "eu", number: 3))
        #expect(compound.primaryKey(as: Compound.self) == Compound(region: "eu", number: 3))
        #expect(compound.description == #"Trip/k{"number":3,"region":"eu"}@store"#)

        for id in [byUUID, lisbon, big, compound] {
            let decoded = try JSONDecoder().decode(PersistentIdentifier.self, from: JSONEncoder().encode(id))
            #expect(decoded == id && decoded.hashValue == id.hashValue)
        }
        let set: Set = [byUUID, lisbon, porto, big, compound, lisbon]
        #expect(set.count == 5)
    }

    @Test func entityNamesAreTheClassNames() {
        #expect(Schema.entityName(for: Trip.self) == "Trip")
        #expect(Schema.entityName(for: Item.self) == "Item")
    }
}

/// A snapshot that is not ``DefaultSnapshot``: contexts cannot read models from it.
struct OtherSnapshot: DataStoreSnapshot {
    var persistentIdentifier: PersistentIdentifier
    func copy(
        persistentIdentifier: PersistentIdentifier, remappedIdentifiers: [PersistentIdentifier: PersistentIdentifier]?
    ) -> OtherSnapshot { OtherSnapshot(persistentIdentifier: persistentIdentifier) }
}

final class OtherSnapshotStore: DataStore {
    typealias Snapshot = OtherSnapshot
    let configuration: OtherSnapshotConfiguration
    let identifier = "other"
    let schema: Schema
    init(_ configuration: OtherSnapshotConfiguration, migrationPlan: (any SchemaMigrationPlan.Type)?) throws {
        self.configuration = configuration
        self.schema = configuration.schema ?? Schema()
    }
    func fetch<T: PersistentModel>(_ request: DataStoreFetchRequest<T>) throws -> DataStoreFetchResult<T, OtherSnapshot>
    { DataStoreFetchResult(descriptor: request.descriptor, fetchedSnapshots: [], relatedSnapshots: [:]) }
    func save(_ request: DataStoreSaveChangesRequest<OtherSnapshot>) throws -> DataStoreSaveChangesResult<OtherSnapshot>
    { DataStoreSaveChangesResult(for: identifier) }
    func erase() throws {}
}

struct OtherSnapshotConfiguration: DataStoreConfiguration {
    typealias Store = OtherSnapshotStore
    var name = "other"
    var schema: Schema?
}
