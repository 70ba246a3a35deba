// swift-format-ignore-file
// The trip plan of `shared/seeds/000_…` ("Schema Versioning and Migration"), as written
// there but for the import, inside a namespace (the seeds reuse the names SchemaV1 and
// SchemaV2). Its custom stage is a fragment there (`static let migrateV2toV3`, with no V3);
// `TripV3Plan` gives it the V3 it names.
import Foundation
import Stowage

enum Seed000 {
    enum SchemaV1: VersionedSchema {
        static var versionIdentifier = Schema.Version(1, 0, 0)
        static var models: [any PersistentModel.Type] { [Trip.self] }
        @Model class Trip { var name: String; init(name: String) { self.name = name } }
    }

    enum SchemaV2: VersionedSchema {
        static var versionIdentifier = Schema.Version(2, 0, 0)
        static var models: [any PersistentModel.Type] { [Trip.self] }
        @Model class Trip {
            var name: String; var startDate: Date?  // New property
            init(name: String) { self.name = name }
        }
    }

    enum TripMigrationPlan: SchemaMigrationPlan {
        static var schemas: [any VersionedSchema.Type] { [SchemaV1.self, SchemaV2.self] }
        static var stages: [MigrationStage] { [migrateV1toV2] }
        static let migrateV1toV2 = MigrationStage.lightweight(
            fromVersion: SchemaV1.self, toVersion: SchemaV2.self)
    }

    // Not in the seed: the V3 its custom stage migrates to.
    enum SchemaV3: VersionedSchema {
        static var versionIdentifier = Schema.Version(3, 0, 0)
        static var models: [any PersistentModel.Type] { [Trip.self] }
        @Model class Trip {
            var name: String
            var startDate: Date?
            var displayName: String = ""
            init(name: String) { self.name = name }
        }
    }

    enum TripV3Plan: SchemaMigrationPlan {
        static var schemas: [any VersionedSchema.Type] { [SchemaV1.self, SchemaV2.self, SchemaV3.self] }
        static var stages: [MigrationStage] { [TripMigrationPlan.migrateV1toV2, migrateV2toV3] }

        // Custom migration for data transformation
        static let migrateV2toV3 = MigrationStage.custom(
            fromVersion: SchemaV2.self, toVersion: SchemaV3.self,
            willMigrate: nil,
            didMigrate: { context in
                let trips = try context.fetch(FetchDescriptor<SchemaV3.Trip>())
                for trip in trips { trip.displayName = trip.name.capitalized }
                try context.save()
            })
    }

    // The seed's second plan ("Core Data Coexistence Boundary").
    enum ArticleSchemaV1: VersionedSchema {
        static var versionIdentifier = Schema.Version(1, 0, 0)
        static var models: [any PersistentModel.Type] { [Article.self, Author.self] }

        @Model class Article {
            var id: UUID
            var title: String
            var body: String
            var createdAt: Date
            init(id: UUID, title: String, body: String, createdAt: Date) {
                self.id = id; self.title = title
                self.body = body; self.createdAt = createdAt
            }
        }

        @Model class Author {
            var id: UUID
            var name: String
            init(id: UUID, name: String) { self.id = id; self.name = name }
        }
    }

    enum ArticleSchemaV2: VersionedSchema {
        static var versionIdentifier = Schema.Version(2, 0, 0)
        static var models: [any PersistentModel.Type] { [Article.self, Author.self, Tag.self] }

        @Model class Article {
            var id: UUID
            var title: String
            var body: String
            var createdAt: Date
            var isDraft: Bool = true  // New property
            init(id: UUID, title: String, body: String, createdAt: Date) {
                self.id = id; self.title = title
                self.body = body; self.createdAt = createdAt
            }
        }

        @Model class Author {
            var id: UUID
            var name: String
            init(id: UUID, name: String) { self.id = id; self.name = name }
        }

        @Model class Tag {
            var id: UUID
            var name: String
            init(id: UUID, name: String) { self.id = id; self.name = name }
        }
    }

    enum ArticleMigrationPlan: SchemaMigrationPlan {
        static var schemas: [any VersionedSchema.Type] { [ArticleSchemaV1.self, ArticleSchemaV2.self] }
        static var stages: [MigrationStage] {
            [MigrationStage.lightweight(fromVersion: ArticleSchemaV1.self, toVersion: ArticleSchemaV2.self)]
        }
    }
}
