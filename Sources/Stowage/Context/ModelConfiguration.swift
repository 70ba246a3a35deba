import Foundation

/// Describes one store of a container: where it lives and which models it holds.
///
/// `ModelConfiguration(isStoredInMemoryOnly: true)` gives a ``MemoryStore``. A
/// configuration with a URL, or none, opens the default on-disk store, a ``LogStore``
/// (at `url`, or at `<name>.store` in ``defaultDirectory``), creating its directory and
/// file when they do not exist (unless `allowsSave` is `false`). It uses the log store's
/// defaults: `.full` durability and point-in-time recovery; open a
/// ``LogStoreConfiguration`` to choose others.
public struct ModelConfiguration: DataStoreConfiguration, Hashable {
    /// The store a configuration on disk opens; an in-memory one opens a ``MemoryStore``.
    public typealias Store = LogStore

    /// An app-group container: on Apple platforms, a directory that apps of one group
    /// share. Linux has no app groups; Stowage maps `.identifier(id)` to the directory
    /// `id` in ``defaultDirectory``, which every process of the same user that names the
    /// group shares. `.automatic` and `.none` use ``defaultDirectory`` itself.
    public struct GroupContainer: Hashable, Sendable {
        let value: String
        let isIdentifier: Bool
        /// The default: stores live in ``ModelConfiguration/defaultDirectory``.
        public static let automatic = GroupContainer(value: "automatic", isIdentifier: false)
        /// No group: stores live in ``ModelConfiguration/defaultDirectory``.
        public static let none = GroupContainer(value: "none", isIdentifier: false)
        /// The group `id`: stores live in the directory `id` inside
        /// ``ModelConfiguration/defaultDirectory`` (a slash in `id` becomes `_`).
        public static func identifier(_ id: String) -> GroupContainer { GroupContainer(value: id, isIdentifier: true) }

        /// The directory that stores of this group live in.
        var directory: URL {
            guard isIdentifier, !value.isEmpty else { return ModelConfiguration.defaultDirectory }
            // A group's name is one path component: slashes and a leading dot would leave it.
            let component = value.replacingOccurrences(of: "/", with: "_")
            return ModelConfiguration.defaultDirectory.appendingPathComponent(
                component.hasPrefix(".") ? "_" + component : component, isDirectory: true)
        }
    }

    /// A CloudKit database. Accepted for source compatibility, and has no effect: Linux has
    /// no CloudKit, and a store with `.automatic` or `.private(_:)` stays on this machine.
    public struct CloudKitDatabase: Hashable, Sendable {
        let value: String
        /// The default; no effect on Linux.
        public static let automatic = CloudKitDatabase(value: "automatic")
        /// No CloudKit database.
        public static let none = CloudKitDatabase(value: "none")
        /// The private CloudKit database of container `id`; no effect on Linux.
        public static func `private`(_ id: String) -> CloudKitDatabase { CloudKitDatabase(value: id) }
    }

    /// The configuration's name: by default `default`, or the file name of `url` without
    /// its extension.
    public var name: String
    /// The models this configuration's store holds, or `nil` for every model of the
    /// container.
    public var schema: Schema?
    /// Whether the store lives in memory only.
    public let isStoredInMemoryOnly: Bool
    /// Whether contexts may save to the store. `false` opens the on-disk store read-only
    /// (``LogStoreConfiguration/allowsSave``): a missing file is an error rather than
    /// created, and nothing is written, so a store in a directory the process cannot write
    /// still opens. A context's save with changes for it throws `unsupportedFeature`.
    public let allowsSave: Bool
    /// Where the on-disk store lives.
    public let url: URL
    /// The app group whose directory the store lives in, when no `url` was given.
    public let groupContainer: GroupContainer
    /// The CloudKit database, accepted and without effect on Linux.
    public let cloudKitDatabase: CloudKitDatabase

    /// A configuration for the default store, or an in-memory one.
    public init(isStoredInMemoryOnly: Bool = false) {
        self.init(nil, schema: nil, isStoredInMemoryOnly: isStoredInMemoryOnly)
    }

    /// A configuration for the default store, or an in-memory one, that holds `forTypes`
    /// (and the types they reach). In a container of several configurations, these entities
    /// go to this configuration's store.
    public init(for forTypes: any PersistentModel.Type..., isStoredInMemoryOnly: Bool = false) {
        self.init(schema: Schema(forTypes), isStoredInMemoryOnly: isStoredInMemoryOnly)
    }

    /// A configuration for the default store, or an in-memory one. The store lives at
    /// `<name>.store` in the group's directory (see ``GroupContainer``).
    public init(
        _ name: String? = nil, schema: Schema? = nil, isStoredInMemoryOnly: Bool = false, allowsSave: Bool = true,
        groupContainer: GroupContainer = .automatic, cloudKitDatabase: CloudKitDatabase = .automatic
    ) {
        self.name = name ?? "default"
        self.schema = schema
        self.isStoredInMemoryOnly = isStoredInMemoryOnly
        self.allowsSave = allowsSave
        self.url = groupContainer.directory.appendingPathComponent("\(name ?? "default").store")
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

    /// Opens the store: a ``MemoryStore`` when ``isStoredInMemoryOnly``, else a ``LogStore``
    /// at ``url`` with the log store's defaults (read-only when ``allowsSave`` is `false`),
    /// creating its directory with mode 0700 first.
    public func makeStore(schema: Schema, migrationPlan: (any SchemaMigrationPlan.Type)?) throws -> any DataStore {
        if isStoredInMemoryOnly {
            return try MemoryStore(
                MemoryStoreConfiguration(name: name, schema: self.schema ?? schema), migrationPlan: migrationPlan)
        }
        guard allowsSave else {
            return try LogStore(
                LogStoreConfiguration(name: name, schema: self.schema ?? schema, url: url, allowsSave: false),
                migrationPlan: migrationPlan)
        }
        let directory = url.deletingLastPathComponent()
        do {
            try FileManager.default.createDirectory(
                at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw DataStoreError(.ioFailure, "cannot create the store directory \(directory.path): \(error)")
        }
        return try LogStore(
            LogStoreConfiguration(name: name, schema: self.schema ?? schema, url: url), migrationPlan: migrationPlan)
    }

    /// Whether two configurations describe the same store: the same name, place, schema,
    /// memory-only and read-only settings.
    public static func == (lhs: ModelConfiguration, rhs: ModelConfiguration) -> Bool {
        lhs.name == rhs.name && lhs.isStoredInMemoryOnly == rhs.isStoredInMemoryOnly && lhs.url == rhs.url
            && lhs.allowsSave == rhs.allowsSave && lhs.schema == rhs.schema
    }

    /// Hashes the name, the memory-only setting and the URL.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(name)
        hasher.combine(isStoredInMemoryOnly)
        hasher.combine(url)
    }
}
