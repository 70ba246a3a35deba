import Foundation
import Stowage
import Testing

/// The seed's custom store (`Seed000CustomStore`), compiled as written: the container opens
/// it through its configuration, a context's save and fetch reach it, and what it answers
/// (nothing: it is a stub) is what the context returns.
@Suite("The seed's custom store")
struct SeedCustomStoreTests {
    @Test func theSeedsStoreOpensSavesAndFetches() throws {
        let container = try Seed000CustomStore.open()
        #expect(container.dataStoreConfigurations.count == 1)
        let configuration = try #require(
            container.dataStoreConfigurations.first as? Seed000CustomStore.JSONStoreConfiguration)
        #expect(configuration.name == "JSONStore")
        #expect(configuration.fileURL.lastPathComponent == "data.json")
        #expect(
            configuration.fileURL.deletingLastPathComponent().standardizedFileURL.path
                == FileManager.default.urls(for: .documentDirectory, in: .userDomainMask).first?.standardizedFileURL
                .path)
        let context = ModelContext(container)
        context.insert(Seed000CustomStore.Trip(name: "Lisbon"))
        try context.save()
        #expect(!context.hasChanges)
        var stored = FetchDescriptor<Seed000CustomStore.Trip>()
        stored.includePendingChanges = false
        #expect(try context.fetch(stored).isEmpty, "the seed's store fetches nothing")
        #expect(try context.fetchCount(stored) == 0)
    }
}
