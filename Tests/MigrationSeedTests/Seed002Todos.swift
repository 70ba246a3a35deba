// swift-format-ignore-file
// The to-do plan of `shared/seeds/002_…` (the tutorial's "Manage versions with
// VersionedSchema" and "Custom migration stages"), as written there but for the import,
// inside a namespace. The tutorial replaces `migrateV1toV2` with a custom stage; both
// versions of the plan are here, the second as `TodoCustomMigrationPlan`.
import Foundation
import Stowage

enum Seed002 {
    enum TodoSchemaV1: VersionedSchema {
        static let versionIdentifier = Schema.Version(1, 0, 0)
        static var models: [any PersistentModel.Type] {
            [TodoItem.self, TodoGroup.self]
        }

        @Model
        final class TodoItem {
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

        @Model
        final class TodoGroup {
            var name: String
            @Relationship(deleteRule: .cascade, inverse: \TodoItem.group)
            var items: [TodoItem] = []

            init(name: String) {
                self.name = name
            }
        }
    }

    enum TodoSchemaV2: VersionedSchema {
        static let versionIdentifier = Schema.Version(2, 0, 0)
        static var models: [any PersistentModel.Type] {
            [TodoItem.self, TodoGroup.self]
        }

        @Model
        final class TodoItem {
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

        @Model
        final class TodoGroup {
            var name: String
            @Relationship(deleteRule: .cascade, inverse: \TodoItem.group)
            var items: [TodoItem] = []

            init(name: String) {
                self.name = name
            }
        }
    }

    typealias TodoItem = TodoSchemaV2.TodoItem
    typealias TodoGroup = TodoSchemaV2.TodoGroup

    enum TodoMigrationPlan: SchemaMigrationPlan {
        static var schemas: [any VersionedSchema.Type] {
            [TodoSchemaV1.self, TodoSchemaV2.self]
        }

        static var stages: [MigrationStage] {
            [migrateV1toV2]
        }

        static var migrateV1toV2: MigrationStage {
            .lightweight(fromVersion: TodoSchemaV1.self, toVersion: TodoSchemaV2.self)
        }
    }

    enum TodoCustomMigrationPlan: SchemaMigrationPlan {
        static var schemas: [any VersionedSchema.Type] {
            [TodoSchemaV1.self, TodoSchemaV2.self]
        }

        static var stages: [MigrationStage] {
            [migrateV1toV2]
        }

        static var migrateV1toV2: MigrationStage {
            .custom(
                fromVersion: TodoSchemaV1.self,
                toVersion: TodoSchemaV2.self,
                willMigrate: nil,
                didMigrate: { context in
                    let items = try context.fetch(FetchDescriptor<TodoSchemaV2.TodoItem>())
                    for item in items where !item.done {
                        item.priority = 1
                    }
                    try context.save()
                }
            )
        }
    }
}
