import Foundation
import StowageTestSupport
import Testing

@_spi(Testing) @testable import Stowage

/// A note whose title outlives it in the history.
@Model final class HistoryNote {
    @Attribute(.preserveValueOnDeletion) var title: String
    var body: String
    var stars: Int
    init(title: String, body: String, stars: Int = 0) {
        self.title = title
        self.body = body
        self.stars = stars
    }
}

extension StoreKind {
    /// A container of ``HistoryNote`` on this kind of store, JSON with its history on.
    func notes(in directory: LogTestDirectory) throws -> ModelContainer {
        try container(Schema([HistoryNote.self]), in: directory, keepsHistory: true)
    }
}

@Suite("History")
struct HistoryTests {
    /// Three saves by two authors: two inserts; an update of one body; a delete of the other.
    static func writeThreeTransactions(_ context: ModelContext) throws -> (
        kept: PersistentIdentifier, gone: PersistentIdentifier
    ) {
        context.author = "importer"
        let kept = HistoryNote(title: "Kept", body: "first")
        let gone = HistoryNote(title: "Gone", body: "soon", stars: 2)
        context.insert(kept)
        context.insert(gone)
        try context.save()
        context.author = "editor"
        kept.body = "second"
        try context.save()
        context.delete(gone)
        try context.save()
        return (kept.persistentModelID, gone.persistentModelID)
    }

    static func check(
        _ transactions: [DefaultHistoryTransaction], kept: PersistentIdentifier, gone: PersistentIdentifier
    ) {
        #expect(transactions.count == 3)
        guard transactions.count == 3 else { return }
        #expect(transactions.map(\.author) == ["importer", "editor", "editor"])
        // Saved by this process, which Linux names by its executable and process identifier.
        #expect(transactions.allSatisfy { $0.bundleIdentifier == ProcessInfo.processInfo.processName })
        #expect(transactions.allSatisfy { $0.processIdentifier == String(ProcessInfo.processInfo.processIdentifier) })
        #expect(transactions.map(\.transactionIdentifier) == transactions.map(\.transactionIdentifier).sorted())
        #expect(transactions[0].token < transactions[1].token && transactions[1].token < transactions[2].token)
        var inserted: [PersistentIdentifier] = []
        for change in transactions[0].changes {
            guard case .insert(let insert) = change else {
                Issue.record("the first transaction holds \(change)")
                continue
            }
            #expect(insert is DefaultHistoryInsert<HistoryNote>)
            inserted.append(insert.changedPersistentIdentifier)
        }
        #expect(Set(inserted) == [kept, gone])
        #expect(transactions[1].changes.count == 1)
        if case .update(let update)? = transactions[1].changes.first,
            let typed = update as? DefaultHistoryUpdate<HistoryNote>
        {
            #expect(typed.changedPersistentIdentifier == kept)
            #expect(typed.updatedAttributes.map { $0 as AnyKeyPath } == [\HistoryNote.body])
        } else {
            Issue.record("the second transaction is not one update of a note: \(transactions[1].changes)")
        }
        #expect(transactions[2].changes.count == 1)
        switch transactions[2].changes.first {
        case .delete(let delete as DefaultHistoryDelete<HistoryNote>)?:
            #expect(delete.changedPersistentIdentifier == gone)
            #expect(delete.tombstone[\.title] as? String == "Gone")
            #expect(delete.tombstone[\.body] == nil, "body is not preserved")
            #expect(delete.tombstone[\.stars] == nil)
        default:
            Issue.record("the third transaction is not one delete of a note: \(transactions[2].changes)")
        }
    }

    @Test(arguments: StoreKind.allCases)
    func insertsUpdatesAndDeletesWithTheirAuthorsAndTombstones(_ kind: StoreKind) throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let container = try kind.notes(in: directory)
        let context = ModelContext(container)
        let (kept, gone) = try Self.writeThreeTransactions(context)
        Self.check(try context.fetchHistory(HistoryDescriptor<DefaultHistoryTransaction>()), kept: kept, gone: gone)
        guard kind.reopens else { return }
        // History survives a reopen.
        StoreKind.close(container)
        let reopened = ModelContext(try kind.notes(in: directory))
        Self.check(try reopened.fetchHistory(HistoryDescriptor<DefaultHistoryTransaction>()), kept: kept, gone: gone)
    }

    @Test(arguments: StoreKind.allCases)
    func aTokenKeptAcrossARestartReturnsExactlyTheLaterTransactions(_ kind: StoreKind) throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        var container = try kind.notes(in: directory)
        var context = ModelContext(container)
        _ = try Self.writeThreeTransactions(context)
        let all = try context.fetchHistory(HistoryDescriptor<DefaultHistoryTransaction>())
        // The app keeps the token of the first transaction, as JSON.
        let kept = try JSONEncoder().encode(try #require(all.first).token)
        if kind.reopens {
            StoreKind.close(container)
            container = try kind.notes(in: directory)
            context = ModelContext(container)
        }
        context.insert(HistoryNote(title: "Later", body: "after the restart"))
        try context.save()
        let token = try JSONDecoder().decode(DefaultHistoryToken.self, from: kept)
        var descriptor = HistoryDescriptor<DefaultHistoryTransaction>()
        descriptor.predicate = #Predicate { $0.token > token }
        let later = try context.fetchHistory(descriptor)
        #expect(
            later.map(\.transactionIdentifier) == Array(all.dropFirst().map(\.transactionIdentifier)) + [
                later.last?.transactionIdentifier ?? -1
            ])
        #expect(later.count == 3)
        #expect(later.last?.changes.count == 1)
    }

    @Test(arguments: StoreKind.allCases)
    func predicatesSortsLimitsAndDeletes(_ kind: StoreKind) throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let container = try kind.notes(in: directory)
        let context = ModelContext(container)
        _ = try Self.writeThreeTransactions(context)
        var byAuthor = HistoryDescriptor<DefaultHistoryTransaction>(predicate: #Predicate { $0.author == "editor" })
        #expect(try context.fetchHistory(byAuthor).count == 2)
        byAuthor.sortBy = [SortDescriptor(\.transactionIdentifier, order: .reverse)]
        byAuthor.fetchLimit = 1
        let newest = try context.fetchHistory(byAuthor)
        let all = try context.fetchHistory(HistoryDescriptor<DefaultHistoryTransaction>())
        #expect(newest.map(\.transactionIdentifier) == [all.last?.transactionIdentifier ?? -1])
        let first = try #require(all.first).transactionIdentifier
        try context.deleteHistory(
            HistoryDescriptor<DefaultHistoryTransaction>(predicate: #Predicate { $0.transactionIdentifier == first }))
        let left = try context.fetchHistory(HistoryDescriptor<DefaultHistoryTransaction>())
        #expect(left.map(\.transactionIdentifier) == all.dropFirst().map(\.transactionIdentifier))
        // The records are untouched.
        #expect(try context.fetchCount(FetchDescriptor<HistoryNote>()) == 1)
        let cutoff = Date.distantFuture
        try context.deleteHistory(
            HistoryDescriptor<DefaultHistoryTransaction>(predicate: #Predicate { $0.timestamp < cutoff }))
        #expect(try context.fetchHistory(HistoryDescriptor<DefaultHistoryTransaction>()).isEmpty)
        guard kind.reopens else { return }
        StoreKind.close(container)
        let reopened = ModelContext(try kind.notes(in: directory))
        #expect(try reopened.fetchHistory(HistoryDescriptor<DefaultHistoryTransaction>()).isEmpty)
        reopened.insert(HistoryNote(title: "New", body: "after"))
        try reopened.save()
        let fresh = try reopened.fetchHistory(HistoryDescriptor<DefaultHistoryTransaction>())
        #expect(fresh.count == 1)
        #expect((fresh.first?.transactionIdentifier ?? 0) > (all.last?.transactionIdentifier ?? .max))
    }
}
