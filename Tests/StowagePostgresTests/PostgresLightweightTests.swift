import Foundation
import Stowage
import StowageTestSupport
import Testing

@testable import StowagePostgres

/// A shelf, as an app first ships it.
enum ShelfV1 {
    @Model final class Shelf {
        @Attribute(.unique) var code: String
        var title: String
        var rank: Int
        var note: String?
        #Index<Shelf>([\.rank])
        init(code: String, title: String, rank: Int, note: String? = nil) {
            self.code = code
            self.title = title
            self.rank = rank
            self.note = note
        }
    }

    @Model final class Crate {
        var size: Int
        init(size: Int) { self.size = size }
    }
}

/// The next release: `title` renamed to `heading`, `note` removed, a defaulted `stars`, an
/// optional `tag`, a to-one `label` to a new entity, the index moved from `rank` to `stars`,
/// `Crate` gone.
enum ShelfV2 {
    @Model final class Shelf {
        @Attribute(.unique) var code: String
        @Attribute(originalName: "title") var heading: String
        var rank: Int
        var stars: Int = 2
        var motto: String = "it's 100% \\ oak"
        var tag: String?
        var label: Label?
        #Index<Shelf>([\.stars])
        init(code: String, heading: String, rank: Int) {
            self.code = code
            self.heading = heading
            self.rank = rank
        }
    }

    @Model final class Label {
        var name: String
        init(name: String) { self.name = name }
    }
}

/// V1 with a new attribute that is neither optional nor defaulted.
enum ShelfNoDefault {
    @Model final class Shelf {
        @Attribute(.unique) var code: String
        var title: String
        var rank: Int
        var note: String?
        var weight: Int
        #Index<Shelf>([\.rank])
        init(code: String, title: String, rank: Int, weight: Int) {
            self.code = code
            self.title = title
            self.rank = rank
            self.weight = weight
        }
    }
}

/// V1 whose `rank` becomes unique.
enum ShelfUniqueRank {
    @Model final class Shelf {
        @Attribute(.unique) var code: String
        var title: String
        @Attribute(.unique) var rank: Int
        var note: String?
        init(code: String, title: String, rank: Int) {
            self.code = code
            self.title = title
            self.rank = rank
        }
    }
}

/// Opening a database whose tables were made for another schema of the same version:
/// what SwiftData's lightweight migration does by itself, done with `ALTER TABLE` in the
/// opening transaction; what needs a migration is refused and changes nothing.
@Suite("PostgresStore lightweight conversion")
struct PostgresLightweightTests {
    static func container(_ url: String, _ types: [any PersistentModel.Type]) throws -> ModelContainer {
        let schema = Schema(types)
        return try ModelContainer(
            for: schema, configurations: [PostgresStoreConfiguration(name: "postgres", schema: schema, url: url)])
    }

    static func v1(_ url: String) throws -> ModelContext {
        let context = ModelContext(try container(url, [ShelfV1.Shelf.self, ShelfV1.Crate.self]))
        for (i, title) in ["Atlas", "Bible", "Codex"].enumerated() {
            context.insert(ShelfV1.Shelf(code: "s\(i)", title: title, rank: i, note: "n\(i)"))
        }
        try context.save()
        return context
    }

    static func indexes(_ connection: PostgresConnection) throws -> [String] {
        let rows = try connection.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = 'Shelf' AND indexname LIKE 'ix_%' ORDER BY 1")
        return (0..<rows.count).compactMap { rows.text($0, 0) }
    }

    /// V1's rows read back through V2: renamed values kept, the default filled in, the new
    /// optional empty, the removed column and entity gone, the index moved; the new to-one
    /// relationship and entity work; opening V2 again changes nothing.
    @Test func renamesAddsRemovesAndMovesAnIndex() throws {
        guard let cluster = try PostgresStoreTests.cluster() else { return }
        let url = try cluster.freshDatabase()
        _ = try Self.v1(url)
        let connection = try PostgresConnection(url, connectTimeout: 5)
        #expect(try Self.indexes(connection) == ["ix_Shelf_rank"])

        let context = ModelContext(try Self.container(url, [ShelfV2.Shelf.self, ShelfV2.Label.self]))
        let shelves = try context.fetch(FetchDescriptor<ShelfV2.Shelf>(sortBy: [SortDescriptor(\.rank)]))
        #expect(shelves.map(\.heading) == ["Atlas", "Bible", "Codex"])
        #expect(shelves.map(\.code) == ["s0", "s1", "s2"])
        #expect(shelves.map(\.stars) == [2, 2, 2])
        #expect(shelves.allSatisfy { $0.tag == nil && $0.label == nil })
        #expect(try Self.indexes(connection) == ["ix_Shelf_stars"])
        let columns = try connection.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'Shelf' ORDER BY 1")
        #expect(
            (0..<columns.count).compactMap { columns.text($0, 0) } == [
                "code", "heading", "label", "motto", "pk", "rank", "stars", "tag",
            ])
        let crate = try connection.execute("SELECT count(*) FROM pg_class WHERE relname = 'Crate'")
        #expect(crate.text(0, 0) == "0")
        // The new column keeps its default for programs that insert without it.
        try connection.run(
            "INSERT INTO \"Shelf\" (\"pk\", \"code\", \"heading\", \"rank\") VALUES (-1, 'old', 'Old build', 7)")
        let defaulted = try connection.execute("SELECT \"stars\", \"motto\" FROM \"Shelf\" WHERE \"pk\" = -1")
        #expect(defaulted.text(0, 0) == "2")
        #expect(defaulted.text(0, 1) == "it's 100% \\ oak")
        #expect(shelves.map(\.motto) == Array(repeating: "it's 100% \\ oak", count: 3))
        try connection.run("DELETE FROM \"Shelf\" WHERE \"pk\" = -1")

        let label = ShelfV2.Label(name: "Reference")
        context.insert(label)
        shelves[0].label = label
        shelves[0].stars = 5
        try context.save()
        let again = ModelContext(try Self.container(url, [ShelfV2.Shelf.self, ShelfV2.Label.self]))
        let first = try #require(
            try again.fetch(FetchDescriptor<ShelfV2.Shelf>(predicate: #Predicate { $0.code == "s0" })).first)
        #expect(first.label?.name == "Reference")
        #expect(first.stars == 5)
        #expect(
            try again.fetchCount(FetchDescriptor<ShelfV2.Shelf>(predicate: #Predicate { $0.stars == 2 })) == 2)
        // The uniqueness of `code` holds through the change.
        again.insert(ShelfV2.Shelf(code: "s1", heading: "Bible, second edition", rank: 9))
        try again.save()
        #expect(try again.fetchCount(FetchDescriptor<ShelfV2.Shelf>()) == 3)

        // V1 again (an older build still running): refused, not converted back, and V2's
        // columns and values stay.
        let older = #expect(throws: DataStoreError.self) {
            try Self.container(url, [ShelfV1.Shelf.self, ShelfV1.Crate.self])
        }
        #expect(older?.code == .schemaMismatch)
        #expect(older?.message.contains("converted from this schema") == true, "\(String(describing: older))")
        let stars = try connection.execute("SELECT sum(\"stars\") FROM \"Shelf\"")
        #expect(stars.text(0, 0) == "9")
    }

    /// What needs a migration is `.schemaMismatch`, and the tables stay as they were: a new
    /// attribute with no default, going back (V2's `heading` has no `title` to come from),
    /// a uniqueness constraint the rows break, an entity dropped with rows in its table.
    @Test func whatNeedsAMigrationIsRefusedAndChangesNothing() throws {
        guard let cluster = try PostgresStoreTests.cluster() else { return }
        let url = try cluster.freshDatabase()
        let v1 = try Self.v1(url)
        v1.insert(ShelfV1.Shelf(code: "dup", title: "Duplicate rank", rank: 1))
        v1.insert(ShelfV1.Crate(size: 3))
        try v1.save()

        let noDefault = #expect(throws: DataStoreError.self) {
            try Self.container(url, [ShelfNoDefault.Shelf.self, ShelfV1.Crate.self])
        }
        #expect(noDefault?.code == .schemaMismatch)
        #expect(noDefault?.message.contains("weight") == true, "\(String(describing: noDefault))")

        let unique = #expect(throws: DataStoreError.self) {
            try Self.container(url, [ShelfUniqueRank.Shelf.self, ShelfV1.Crate.self])
        }
        #expect(unique?.code == .schemaMismatch)
        #expect(unique?.message.contains("(rank)") == true, "\(String(describing: unique))")

        let dropped = #expect(throws: DataStoreError.self) { try Self.container(url, [ShelfV1.Shelf.self]) }
        #expect(dropped?.code == .schemaMismatch)
        #expect(dropped?.message.contains("Crate") == true, "\(String(describing: dropped))")

        // Still V1's tables, rows and schema.
        let context = ModelContext(try Self.container(url, [ShelfV1.Shelf.self, ShelfV1.Crate.self]))
        #expect(try context.fetchCount(FetchDescriptor<ShelfV1.Shelf>()) == 4)
        #expect(try context.fetchCount(FetchDescriptor<ShelfV1.Crate>()) == 1)

        // Without the duplicate, the new constraint is made and holds.
        let duplicate = try #require(
            try context.fetch(FetchDescriptor<ShelfV1.Shelf>(predicate: #Predicate { $0.code == "dup" })).first)
        context.delete(duplicate)
        try context.save()
        let unique2 = ModelContext(try Self.container(url, [ShelfUniqueRank.Shelf.self, ShelfV1.Crate.self]))
        unique2.insert(ShelfUniqueRank.Shelf(code: "new", title: "Same rank as Atlas", rank: 0))
        try unique2.save()
        let atlas = try unique2.fetch(FetchDescriptor<ShelfUniqueRank.Shelf>(predicate: #Predicate { $0.rank == 0 }))
        #expect(atlas.map(\.code) == ["new"], "the insert upserts onto Atlas's row through the new constraint")
        #expect(try unique2.fetchCount(FetchDescriptor<ShelfUniqueRank.Shelf>()) == 3)
    }
}

extension ShelfV1: VersionedSchema {
    static let versionIdentifier = Schema.Version(1, 0, 0)
    static var models: [any PersistentModel.Type] { [Shelf.self, Crate.self] }
}

extension ShelfV2: VersionedSchema {
    static let versionIdentifier = Schema.Version(2, 0, 0)
    static var models: [any PersistentModel.Type] { [Shelf.self, Label.self] }
}

/// V1 to V2 with no stages: each step lightweight.
enum ShelfPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [ShelfV1.self, ShelfV2.self] }
    static var stages: [MigrationStage] { [] }
}

/// V1 to V2 with code around the step.
enum ShelfCustomPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [ShelfV1.self, ShelfV2.self] }
    static var stages: [MigrationStage] {
        [.custom(fromVersion: ShelfV1.self, toVersion: ShelfV2.self, willMigrate: nil, didMigrate: { _ in })]
    }
}

/// A migration plan across versions: its lightweight stages run as DDL in the opening
/// transaction; a custom stage, a missing plan and an older version are refused and change
/// nothing.
@Suite("PostgresStore migration plans")
struct PostgresMigrationPlanTests {
    static func container(_ url: String, _ version: any VersionedSchema.Type, plan: (any SchemaMigrationPlan.Type)?)
        throws -> ModelContainer
    {
        let schema = Schema(versionedSchema: version)
        return try ModelContainer(
            for: schema, migrationPlan: plan,
            configurations: [PostgresStoreConfiguration(name: "postgres", schema: schema, url: url)])
    }

    @Test func lightweightStagesConvertAndTheRestIsRefused() throws {
        guard let cluster = try PostgresStoreTests.cluster() else { return }
        let url = try cluster.freshDatabase()
        let v1 = ModelContext(try Self.container(url, ShelfV1.self, plan: ShelfPlan.self))
        v1.insert(ShelfV1.Shelf(code: "a", title: "Atlas", rank: 1))
        try v1.save()

        let noPlan = #expect(throws: DataStoreError.self) { try Self.container(url, ShelfV2.self, plan: nil) }
        #expect(noPlan?.code == .schemaMismatch)
        #expect(noPlan?.message.contains("SchemaMigrationPlan") == true, "\(String(describing: noPlan))")
        let custom = #expect(throws: DataStoreError.self) {
            try Self.container(url, ShelfV2.self, plan: ShelfCustomPlan.self)
        }
        #expect(custom?.code == .unsupportedFeature)
        #expect(custom?.message.contains("custom MigrationStage") == true, "\(String(describing: custom))")
        // Still V1.
        #expect(
            try ModelContext(try Self.container(url, ShelfV1.self, plan: ShelfPlan.self))
                .fetchCount(FetchDescriptor<ShelfV1.Shelf>()) == 1)

        let v2 = ModelContext(try Self.container(url, ShelfV2.self, plan: ShelfPlan.self))
        let shelves = try v2.fetch(FetchDescriptor<ShelfV2.Shelf>())
        #expect(shelves.map(\.heading) == ["Atlas"])
        #expect(shelves.map(\.stars) == [2])
        v2.insert(ShelfV2.Label(name: "New"))
        try v2.save()
        // Again: nothing to do.
        #expect(
            try ModelContext(try Self.container(url, ShelfV2.self, plan: ShelfPlan.self))
                .fetchCount(FetchDescriptor<ShelfV2.Label>()) == 1)
        // The older version, with the plan: refused.
        let older = #expect(throws: DataStoreError.self) { try Self.container(url, ShelfV1.self, plan: ShelfPlan.self) }
        #expect(older?.code == .schemaMismatch)
        #expect(older?.message.contains("version 2.0.0") == true, "\(String(describing: older))")
    }
}
