import Foundation
import Stowage
import StowageTestSupport
import Testing

/// The seed's container and configuration snippets (`Seed000Containers.swift`): they
/// compile as written, and what they make is what they say.
@Suite("The seed's containers and configurations")
struct SeedContainerTests {
    typealias S = Seed000Containers

    @Test func theConfiguredStoreLivesInItsGroupsDirectory() {
        let config = S.configured()
        #expect(config.name == "Store" && !config.isStoredInMemoryOnly)
        #expect(config.url.deletingLastPathComponent().lastPathComponent == "group.com.example.app")
        #expect(S.appGroup().url.deletingLastPathComponent().lastPathComponent == "group.com.example.myapp")
        #expect(S.cloudKitOptions().allSatisfy { $0.name == "default" && $0.allowsSave })
    }

    @Test func anInMemoryContainerSavesAndFetches() throws {
        let container = try S.inMemory()
        #expect(container.configurations.first?.isStoredInMemoryOnly == true)
        let context = ModelContext(container)
        context.insert(S.Trip())
        try context.save()
        #expect(try context.fetchCount(FetchDescriptor<S.Trip>()) == 1)
    }

    /// Two configurations, each with its own models: each entity goes to its own store.
    /// Opened at URLs of the test's own, with the seed's names and schemas; each store,
    /// opened alone afterwards, holds its own models' records.
    @Test func separateStoresHoldTheirOwnModels() throws {
        let directory = LogTestDirectory.fresh()
        func placed(_ configuration: ModelConfiguration) -> ModelConfiguration {
            ModelConfiguration(
                configuration.name, schema: configuration.schema,
                url: directory.url.appendingPathComponent(UUID().uuidString + ".store"))
        }
        let notes = S.localAndSynced().map(placed)
        #expect(notes.map(\.name) == ["Local", "Synced"])
        do {
            let container = try ModelContainer(
                for: Schema([S.DraftNote.self, S.PublishedNote.self]), configurations: notes)
            #expect(container.configurations.count == 2)
            let context = ModelContext(container)
            context.insert(S.DraftNote())
            context.insert(S.PublishedNote())
            context.insert(S.PublishedNote())
            try context.save()
        }
        let local = ModelContext(try ModelContainer(for: Schema([S.DraftNote.self]), configurations: [notes[0]]))
        #expect(try local.fetchCount(FetchDescriptor<S.DraftNote>()) == 1)
        let synced = ModelContext(try ModelContainer(for: Schema([S.PublishedNote.self]), configurations: [notes[1]]))
        #expect(try synced.fetchCount(FetchDescriptor<S.PublishedNote>()) == 2)

        let stores = S.separateStores().map(placed)
        #expect(
            stores.map { Set($0.schema?.entities.map(\.name) ?? []) } == [
                ["AppSettings", "CacheEntry"], ["UserDocument", "SharedNote"],
            ])
        do {
            let both = try ModelContainer(
                for: Schema([S.AppSettings.self, S.CacheEntry.self, S.UserDocument.self, S.SharedNote.self]),
                configurations: stores)
            let writer = ModelContext(both)
            writer.insert(S.CacheEntry())
            writer.insert(S.SharedNote())
            try writer.save()
        }
        let first = ModelContext(
            try ModelContainer(for: Schema([S.AppSettings.self, S.CacheEntry.self]), configurations: [stores[0]]))
        #expect(try first.fetchCount(FetchDescriptor<S.CacheEntry>()) == 1)
        let second = ModelContext(
            try ModelContainer(for: Schema([S.UserDocument.self, S.SharedNote.self]), configurations: [stores[1]]))
        #expect(try second.fetchCount(FetchDescriptor<S.SharedNote>()) == 1)
    }

    /// The bundled database opens read-only: it reads, and a save is refused.
    @Test func theBundledStoreOpensReadOnly() throws {
        let directory = LogTestDirectory.fresh()
        let url = directory.url.appendingPathComponent("seed.store")
        do {
            let writer = try ModelContainer(
                for: S.ReferenceItem.self, configurations: ModelConfiguration(url: url))
            let context = ModelContext(writer)
            let item = S.ReferenceItem()
            item.code = "A1"
            context.insert(item)
            try context.save()
        }
        let container = try ModelContainer(
            for: Schema([S.ReferenceItem.self]), configurations: S.readOnly(bundledURL: url))
        let context = ModelContext(container)
        #expect(try context.fetch(FetchDescriptor<S.ReferenceItem>()).map(\.code) == ["A1"])
        context.insert(S.ReferenceItem())
        #expect(throws: DataStoreError.self) { try context.save() }
    }
}
