import Foundation
import Stowage
import StowageTestSupport
import Testing

/// The seeds' plans on the log store (the default) and the JSON store: each opens a store
/// written with its first version, the way an app that ships its second version does.
@Suite("The seeds' migration plans")
struct SeedPlanTests {
    enum Kind: String, CaseIterable { case log, json }

    static func configuration(_ kind: Kind, _ schema: Schema, _ directory: LogTestDirectory)
        -> any DataStoreConfiguration
    {
        switch kind {
        case .log: LogStoreConfiguration(schema: schema, url: directory.storeURL)
        case .json:
            JSONStoreConfiguration(
                name: "seed", schema: schema, fileURL: directory.url.appendingPathComponent("s.json"))
        }
    }

    static func container(
        _ kind: Kind, _ version: any VersionedSchema.Type, plan: (any SchemaMigrationPlan.Type)? = nil,
        _ directory: LogTestDirectory
    ) throws -> ModelContainer {
        let schema = Schema(versionedSchema: version)
        return try ModelContainer(
            for: schema, migrationPlan: plan, configurations: [configuration(kind, schema, directory)])
    }

    @Test(arguments: Kind.allCases)
    func theTutorialsLightweightThenCustomPlans(_ kind: Kind) throws {
        for plan in [Seed002.TodoMigrationPlan.self, Seed002.TodoCustomMigrationPlan.self]
            as [any SchemaMigrationPlan.Type]
        {
            let directory = LogTestDirectory.fresh()
            defer { directory.remove() }
            do {
                let context = ModelContext(try Self.container(kind, Seed002.TodoSchemaV1.self, directory))
                let work = Seed002.TodoSchemaV1.TodoGroup(name: "Work")
                context.insert(work)
                for (title, done) in [("Write weekly report", false), ("Book flights", true)] {
                    let item = Seed002.TodoSchemaV1.TodoItem(title: title, done: done)
                    item.group = work
                    context.insert(item)
                }
                try context.save()
            }
            let context = ModelContext(try Self.container(kind, Seed002.TodoSchemaV2.self, plan: plan, directory))
            let items = try context.fetch(FetchDescriptor<Seed002.TodoItem>(sortBy: [SortDescriptor(\.title)]))
            #expect(items.map(\.title) == ["Book flights", "Write weekly report"])
            let custom = plan == Seed002.TodoCustomMigrationPlan.self
            #expect(items.map(\.priority) == (custom ? [0, 1] : [0, 0]))
            #expect(items.allSatisfy { $0.dueDate == nil && $0.group?.name == "Work" })
        }
    }

    @Test(arguments: Kind.allCases)
    func theTripPlansLightweightAndCustomStages(_ kind: Kind) throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        do {
            let context = ModelContext(try Self.container(kind, Seed000.SchemaV1.self, directory))
            context.insert(Seed000.SchemaV1.Trip(name: "lisbon in may"))
            try context.save()
        }
        do {
            let context = ModelContext(
                try Self.container(kind, Seed000.SchemaV2.self, plan: Seed000.TripMigrationPlan.self, directory))
            let trips = try context.fetch(FetchDescriptor<Seed000.SchemaV2.Trip>())
            #expect(trips.map(\.name) == ["lisbon in may"])
            #expect(trips.first?.startDate == nil)
        }
        let context = ModelContext(
            try Self.container(kind, Seed000.SchemaV3.self, plan: Seed000.TripV3Plan.self, directory))
        #expect(try context.fetch(FetchDescriptor<Seed000.SchemaV3.Trip>()).map(\.displayName) == ["Lisbon In May"])
    }

    @Test(arguments: Kind.allCases)
    func theArticlePlanAddsAPropertyAndAModel(_ kind: Kind) throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        do {
            let context = ModelContext(try Self.container(kind, Seed000.ArticleSchemaV1.self, directory))
            context.insert(Seed000.ArticleSchemaV1.Article(id: UUID(), title: "T", body: "B", createdAt: .now))
            context.insert(Seed000.ArticleSchemaV1.Author(id: UUID(), name: "Ana"))
            try context.save()
        }
        let context = ModelContext(
            try Self.container(
                kind, Seed000.ArticleSchemaV2.self, plan: Seed000.ArticleMigrationPlan.self, directory))
        #expect(try context.fetch(FetchDescriptor<Seed000.ArticleSchemaV2.Article>()).map(\.isDraft) == [true])
        #expect(try context.fetchCount(FetchDescriptor<Seed000.ArticleSchemaV2.Author>()) == 1)
        #expect(try context.fetchCount(FetchDescriptor<Seed000.ArticleSchemaV2.Tag>()) == 0)
    }

    /// The task plan would lose every task (its V2 is a new entity) and has no value for the
    /// new priority: refused, naming both, with the file untouched.
    @Test(arguments: Kind.allCases)
    func theTaskPlanIsRefusedWithoutLosingATask(_ kind: Kind) throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        do {
            let context = ModelContext(try Self.container(kind, Seed004.SchemaV1.self, directory))
            context.insert(Seed004.SchemaV1.TaskV1(title: "Buy milk"))
            try context.save()
        }
        let file = kind == .log ? directory.storeURL : directory.url.appendingPathComponent("s.json")
        let before = try Data(contentsOf: file)
        do {
            _ = try Self.container(kind, Seed004.SchemaV2.self, plan: Seed004.TaskMigrationPlan.self, directory)
            Issue.record("the plan ran")
        } catch let error as DataStoreError {
            #expect(error.code == .migrationFailed)
            #expect(error.message.contains("TaskV1 records, which the schema lacks"), "\(error.message)")
            #expect(error.message.contains("1.0.0 to 2.0.0"), "\(error.message)")
        }
        #expect(try Data(contentsOf: file) == before)
        let context = ModelContext(try Self.container(kind, Seed004.SchemaV1.self, directory))
        #expect(try context.fetch(FetchDescriptor<Seed004.SchemaV1.TaskV1>()).map(\.title) == ["Buy milk"])
    }
}
