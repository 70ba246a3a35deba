import Foundation
import StowageTestSupport
import Testing

@_spi(Testing) @testable import Stowage

// The to-do models of the seeds' tutorial (`002_…`), in three versions: V2 adds a priority
// and a due date, V3 makes titles unique and adds a note with its bytes kept apart.

enum TodoV1: VersionedSchema {
    static let versionIdentifier = Schema.Version(1, 0, 0)
    static var models: [any PersistentModel.Type] { [TodoItem.self, TodoGroup.self] }

    @Model final class TodoItem {
        @Attribute(.unique) var id: UUID
        var title: String
        var done: Bool
        var createdAt: Date
        var group: TodoGroup?
        init(id: UUID = UUID(), title: String, done: Bool = false, createdAt: Date = .now) {
            self.id = id
            self.title = title
            self.done = done
            self.createdAt = createdAt
        }
    }

    @Model final class TodoGroup {
        var name: String
        @Relationship(deleteRule: .cascade, inverse: \TodoItem.group) var items: [TodoItem] = []
        init(name: String) { self.name = name }
    }
}

enum TodoV2: VersionedSchema {
    static let versionIdentifier = Schema.Version(2, 0, 0)
    static var models: [any PersistentModel.Type] { [TodoItem.self, TodoGroup.self] }

    @Model final class TodoItem {
        @Attribute(.unique) var id: UUID
        var title: String
        var done: Bool
        var createdAt: Date
        var priority: Int = 0
        var dueDate: Date?
        var group: TodoGroup?
        init(id: UUID = UUID(), title: String, done: Bool = false, createdAt: Date = .now) {
            self.id = id
            self.title = title
            self.done = done
            self.createdAt = createdAt
        }
    }

    @Model final class TodoGroup {
        var name: String
        @Relationship(deleteRule: .cascade, inverse: \TodoItem.group) var items: [TodoItem] = []
        init(name: String) { self.name = name }
    }
}

enum TodoV3: VersionedSchema {
    static let versionIdentifier = Schema.Version(3, 0, 0)
    static var models: [any PersistentModel.Type] { [TodoItem.self, TodoGroup.self] }

    @Model final class TodoItem {
        @Attribute(.unique) var id: UUID
        @Attribute(.unique) var title: String
        var done: Bool
        var createdAt: Date
        var priority: Int = 0
        var dueDate: Date?
        @Attribute(.externalStorage) var attachment: Data?
        var group: TodoGroup?
        init(id: UUID = UUID(), title: String, done: Bool = false, createdAt: Date = .now) {
            self.id = id
            self.title = title
            self.done = done
            self.createdAt = createdAt
        }
    }

    @Model final class TodoGroup {
        var name: String
        @Relationship(deleteRule: .cascade, inverse: \TodoItem.group) var items: [TodoItem] = []
        init(name: String) { self.name = name }
    }
}

/// The tutorial's plan: lightweight from V1 to V2.
enum TodoLightweightPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [TodoV1.self, TodoV2.self] }
    static var stages: [MigrationStage] { [migrateV1toV2] }
    static var migrateV1toV2: MigrationStage { .lightweight(fromVersion: TodoV1.self, toVersion: TodoV2.self) }
}

/// The tutorial's second plan: a custom stage whose didMigrate sets the priorities.
enum TodoCustomPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [TodoV1.self, TodoV2.self] }
    static var stages: [MigrationStage] { [migrateV1toV2] }
    static let migrateV1toV2 = MigrationStage.custom(
        fromVersion: TodoV1.self, toVersion: TodoV2.self, willMigrate: nil,
        didMigrate: { context in
            let items = try context.fetch(FetchDescriptor<TodoV2.TodoItem>())
            for item in items where !item.done {
                item.priority = 1
            }
            try context.save()
        })
}

/// Three versions: V2 → V3 adds a unique title, so willMigrate removes duplicate titles
/// first (keeping the oldest), and didMigrate attaches a note to each item.
enum TodoChainPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [TodoV1.self, TodoV2.self, TodoV3.self] }
    static var stages: [MigrationStage] { [TodoCustomPlan.migrateV1toV2, migrateV2toV3] }
    static let migrateV2toV3 = MigrationStage.custom(
        fromVersion: TodoV2.self, toVersion: TodoV3.self,
        willMigrate: { context in
            var seen = Set<String>()
            let items = try context.fetch(
                FetchDescriptor<TodoV2.TodoItem>(sortBy: [SortDescriptor(\.createdAt)]))
            for item in items where !seen.insert(item.title).inserted {
                context.delete(item)
            }
            try context.save()
        },
        didMigrate: { context in
            for item in try context.fetch(FetchDescriptor<TodoV3.TodoItem>()) {
                item.attachment = Data("note for \(item.title)".utf8)
            }
        })
}

/// V2 → V3 with no willMigrate: duplicate titles break the new constraint.
enum TodoNoDedupePlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [TodoV1.self, TodoV2.self, TodoV3.self] }
    static var stages: [MigrationStage] {
        [
            .lightweight(fromVersion: TodoV1.self, toVersion: TodoV2.self),
            .lightweight(fromVersion: TodoV2.self, toVersion: TodoV3.self),
        ]
    }
}

struct StageFailure: Error, CustomStringConvertible {
    var description: String { "the stage's own failure" }
}

/// A didMigrate that throws after changing records.
enum TodoThrowingPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [TodoV1.self, TodoV2.self] }
    static var stages: [MigrationStage] {
        [
            .custom(
                fromVersion: TodoV1.self, toVersion: TodoV2.self,
                willMigrate: { context in
                    for item in try context.fetch(FetchDescriptor<TodoV1.TodoItem>()) { item.title += "!" }
                    try context.save()
                },
                didMigrate: { _ in throw StageFailure() })
        ]
    }
}

/// A plan that does not know V1.
enum TodoFromV2Plan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [TodoV2.self, TodoV3.self] }
    static var stages: [MigrationStage] { [] }
}

// A type change: the seat was a number and becomes text.

enum SeatV1: VersionedSchema {
    static let versionIdentifier = Schema.Version(1, 0, 0)
    static var models: [any PersistentModel.Type] { [Booking.self] }
    @Model final class Booking {
        var name: String
        var seat: Int
        init(name: String, seat: Int) {
            self.name = name
            self.seat = seat
        }
    }
}

enum SeatV2: VersionedSchema {
    static let versionIdentifier = Schema.Version(2, 0, 0)
    static var models: [any PersistentModel.Type] { [Booking.self] }
    @Model final class Booking {
        var name: String
        var seat: String = ""
        var row: Int = 0
        init(name: String, seat: String) {
            self.name = name
            self.seat = seat
        }
    }
}

/// Lightweight cannot change a type.
enum SeatLightweightPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [SeatV1.self, SeatV2.self] }
    static var stages: [MigrationStage] { [.lightweight(fromVersion: SeatV1.self, toVersion: SeatV2.self)] }
}

/// A custom stage can, reading each old value: seat 123 becomes row 1, seat "23".
enum SeatCustomPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [SeatV1.self, SeatV2.self] }
    static var stages: [MigrationStage] {
        [
            .custom(
                fromVersion: SeatV1.self, toVersion: SeatV2.self, willMigrate: nil,
                didMigrate: { context in
                    for booking in try context.fetch(FetchDescriptor<SeatV2.Booking>()) {
                        guard let old = try context.valuesBeforeMigration(of: booking, as: SeatV1.Booking.self) else {
                            continue
                        }
                        booking.row = old.seat / 100
                        booking.seat = String(old.seat % 100)
                    }
                    try context.save()
                })
        ]
    }
}

/// The stores a migration runs on, and reading a store's files.
enum MigrationStoreKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case log, json

    var testDescription: String { rawValue }

    func configuration(_ schema: Schema, in directory: LogTestDirectory) -> any DataStoreConfiguration {
        switch self {
        case .log: LogStoreConfiguration(schema: schema, url: directory.storeURL)
        case .json:
            JSONStoreConfiguration(
                name: "todo", schema: schema, fileURL: directory.url.appendingPathComponent("store.json"))
        }
    }

    func container(
        _ version: any VersionedSchema.Type, plan: (any SchemaMigrationPlan.Type)? = nil, in directory: LogTestDirectory
    ) throws -> ModelContainer {
        let schema = Schema(versionedSchema: version)
        return try ModelContainer(
            for: schema, migrationPlan: plan, configurations: [configuration(schema, in: directory)])
    }
}

/// Every file under a directory with its bytes (the lock files aside, which opening makes).
func directoryBytes(_ url: URL) -> [String: Data] {
    var files: [String: Data] = [:]
    let enumerator = FileManager.default.enumerator(at: url, includingPropertiesForKeys: nil)
    while let file = enumerator?.nextObject() as? URL {
        guard !file.lastPathComponent.hasSuffix(".lock"), let data = try? Data(contentsOf: file) else { continue }
        files[String(file.path.dropFirst(url.path.count))] = data
    }
    return files
}

@Suite("Migration plans")
struct MigrationPlanTests {
    /// Three to-dos in a group, one done; and a second "Call" made later, a duplicate title.
    static func writeV1(_ kind: MigrationStoreKind, in directory: LogTestDirectory, duplicate: Bool = false) throws {
        let container = try kind.container(TodoV1.self, in: directory)
        let context = ModelContext(container)
        let group = TodoV1.TodoGroup(name: "Home")
        context.insert(group)
        let start = Date(timeIntervalSince1970: 1_700_000_000)
        for (i, title) in ["Call", "Shop", "Cook"].enumerated() {
            let item = TodoV1.TodoItem(title: title, done: i == 1, createdAt: start + Double(i))
            context.insert(item)
            item.group = group
        }
        if duplicate { context.insert(TodoV1.TodoItem(title: "Call", createdAt: start + 10)) }
        try context.save()
    }

    @Test(arguments: MigrationStoreKind.allCases)
    func aLightweightStageOpensAV1StoreAsV2(_ kind: MigrationStoreKind) throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        try Self.writeV1(kind, in: directory)
        do {
            let container = try kind.container(TodoV2.self, plan: TodoLightweightPlan.self, in: directory)
            let context = ModelContext(container)
            let items = try context.fetch(FetchDescriptor<TodoV2.TodoItem>(sortBy: [SortDescriptor(\.createdAt)]))
            #expect(items.map(\.title) == ["Call", "Shop", "Cook"])
            #expect(items.map(\.priority) == [0, 0, 0])
            #expect(items.allSatisfy { $0.dueDate == nil && $0.group?.name == "Home" })
            let group = try #require(try context.fetch(FetchDescriptor<TodoV2.TodoGroup>()).first)
            #expect(group.items.count == 3)
            // Saved under V2 from now on, and opened again without running anything.
            items[0].priority = 5
            try context.save()
        }
        let again = ModelContext(try kind.container(TodoV2.self, plan: TodoLightweightPlan.self, in: directory))
        #expect(try again.fetch(FetchDescriptor<TodoV2.TodoItem>()).map(\.priority).sorted() == [0, 0, 5])
    }

    @Test(arguments: MigrationStoreKind.allCases)
    func theStoreRecordsTheNewVersion(_ kind: MigrationStoreKind) throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        try Self.writeV1(kind, in: directory)
        _ = try kind.container(TodoV2.self, plan: TodoLightweightPlan.self, in: directory)
        // Without the plan, the V2 schema opens it as it is: the file is at V2 now.
        do {
            let context = ModelContext(try kind.container(TodoV2.self, in: directory))
            #expect(try context.fetchCount(FetchDescriptor<TodoV2.TodoItem>()) == 3)
        }
        // And V1 no longer does.
        #expect(throws: DataStoreError.schemaMismatch) { try kind.container(TodoV1.self, in: directory) }
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.url.path)
            .filter { $0.contains(".migrating") }
        #expect(leftovers.isEmpty, "\(leftovers)")
    }

    @Test(arguments: MigrationStoreKind.allCases)
    func didMigrateSetsTheNewPropertyFromTheOldData(_ kind: MigrationStoreKind) throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        try Self.writeV1(kind, in: directory)
        let context = ModelContext(try kind.container(TodoV2.self, plan: TodoCustomPlan.self, in: directory))
        let items = try context.fetch(FetchDescriptor<TodoV2.TodoItem>(sortBy: [SortDescriptor(\.createdAt)]))
        #expect(items.map(\.priority) == [1, 0, 1])
    }

    @Test(arguments: MigrationStoreKind.allCases)
    func aThreeVersionChainRunsFromEachOlderVersion(_ kind: MigrationStoreKind) throws {
        for startAtV2 in [false, true] {
            let directory = LogTestDirectory.fresh()
            defer { directory.remove() }
            try Self.writeV1(kind, in: directory, duplicate: true)
            if startAtV2 {
                // Brought to V2 by the first plan, then left there.
                _ = try kind.container(TodoV2.self, plan: TodoLightweightPlan.self, in: directory)
            }
            let context = ModelContext(try kind.container(TodoV3.self, plan: TodoChainPlan.self, in: directory))
            let items = try context.fetch(FetchDescriptor<TodoV3.TodoItem>(sortBy: [SortDescriptor(\.createdAt)]))
            #expect(items.map(\.title) == ["Call", "Shop", "Cook"], "from V\(startAtV2 ? 2 : 1)")
            // From V1 the first stage set priorities; from V2 they stayed at 0.
            #expect(items.map(\.priority) == (startAtV2 ? [0, 0, 0] : [1, 0, 1]))
            #expect(
                items.map { $0.attachment.map { String(decoding: $0, as: UTF8.self) } }
                    == items.map { "note for \($0.title)" })
            #expect(items.allSatisfy { $0.group?.name == "Home" })
            // The new constraint holds: a second "Shop" upserts.
            context.insert(TodoV3.TodoItem(title: "Shop", done: true))
            try context.save()
            #expect(try context.fetchCount(FetchDescriptor<TodoV3.TodoItem>()) == 3)
        }
    }

    @Test(arguments: MigrationStoreKind.allCases)
    func aNewUniqueConstraintTheRecordsBreakIsRefusedAndTheFileIsUntouched(_ kind: MigrationStoreKind) throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        try Self.writeV1(kind, in: directory, duplicate: true)
        let before = directoryBytes(directory.url)
        let error = #expect(throws: DataStoreError.self) {
            try kind.container(TodoV3.self, plan: TodoNoDedupePlan.self, in: directory)
        }
        #expect(error?.code == .migrationFailed)
        #expect(error?.message.contains("2.0.0 to 3.0.0") == true, "\(error?.message ?? "")")
        #expect(error?.message.contains("the store is unchanged") == true)
        #expect(directoryBytes(directory.url) == before)
        // Still V1, and still readable as V1.
        #expect(
            try ModelContext(kind.container(TodoV1.self, in: directory)).fetchCount(FetchDescriptor<TodoV1.TodoItem>())
                == 4)
    }

    @Test(arguments: MigrationStoreKind.allCases)
    func aVersionNotInThePlanIsRefusedAndTheFileIsUntouched(_ kind: MigrationStoreKind) throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        try Self.writeV1(kind, in: directory)
        let before = directoryBytes(directory.url)
        let error = #expect(throws: DataStoreError.self) {
            try kind.container(TodoV3.self, plan: TodoFromV2Plan.self, in: directory)
        }
        #expect(error?.code == .schemaMismatch)
        #expect(error?.message.contains("schema version 1.0.0") == true, "\(error?.message ?? "")")
        #expect(error?.message.contains("2.0.0, 3.0.0") == true, "\(error?.message ?? "")")
        #expect(directoryBytes(directory.url) == before)
    }

    @Test(arguments: MigrationStoreKind.allCases)
    func aStageThatThrowsLeavesTheStoreAsItWasReadyToRunAgain(_ kind: MigrationStoreKind) throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        try Self.writeV1(kind, in: directory)
        let before = directoryBytes(directory.url)
        let error = #expect(throws: DataStoreError.self) {
            try kind.container(TodoV2.self, plan: TodoThrowingPlan.self, in: directory)
        }
        #expect(error?.code == .migrationFailed)
        #expect(
            error?.message.contains("didMigrate") == true && error?.message.contains("the stage's own failure") == true)
        #expect(error?.underlying is StageFailure)
        #expect(directoryBytes(directory.url) == before)
        // willMigrate's saved titles went with the working copy; a good plan runs now.
        let context = ModelContext(try kind.container(TodoV2.self, plan: TodoCustomPlan.self, in: directory))
        let titles = try context.fetch(FetchDescriptor<TodoV2.TodoItem>()).map(\.title).sorted()
        #expect(titles == ["Call", "Cook", "Shop"])
    }

    @Test(arguments: MigrationStoreKind.allCases)
    func aTypeChangeIsRefusedInALightweightStage(_ kind: MigrationStoreKind) throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        do {
            let context = ModelContext(try kind.container(SeatV1.self, in: directory))
            context.insert(SeatV1.Booking(name: "Ana", seat: 1_23))
            try context.save()
        }
        let before = directoryBytes(directory.url)
        let error = #expect(throws: DataStoreError.self) {
            try kind.container(SeatV2.self, plan: SeatLightweightPlan.self, in: directory)
        }
        #expect(error?.code == .migrationFailed)
        #expect(
            error?.message.contains("Booking.seat is seat: Int in the store and seat: String") == true,
            "\(error?.message ?? "")")
        #expect(directoryBytes(directory.url) == before)
    }

    @Test(arguments: MigrationStoreKind.allCases)
    func didMigrateReadsTheOldValuesOfAChangedType(_ kind: MigrationStoreKind) throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        do {
            let context = ModelContext(try kind.container(SeatV1.self, in: directory))
            context.insert(SeatV1.Booking(name: "Ana", seat: 1_23))
            context.insert(SeatV1.Booking(name: "Bo", seat: 4_07))
            try context.save()
        }
        let context = ModelContext(try kind.container(SeatV2.self, plan: SeatCustomPlan.self, in: directory))
        let bookings = try context.fetch(FetchDescriptor<SeatV2.Booking>(sortBy: [SortDescriptor(\.name)]))
        #expect(bookings.map(\.seat) == ["23", "7"])
        #expect(bookings.map(\.row) == [1, 4])
        // Outside a stage there are no old values to read.
        #expect(throws: DataStoreError.unsupportedFeature) {
            try context.valuesBeforeMigration(of: bookings[0], as: SeatV1.Booking.self)
        }
    }

    @Test(arguments: MigrationStoreKind.allCases)
    func aStoreWrittenWithoutVersionsIsFoundByItsShape(_ kind: MigrationStoreKind) throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        // The app's first release had no VersionedSchema: its schema's version is 0.9.0,
        // which the plan does not list, but its shape is V1's.
        do {
            let schema = Schema([TodoV1.TodoItem.self, TodoV1.TodoGroup.self], version: Schema.Version(0, 9, 0))
            let container = try ModelContainer(for: schema, configurations: [kind.configuration(schema, in: directory)])
            let context = ModelContext(container)
            context.insert(TodoV1.TodoItem(title: "Call"))
            try context.save()
        }
        let context = ModelContext(try kind.container(TodoV2.self, plan: TodoCustomPlan.self, in: directory))
        #expect(try context.fetch(FetchDescriptor<TodoV2.TodoItem>()).map(\.priority) == [1])
    }

    @Test(arguments: MigrationStoreKind.allCases)
    func aSecondOpenerWaitsOutsideTheLock(_ kind: MigrationStoreKind) throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        try Self.writeV1(kind, in: directory)
        let holder = try kind.container(TodoV1.self, in: directory)
        #expect(throws: DataStoreError.storeLocked) {
            try kind.container(TodoV2.self, plan: TodoLightweightPlan.self, in: directory)
        }
        _ = holder
    }
}

// The format samples' models, as a plan's first version, and a second that adds a rating.

enum SampleV1: VersionedSchema {
    static let versionIdentifier = Schema.Version(1, 0, 0)
    static var models: [any PersistentModel.Type] { [LogSampleTrip.self, LogSampleItem.self] }
}

enum SampleV2: VersionedSchema {
    static let versionIdentifier = Schema.Version(2, 0, 0)
    static var models: [any PersistentModel.Type] { [LogSampleTrip.self, LogSampleItem.self] }

    @Model final class LogSampleTrip {
        var name: String
        var startDate: Date
        var budget: Double = 0
        var note: String?
        @Relationship(deleteRule: .cascade, inverse: \LogSampleItem.trip) var items: [LogSampleItem] = []
        var rating: Int = 0
        init(name: String, startDate: Date) {
            self.name = name
            self.startDate = startDate
        }
    }

    @Model final class LogSampleItem {
        var name: String
        var quantity: Int = 1
        var trip: LogSampleTrip?
        init(name: String) { self.name = name }
    }
}

enum SamplePlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [SampleV1.self, SampleV2.self] }
    static var stages: [MigrationStage] {
        [
            .custom(
                fromVersion: SampleV1.self, toVersion: SampleV2.self, willMigrate: nil,
                didMigrate: { context in
                    for trip in try context.fetch(FetchDescriptor<SampleV2.LogSampleTrip>()) {
                        trip.rating = trip.items.reduce(0) { $0 + $1.quantity }
                    }
                })
        ]
    }
}

@Suite("Migration of the format samples")
struct SampleMigrationTests {
    /// Every log format version's sample migrates, its records and relationships intact.
    @Test(arguments: ["trips-v1.stowlog", "trips-v3.stowlog", "trips-v4.stowlog", "trips-v5.stowlog"])
    func eachFormatVersionsSampleMigrates(_ name: String) throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        try FileManager.default.copyItem(
            at: LogGoldenTests.samples.appendingPathComponent(name), to: directory.storeURL)
        let expected: [String: Int]
        do {
            let context = ModelContext(try MigrationStoreKind.log.container(SampleV1.self, in: directory))
            expected = Dictionary(
                uniqueKeysWithValues: try context.fetch(FetchDescriptor<LogSampleTrip>()).map {
                    ($0.name, $0.items.reduce(0) { $0 + $1.quantity })
                })
        }
        #expect(!expected.isEmpty)
        let context = ModelContext(
            try MigrationStoreKind.log.container(SampleV2.self, plan: SamplePlan.self, in: directory))
        let trips = try context.fetch(FetchDescriptor<SampleV2.LogSampleTrip>())
        #expect(Dictionary(uniqueKeysWithValues: trips.map { ($0.name, $0.rating) }) == expected)
    }
}

// V2 drops the Draft entity: its records must go first.

enum DraftsV1: VersionedSchema {
    static let versionIdentifier = Schema.Version(1, 0, 0)
    static var models: [any PersistentModel.Type] { [Memo.self, Draft.self] }
    @Model final class Memo {
        var text: String
        init(text: String) { self.text = text }
    }
    @Model final class Draft {
        var text: String
        init(text: String) { self.text = text }
    }
}

enum DraftsV2: VersionedSchema {
    static let versionIdentifier = Schema.Version(2, 0, 0)
    static var models: [any PersistentModel.Type] { [Memo.self] }
    @Model final class Memo {
        var text: String
        init(text: String) { self.text = text }
    }
}

enum DraftsDroppedPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [DraftsV1.self, DraftsV2.self] }
    static var stages: [MigrationStage] { [.lightweight(fromVersion: DraftsV1.self, toVersion: DraftsV2.self)] }
}

/// willMigrate turns each draft into a memo and deletes it.
enum DraftsPublishedPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [DraftsV1.self, DraftsV2.self] }
    static var stages: [MigrationStage] {
        [
            .custom(
                fromVersion: DraftsV1.self, toVersion: DraftsV2.self,
                willMigrate: { context in
                    for draft in try context.fetch(FetchDescriptor<DraftsV1.Draft>()) {
                        context.insert(DraftsV1.Memo(text: draft.text))
                        context.delete(draft)
                    }
                }, didMigrate: nil)
        ]
    }
}

@Suite("Migration: a dropped entity")
struct DroppedEntityMigrationTests {
    static func write(_ kind: MigrationStoreKind, in directory: LogTestDirectory) throws {
        let context = ModelContext(try kind.container(DraftsV1.self, in: directory))
        context.insert(DraftsV1.Memo(text: "kept"))
        context.insert(DraftsV1.Draft(text: "draft"))
        try context.save()
    }

    @Test(arguments: MigrationStoreKind.allCases)
    func anEntityWithRecordsIsNotDropped(_ kind: MigrationStoreKind) throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        try Self.write(kind, in: directory)
        let before = directoryBytes(directory.url)
        let error = #expect(throws: DataStoreError.self) {
            try kind.container(DraftsV2.self, plan: DraftsDroppedPlan.self, in: directory)
        }
        #expect(error?.code == .migrationFailed)
        #expect(error?.message.contains("1 Draft records, which the schema lacks") == true, "\(error?.message ?? "")")
        #expect(directoryBytes(directory.url) == before)
    }

    @Test(arguments: MigrationStoreKind.allCases)
    func anEntityWillMigrateEmptiedIsDropped(_ kind: MigrationStoreKind) throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        try Self.write(kind, in: directory)
        do {
            let context = ModelContext(try kind.container(DraftsV2.self, plan: DraftsPublishedPlan.self, in: directory))
            #expect(try context.fetch(FetchDescriptor<DraftsV2.Memo>()).map(\.text).sorted() == ["draft", "kept"])
        }
        // The file no longer lists Draft: V2 opens it without the plan.
        let context = ModelContext(try kind.container(DraftsV2.self, in: directory))
        #expect(try context.fetchCount(FetchDescriptor<DraftsV2.Memo>()) == 2)
    }
}
