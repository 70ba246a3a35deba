// swift-format-ignore-file
// The container and configuration snippets of `shared/seeds/000_…` ("ModelContainer
// Setup", "CloudKit Integration", "Separate Stores for Different Data", "Read-Only Bundled
// Database", "App Group Sharing"), as written there but for the import, each inside a
// function that returns what it made. The seed names models it does not define; the
// smallest `@Model` classes stand for them. `Bundle.main.url(forResource:)` finds no
// bundled store in a test, so the read-only snippet takes the URL as a parameter; the
// snippets that open a store in the default directory are compiled, and their
// configurations checked, but not opened (they would write into the user's home).
import Foundation
import Stowage

enum Seed000Containers {
    @Model final class Trip { var name = ""; init() {} }
    @Model final class LivingAccommodation { var address = ""; init() {} }
    @Model final class DraftNote { var text = ""; init() {} }
    @Model final class PublishedNote { var text = ""; init() {} }
    @Model final class AppSettings { var theme = ""; init() {} }
    @Model final class CacheEntry { var key = ""; init() {} }
    @Model final class UserDocument { var title = ""; init() {} }
    @Model final class SharedNote { var text = ""; init() {} }
    @Model final class ReferenceItem { var code = ""; init() {} }

    static func configured() -> ModelConfiguration {
        // Configured
        let config = ModelConfiguration("Store", isStoredInMemoryOnly: false,
            groupContainer: .identifier("group.com.example.app"),
            cloudKitDatabase: .private("iCloud.com.example.app"))
        return config
    }

    static func inMemory() throws -> ModelContainer {
        // In-memory (previews/tests)
        let container = try ModelContainer(for: Trip.self,
            configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        return container
    }

    static func cloudKitOptions() -> [ModelConfiguration] {
        // Automatic: uses CloudKit entitlement from the app
        let autoConfig = ModelConfiguration(
            cloudKitDatabase: .automatic
        )

        // Explicit private database
        let privateConfig = ModelConfiguration(
            cloudKitDatabase: .private("iCloud.com.example.myapp")
        )

        // No CloudKit sync
        let localConfig = ModelConfiguration(
            cloudKitDatabase: .none
        )
        return [autoConfig, privateConfig, localConfig]
    }

    static func localAndSynced() -> [ModelConfiguration] {
        let localConfig = ModelConfiguration(
            "Local",
            schema: Schema([DraftNote.self]),
            cloudKitDatabase: .none
        )

        let syncedConfig = ModelConfiguration(
            "Synced",
            schema: Schema([PublishedNote.self]),
            cloudKitDatabase: .private("iCloud.com.example.app")
        )
        return [localConfig, syncedConfig]
    }

    static func separateStores() -> [ModelConfiguration] {
        // Local-only data (no sync)
        let localConfig = ModelConfiguration(
            "Local",
            schema: Schema([AppSettings.self, CacheEntry.self]),
            isStoredInMemoryOnly: false,
            cloudKitDatabase: .none
        )

        // Synced data
        let syncConfig = ModelConfiguration(
            "Synced",
            schema: Schema([UserDocument.self, SharedNote.self]),
            cloudKitDatabase: .private("iCloud.com.example.app")
        )
        return [localConfig, syncConfig]
    }

    static func readOnly(bundledURL: URL) -> ModelConfiguration {
        let readOnlyConfig = ModelConfiguration(
            "SeedData",
            schema: Schema([ReferenceItem.self]),
            url: bundledURL,
            allowsSave: false
        )
        return readOnlyConfig
    }

    static func appGroup() -> ModelConfiguration {
        let sharedConfig = ModelConfiguration(
            groupContainer: .identifier("group.com.example.myapp")
        )
        return sharedConfig
    }
}
