import Foundation

/// Describes one store of a container: where it lives and which models it holds.
///
/// `ModelConfiguration(isStoredInMemoryOnly: true)` gives a ``MemoryStore``. A
/// configuration with a URL (or none) describes the default on-disk store.
///
/// Stowage differs from SwiftData while the on-disk log store is not built yet: an
/// on-disk configuration throws ``DataStoreError/unsupportedFeature`` when the container
/// opens it, rather than quietly keeping data in memory, so that no app believes a save
/// is durable when it is not.
public struct ModelConfiguration: DataStoreConfiguration, Hashable {
    public typealias Store = MemoryStore

    /// An app-group container. Accepted for source compatibility; ignored on Linux.
    public struct GroupContainer: Hashable, Sendable {
        let value: String
        public static let automatic = GroupContainer(value: "automatic")
        public static let none = GroupContainer(value: "none")
        public static func identifier(_ id: String) -> GroupContainer { GroupContainer(value: id) }
    }

    /// A CloudKit database. Accepted for source compatibility; ignored on Linux.
    public struct CloudKitDatabase: Hashable, Sendable {
        let value: String
        public static let automatic = CloudKitDatabase(value: "automatic")
        public static let none = CloudKitDatabase(value: "none")
        public static func `private`(_ id: String) -> CloudKitDatabase { CloudKitDatabase(value: id) }
    }

    public var name: String
    public var schema: Schema?
    /// Whether the store lives in memory only.
    public let isStoredInMemoryOnly: Bool
    /// Whether contexts may save to the store.
    public let allowsSave: Bool
    /// Where the on-disk store lives.
    public let url: URL
    public let groupContainer: GroupContainer
    public let cloudKitDatabase: CloudKitDatabase

    /// A configuration for the default store, or an in-memory one.
    public init(
        _ name: String? = nil, schema: Schema? = nil, isStoredInMemoryOnly: Bool = false, allowsSave: Bool = true,
        groupContainer: GroupContainer = .automatic, cloudKitDatabase: CloudKitDatabase = .automatic
    ) {
        self.name = name ?? "default"
        self.schema = schema
        self.isStoredInMemoryOnly = isStoredInMemoryOnly
        self.allowsSave = allowsSave
        self.url = Self.defaultDirectory.appendingPathComponent("\(name ?? "default").store")
        self.groupContainer = groupContainer
        self.cloudKitDatabase = cloudKitDatabase
    }

    /// A configuration for a store at `url`.
    public init(
        _ name: String? = nil, schema: Schema? = nil, url: URL, allowsSave: Bool = true,
        cloudKitDatabase: CloudKitDatabase = .automatic
    ) {
        self.name = name ?? url.deletingPathExtension().lastPathComponent
        self.schema = schema
        self.isStoredInMemoryOnly = false
        self.allowsSave = allowsSave
        self.url = url
        self.groupContainer = .automatic
        self.cloudKitDatabase = cloudKitDatabase
    }

    /// Where default stores live: `$XDG_DATA_HOME`, or `~/.local/share`.
    public static var defaultDirectory: URL {
        if let xdg = ProcessInfo.processInfo.environment["XDG_DATA_HOME"], !xdg.isEmpty {
            return URL(fileURLWithPath: xdg, isDirectory: true)
        }
        return FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".local/share", isDirectory: true)
    }

    public func makeStore(schema: Schema, migrationPlan: (any SchemaMigrationPlan.Type)?) throws -> any DataStore {
        if isStoredInMemoryOnly {
            return try MemoryStore(
                MemoryStoreConfiguration(name: name, schema: self.schema ?? schema), migrationPlan: migrationPlan)
        }
        throw DataStoreError(
            .unsupportedFeature,
            "the on-disk store (\(url.path)) is not available in this version of Stowage; "
                + "use ModelConfiguration(isStoredInMemoryOnly: true)")
    }

    public static func == (lhs: ModelConfiguration, rhs: ModelConfiguration) -> Bool {
        lhs.name == rhs.name && lhs.isStoredInMemoryOnly == rhs.isStoredInMemoryOnly && lhs.url == rhs.url
            && lhs.allowsSave == rhs.allowsSave && lhs.schema == rhs.schema
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(name)
        hasher.combine(isStoredInMemoryOnly)
        hasher.combine(url)
    }
}
