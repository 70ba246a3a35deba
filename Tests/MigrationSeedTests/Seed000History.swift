// swift-format-ignore-file
// The history code of `shared/seeds/000_…` ("History Tracking and Change Detection"), as
// written there but for the import, inside a namespace (the seed reuses the name Trip). The
// seed's fragments use `modelContext`, `savedToken` and `transactions` without declaring
// them: each fragment is the body of a function below that declares them, and nothing more.
// Three of its lines do not compile against SwiftData itself, and are comments here (below).
import Foundation
import Stowage

enum Seed000History {
@Model
class Trip {
    @Attribute(.preserveValueOnDeletion) var name: String
    @Attribute(.preserveValueOnDeletion) var destination: String
    var startDate: Date

    init(name: String, destination: String, startDate: Date) {
        self.name = name
        self.destination = destination
        self.startDate = startDate
    }
}

static func tag(modelContext: ModelContext) {
modelContext.author = "mainApp"
}

static func fetch(modelContext: ModelContext, savedToken: inout DefaultHistoryToken?) throws -> [DefaultHistoryTransaction] {
var descriptor = HistoryDescriptor<DefaultHistoryTransaction>()

// Filter by token (only new changes since last check)
if let lastToken = savedToken {
    descriptor.predicate = #Predicate<DefaultHistoryTransaction> { transaction in
        transaction.token > lastToken
    }
}

// iOS 26+: Sort by timestamp
descriptor.sortBy = [SortDescriptor(\.timestamp, order: .reverse)]

let transactions = try modelContext.fetchHistory(descriptor)

for transaction in transactions {
    for change in transaction.changes {
        switch change {
        case .insert(let insert):
            let insertedID = insert.changedPersistentIdentifier
            // Process new record

        case .update(let update):
            let updatedID = update.changedPersistentIdentifier
            // The seed's next line does not compile, against SwiftData either: the compiler
            // refuses `updatedAttributes` on `any HistoryUpdate` (its type names the
            // associated Model), which only a `DefaultHistoryUpdate<Trip>` cast reaches:
            // let changedAttributes = update.updatedAttributes
            // Process modification

        case .delete(let delete):
            let deletedID = delete.changedPersistentIdentifier
            // The seed's next lines do not compile, against SwiftData either: `tombstone` on
            // `any HistoryDelete` is refused as `updatedAttributes` is above:
            // let tombstone = delete.tombstone
            // Access preserved values
            // if let name = tombstone[\.name] as? String {
            //     // Use preserved name for sync/audit
            // }
        }
    }

    // Save token for next incremental fetch
    savedToken = transaction.token
}
return transactions
}

static func deleteStale(modelContext: ModelContext) throws {
let cutoffDate = Calendar.current.date(byAdding: .month, value: -3, to: .now)!
var descriptor = HistoryDescriptor<DefaultHistoryTransaction>()
descriptor.predicate = #Predicate<DefaultHistoryTransaction> { transaction in
    transaction.timestamp < cutoffDate
}
try modelContext.deleteHistory(descriptor)
}

static func crossProcess(_ transactions: [DefaultHistoryTransaction]) {
for transaction in transactions {
    if transaction.author == "widget" {
        // Handle widget-originated changes
    }
}
}
}
