// swift-format-ignore-file
// The task plan of `shared/seeds/004_…` ("Migration with VersionedSchema"), as written
// there but for the import, inside a namespace. Its V2 renames the model class (TaskV1 to
// TaskV2, so a new entity) and adds a priority that is neither optional nor defaulted: no
// lightweight stage can carry its records over, and Stowage refuses it instead of dropping
// them.
import Foundation
import Stowage

enum Seed004 {
    // Version 1
    enum SchemaV1: VersionedSchema {
        static var versionIdentifier = Schema.Version(1, 0, 0)
        static var models: [any PersistentModel.Type] { [TaskV1.self] }

        @Model
        class TaskV1 {
            var id: UUID
            var title: String
            var isCompleted: Bool
            init(title: String) {
                self.id = UUID()
                self.title = title
                self.isCompleted = false
            }
        }
    }

    // Version 2 — adds priority field
    enum SchemaV2: VersionedSchema {
        static var versionIdentifier = Schema.Version(2, 0, 0)
        static var models: [any PersistentModel.Type] { [TaskV2.self] }

        @Model
        class TaskV2 {
            var id: UUID
            var title: String
            var isCompleted: Bool
            var priority: Int // New field
            init(title: String, priority: Int = 0) {
                self.id = UUID()
                self.title = title
                self.isCompleted = false
                self.priority = priority
            }
        }
    }

    // Migration plan
    enum TaskMigrationPlan: SchemaMigrationPlan {
        static var schemas: [any VersionedSchema.Type] { [SchemaV1.self, SchemaV2.self] }

        static var stages: [MigrationStage] {
            [migrateV1toV2]
        }

        static let migrateV1toV2 = MigrationStage.lightweight(
            fromVersion: SchemaV1.self,
            toVersion: SchemaV2.self
        )
    }
}
