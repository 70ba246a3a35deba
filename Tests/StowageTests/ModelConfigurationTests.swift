import Foundation
@_spi(Testing) import Stowage
import StowageTestSupport
import Testing

/// SwiftData's `ModelConfiguration` initializers and `ModelContainer.configurations`, as
/// apps write them.
@Suite("ModelConfiguration")
struct ModelConfigurationTests {
    @Test func everyInitializerSwiftDataDocumentsIsUnambiguous() {
        let plain = ModelConfiguration()
        #expect(!plain.isStoredInMemoryOnly && plain.name == "default" && plain.allowsSave)
        #expect(plain.url == ModelConfiguration.defaultDirectory.appendingPathComponent("default.store"))
        #expect(ModelConfiguration(isStoredInMemoryOnly: true).isStoredInMemoryOnly)

        let forTypes = ModelConfiguration(for: Trip.self, isStoredInMemoryOnly: true)
        #expect(forTypes.isStoredInMemoryOnly)
        #expect(forTypes.schema?.entitiesByName["Trip"] != nil)
        // The types Trip reaches come along.
        #expect(forTypes.schema?.entitiesByName["Item"] != nil)
        #expect(ModelConfiguration(for: Person.self).schema?.entities.map(\.name) == ["Person"])

        let named = ModelConfiguration("Named", schema: Schema([Person.self]), allowsSave: false)
        #expect(named.name == "Named" && !named.allowsSave)
        #expect(named.url.lastPathComponent == "Named.store")

        let at = URL(fileURLWithPath: "/tmp/somewhere/trips.store")
        let byURL = ModelConfiguration(url: at)
        #expect(byURL.url == at && byURL.name == "trips")
        #expect(ModelConfiguration("N", schema: nil, url: at, allowsSave: true, cloudKitDatabase: .none).name == "N")
    }

    /// Linux has no app groups: a group identifier names a directory of its own in the
    /// default directory, which every process of the user that names the group shares.
    @Test func aGroupContainerIsADirectoryOfItsOwn() {
        let grouped = ModelConfiguration(
            "Store", isStoredInMemoryOnly: false, groupContainer: .identifier("group.com.example.app"))
        #expect(
            grouped.url
                == ModelConfiguration.defaultDirectory.appendingPathComponent("group.com.example.app")
                .appendingPathComponent("Store.store"))
        let sneaky = ModelConfiguration("S", groupContainer: .identifier("../../etc"))
        #expect(
            sneaky.url.deletingLastPathComponent().deletingLastPathComponent() == ModelConfiguration.defaultDirectory)
        #expect(
            ModelConfiguration("A", groupContainer: .automatic).url.deletingLastPathComponent()
                == ModelConfiguration.defaultDirectory)
        #expect(
            ModelConfiguration("A", groupContainer: .none).url.deletingLastPathComponent()
                == ModelConfiguration.defaultDirectory)
    }

    /// `container.configurations.first?.url`, as the seeds print it; a custom store's
    /// configuration is among `dataStoreConfigurations`.
    @Test func theContainerGivesItsModelConfigurationsAsASet() throws {
        let directory = LogTestDirectory.fresh()
        let url = directory.storeURL
        let container = try ModelContainer(for: Person.self, configurations: ModelConfiguration(url: url))
        #expect(container.configurations.first?.url == url)
        #expect(container.configurations.count == 1)

        let custom = try ModelContainer(
            for: Person.self,
            configurations: FileDictionaryStoreConfiguration(
                name: "d", schema: Schema([Person.self]), fileURL: directory.url.appendingPathComponent("d.json")))
        #expect(custom.configurations.isEmpty)
        #expect(custom.dataStoreConfigurations.first?.name == "d")
    }
}
