import Foundation
import StowageTestSupport
import Testing

@_spi(Testing) @testable import Stowage

/// Every write, sync, truncate, rename and directory sync of a migration fails in turn:
/// after each failure the store is either exactly as it was (byte for byte) or fully
/// migrated, and running the plan again finishes the migration.
@Suite("Migration under I/O failures")
struct MigrationFaultTests {
    static func configuration(
        _ kind: MigrationStoreKind, _ schema: Schema, in directory: LogTestDirectory, fs: FaultInjectingFileSystem
    ) -> any DataStoreConfiguration {
        switch kind {
        case .log:
            var configuration = LogStoreConfiguration(schema: schema, url: directory.storeURL)
            configuration.fileSystem = fs
            return configuration
        case .json:
            var configuration = JSONStoreConfiguration(
                name: "todo", schema: schema, fileURL: directory.url.appendingPathComponent("store.json"))
            configuration.fileSystem = fs
            return configuration
        }
    }

    static func migrate(_ kind: MigrationStoreKind, in directory: LogTestDirectory, fs: FaultInjectingFileSystem)
        throws
    {
        let schema = Schema(versionedSchema: TodoV3.self)
        _ = try ModelContainer(
            for: schema, migrationPlan: TodoChainPlan.self,
            configurations: [configuration(kind, schema, in: directory, fs: fs)])
    }

    /// The migrated store holds what the chain makes of `writeV1(duplicate: true)`.
    static func checkMigrated(_ kind: MigrationStoreKind, in directory: LogTestDirectory) throws {
        let context = ModelContext(try kind.container(TodoV3.self, in: directory))
        let items = try context.fetch(FetchDescriptor<TodoV3.TodoItem>(sortBy: [SortDescriptor(\.createdAt)]))
        #expect(items.map(\.title) == ["Call", "Shop", "Cook"])
        #expect(items.map(\.priority) == [1, 0, 1])
        #expect(
            items.map { $0.attachment.map { String(decoding: $0, as: UTF8.self) } }
                == items.map { "note for \($0.title)" })
    }

    @Test(arguments: MigrationStoreKind.allCases)
    func eachFailingCallLeavesTheOldStoreOrTheMigratedOne(_ kind: MigrationStoreKind) throws {
        // How many calls of each kind a whole migration makes.
        let counter = FaultInjectingFileSystem()
        do {
            let directory = LogTestDirectory.fresh()
            defer { directory.remove() }
            try MigrationPlanTests.writeV1(kind, in: directory, duplicate: true)
            try Self.migrate(kind, in: directory, fs: counter)
            try Self.checkMigrated(kind, in: directory)
        }
        var cases = 0
        var migratedAnyway = 0
        for operation in FaultInjectingFileSystem.Operation.allCases {
            let total = counter.calls(operation)
            for n in stride(from: 1, through: total, by: 1) {
                let directory = LogTestDirectory.fresh()
                defer { directory.remove() }
                try MigrationPlanTests.writeV1(kind, in: directory, duplicate: true)
                let before = directoryBytes(directory.url)
                let fs = FaultInjectingFileSystem()
                fs.arm(operation, failOn: n)
                var failed = false
                do {
                    try Self.migrate(kind, in: directory, fs: fs)
                } catch let error as DataStoreError {
                    failed = true
                    #expect(error.code == .ioFailure || error.code == .migrationFailed, "\(operation) \(n): \(error)")
                }
                guard fs.injected == [operation] else { continue }
                cases += 1
                let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.url.path)
                    .filter { $0.contains(".migrating") }
                #expect(leftovers.isEmpty, "\(operation) \(n): \(leftovers)")
                do {
                    if !failed {
                        // A failure the store may ignore: closing's trim of its reserved tail.
                        #expect(operation == .truncate, "\(operation) \(n) of \(total) was not reported")
                        try Self.checkMigrated(kind, in: directory)
                    } else if directoryBytes(directory.url) != before {
                        // Only a failure after the rename may leave the migrated store.
                        migratedAnyway += 1
                        try Self.checkMigrated(kind, in: directory)
                    } else {
                        // The old store, which the plan migrates on the next try.
                        try Self.migrate(kind, in: directory, fs: FaultInjectingFileSystem())
                        try Self.checkMigrated(kind, in: directory)
                    }
                } catch {
                    Issue.record("\(operation) \(n) of \(total), failed \(failed): \(error)")
                }
            }
        }
        #expect(cases > 20, "only \(cases) failures were injected")
        #expect(migratedAnyway <= 1, "\(migratedAnyway) failures left a migrated store")
    }

    /// A chain of lightweight stages on the log store is one layout record that the open
    /// appends: each failing call leaves the store byte for byte as it was, or migrated.
    @Test func eachFailingCallOfALightweightChainLeavesTheOldStoreOrTheMigratedOne() throws {
        let count = 300
        func writeV1(_ directory: LogTestDirectory) throws {
            let schema = Schema(versionedSchema: CardsV1.self)
            let container = try ModelContainer(
                for: schema, configurations: [LogStoreConfiguration(schema: schema, url: directory.storeURL)])
            let context = ModelContext(container)
            for i in 0..<count { context.insert(CardsV1.Card(code: "C\(i)", title: "t\(i)", rank: i % 7)) }
            try context.save()
            for store in container.storesForTesting { (store as? LogStore)?.close() }
        }
        func migrate(_ directory: LogTestDirectory, fs: FaultInjectingFileSystem) throws {
            let schema = Schema(versionedSchema: CardsV3.self)
            var configuration = LogStoreConfiguration(schema: schema, url: directory.storeURL)
            configuration.fileSystem = fs
            let container = try ModelContainer(
                for: schema, migrationPlan: CardsPlan.self, configurations: [configuration])
            for store in container.storesForTesting { (store as? LogStore)?.close() }
        }
        func checkMigrated(_ directory: LogTestDirectory) throws {
            let schema = Schema(versionedSchema: CardsV3.self)
            let container = try ModelContainer(
                for: schema, configurations: [LogStoreConfiguration(schema: schema, url: directory.storeURL)])
            let cards = try ModelContext(container).fetch(FetchDescriptor<CardsV3.Card>())
            #expect(cards.count == count)
            #expect(cards.allSatisfy { $0.stars == 2 && $0.heading == "t" + $0.code.dropFirst() })
            let store = try #require(container.storesForTesting.first as? LogStore)
            #expect(store.storedSchema.versionText == "3.0.0")
            store.close()
        }
        let counter = FaultInjectingFileSystem()
        do {
            let directory = LogTestDirectory.fresh()
            defer { directory.remove() }
            try writeV1(directory)
            try migrate(directory, fs: counter)
            try checkMigrated(directory)
        }
        var cases = 0
        for operation in FaultInjectingFileSystem.Operation.allCases {
            for n in stride(from: 1, through: counter.calls(operation), by: 1) {
                let directory = LogTestDirectory.fresh()
                defer { directory.remove() }
                try writeV1(directory)
                let before = directoryBytes(directory.url)
                let fs = FaultInjectingFileSystem()
                fs.arm(operation, failOn: n)
                var failed = false
                do {
                    try migrate(directory, fs: fs)
                } catch let error as DataStoreError {
                    failed = true
                    #expect(error.code == .ioFailure || error.code == .migrationFailed, "\(operation) \(n): \(error)")
                }
                guard fs.injected == [operation] else { continue }
                cases += 1
                do {
                    if failed {
                        #expect(directoryBytes(directory.url) == before, "\(operation) \(n) changed the store")
                        try migrate(directory, fs: FaultInjectingFileSystem())
                    }
                    try checkMigrated(directory)
                } catch {
                    Issue.record("\(operation) \(n), failed \(failed): \(error)")
                }
            }
        }
        #expect(cases >= 3, "only \(cases) failures were injected")
    }
}
