import Foundation
@_spi(Testing) import Stowage

/// Makes a fresh container over one kind of store, for the conformance suite.
public struct StoreFactory: Sendable, CustomStringConvertible {
    public let name: String
    public let make: @Sendable (Schema) throws -> ModelContainer

    public init(name: String, make: @escaping @Sendable (Schema) throws -> ModelContainer) {
        self.name = name
        self.make = make
    }

    public var description: String { name }

    /// A container for every test model.
    public func container() throws -> ModelContainer {
        try make(Schema(allTestModels))
    }

    /// The in-memory store.
    public static let memory = StoreFactory(name: "MemoryStore") { schema in
        try ModelContainer(for: schema, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
    }

    /// The log store, in a fresh directory (see `LogTestSupport.swift`).
    public static let log = StoreFactory(name: "LogStore") { schema in
        try ModelContainer(
            for: schema, configurations: [LogStoreConfiguration(schema: schema, url: LogTestDirectory.fresh().storeURL)]
        )
    }

    /// The JSON document store, in a fresh directory (see `JSONTestSupport.swift`).
    public static let json = StoreFactory(name: "JSONStore") { schema in
        try ModelContainer(
            for: schema,
            configurations: [JSONStoreConfiguration(name: "json", schema: schema, fileURL: JSONTest.freshURL())])
    }

    /// A custom store written against the public protocol as an app would write one
    /// (`FileDictionaryStore.swift`), in a fresh directory.
    public static let fileDictionary = StoreFactory(name: "FileDictionaryStore") { schema in
        try ModelContainer(
            for: schema,
            configurations: [
                FileDictionaryStoreConfiguration(
                    name: "dictionary", schema: schema,
                    fileURL: JSONTest.freshURL().deletingPathExtension().appendingPathExtension("dictionary.json"))
            ])
    }

    /// Every store the conformance suite runs against.
    public static let all: [StoreFactory] = [.memory, .log, .json, .fileDictionary]
}

/// A small deterministic random generator (SplitMix64), so failures can be replayed
/// from the seed they print.
public struct SeededRandom: RandomNumberGenerator, Sendable {
    private var state: UInt64
    public let seed: UInt64

    public init(seed: UInt64) {
        self.seed = seed
        self.state = seed
    }

    /// Seeded from `STOWAGE_SEED` when it is set, to replay a failure, and at random
    /// otherwise. Prints the seed with the calling test's file and name, so that any run
    /// (a passing one too) can be replayed; a test calls this once (once per argument of a
    /// parameterized test) and names `seed` in its failure messages as well.
    public static func fromEnvironment(test: String = #function, file: String = #fileID) -> SeededRandom {
        let given = ProcessInfo.processInfo.environment["STOWAGE_SEED"].flatMap { UInt64($0) }
        let seed = given ?? UInt64.random(in: 0...UInt64.max)
        print(
            "\(file) \(test): seed \(seed)\(given == nil ? "" : " (from STOWAGE_SEED)"); replay with STOWAGE_SEED=\(seed)"
        )
        return SeededRandom(seed: seed)
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// The three stores, for tests that open one store again in the same place (where the
/// log and JSON stores keep their file) and run on each kind.
public enum StoreKind: String, CaseIterable, Sendable, CustomStringConvertible {
    case memory, log, json

    public var description: String { rawValue }
    /// Whether closing and opening again finds the same records (not the memory store).
    public var reopens: Bool { self != .memory }

    /// A container of `schema` on this kind of store in `directory`: the same file each time
    /// for the log and JSON stores, a new store for the memory one. `keepsHistory` turns the
    /// JSON store's history on (the others always keep one).
    public func container(_ schema: Schema, in directory: LogTestDirectory, keepsHistory: Bool = false) throws
        -> ModelContainer
    {
        switch self {
        case .memory:
            return try ModelContainer(for: schema, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        case .log:
            return try ModelContainer(
                for: schema, configurations: [LogStoreConfiguration(schema: schema, url: directory.storeURL)])
        case .json:
            var configuration = JSONStoreConfiguration(
                name: "store", schema: schema, fileURL: directory.url.appendingPathComponent("store.json"))
            configuration.keepsHistory = keepsHistory
            return try ModelContainer(for: schema, configurations: [configuration])
        }
    }

    /// Closes the container's stores, so that their place can be opened again.
    public static func close(_ container: ModelContainer) {
        for store in container.storesForTesting {
            (store as? LogStore)?.close()
            (store as? JSONStore)?.close()
        }
    }
}
