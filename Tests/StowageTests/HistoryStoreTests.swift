import Foundation
import StowageTestSupport
import Testing

@_spi(Testing) @testable import Stowage

/// Where each store keeps its history: the log store's commits and history records
/// through compaction and `deleteHistory` (`Formats/log.md`, "History record"), older log
/// versions, and the JSON store's opt-in `history` member (`Formats/json.md`, version 2).
@Suite("History in the stores")
struct HistoryStoreTests {
    static var all: HistoryDescriptor<DefaultHistoryTransaction> { HistoryDescriptor() }

    /// Each transaction as one line: identifier, time, author, and each change with what an
    /// app reads of it (updated attributes, preserved values).
    static func lines(_ transactions: [DefaultHistoryTransaction]) -> [String] {
        transactions.map { transaction in
            let changes = transaction.changes.map { change -> String in
                switch change {
                case .insert(let insert):
                    return "insert \(insert.changedPersistentIdentifier.primaryKey ?? -1)"
                case .update(let update):
                    let names = (update as? DefaultHistoryUpdate<HistoryNote>)?.updatedAttributes.map {
                        "\($0)"
                    }
                    return "update \(update.changedPersistentIdentifier.primaryKey ?? -1) \(names ?? ["?"])"
                case .delete(let delete):
                    let title = (delete as? DefaultHistoryDelete<HistoryNote>)?.tombstone[\.title] as? String
                    return "delete \(delete.changedPersistentIdentifier.primaryKey ?? -1) \(title ?? "-")"
                @unknown default:
                    return "unknown"
                }
            }
            return "\(transaction.transactionIdentifier) \(transaction.timestamp.timeIntervalSince1970) "
                + "\(transaction.author ?? "-") \(transaction.bundleIdentifier) \(transaction.processIdentifier): "
                + changes.joined(separator: "; ")
        }
    }

    static func logContainer(_ directory: LogTestDirectory) throws -> ModelContainer {
        try StoreKind.log.notes(in: directory)
    }

    static func logStore(_ container: ModelContainer) throws -> LogStore {
        try #require(container.stores.first as? LogStore)
    }

    /// Compaction rewrites the live records as new commits; the history is what it was,
    /// tombstones and changed attributes included, and the rewrite is no transaction.
    @Test func historySurvivesCompactionAndDeleteHistorySurvivesTheNextOne() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        var container = try Self.logContainer(directory)
        var context = ModelContext(container)
        let (kept, gone) = try HistoryTests.writeThreeTransactions(context)
        let before = try context.fetchHistory(Self.all)
        HistoryTests.check(before, kept: kept, gone: gone)
        try Self.logStore(container).compact()
        let compacted = try context.fetchHistory(Self.all)
        HistoryTests.check(compacted, kept: kept, gone: gone)
        #expect(Self.lines(compacted) == Self.lines(before))
        // Compacting a compacted file keeps the history records' transactions too.
        try Self.logStore(container).compact()
        #expect(Self.lines(try context.fetchHistory(Self.all)) == Self.lines(before))

        // deleteHistory, then a compaction and a reopen: what was removed stays removed.
        let first = try #require(before.first).transactionIdentifier
        try context.deleteHistory(
            HistoryDescriptor<DefaultHistoryTransaction>(predicate: #Predicate { $0.transactionIdentifier == first }))
        try Self.logStore(container).compact()
        StoreKind.close(container)
        container = try Self.logContainer(directory)
        context = ModelContext(container)
        #expect(Self.lines(try context.fetchHistory(Self.all)) == Array(Self.lines(before).dropFirst()))
        // The records are the store's as before, and the next save is the next transaction.
        #expect(try context.fetch(FetchDescriptor<HistoryNote>()).map(\.body) == ["second"])
        context.insert(HistoryNote(title: "After", body: "compaction"))
        try context.save()
        let after = try context.fetchHistory(Self.all)
        #expect(after.count == 3)
        #expect((after.last?.transactionIdentifier ?? 0) > (before.last?.transactionIdentifier ?? .max))
        StoreKind.close(container)
    }

    /// Deleting all of the history, then compacting, leaves one history record with no
    /// transactions, which only says that the compaction's own commits are none: the
    /// history is empty after a reopen and starts again at the next save.
    @Test func compactionAfterDeletingAllHistoryKeepsItEmpty() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let container = try Self.logContainer(directory)
        let context = ModelContext(container)
        _ = try HistoryTests.writeThreeTransactions(context)
        try context.deleteHistory(Self.all)
        try Self.logStore(container).compact()
        #expect(try context.fetchHistory(Self.all).isEmpty)
        StoreKind.close(container)
        let kinds = try Self.recordKinds(directory.storeURL)
        #expect(kinds.first == .history && kinds.filter { $0 == .history }.count == 1, "\(kinds)")
        #expect(kinds.contains(.commit))
        let reopened = ModelContext(try Self.logContainer(directory))
        #expect(try reopened.fetchHistory(Self.all).isEmpty)
        #expect(try reopened.fetchCount(FetchDescriptor<HistoryNote>()) == 1)
        reopened.insert(HistoryNote(title: "Next", body: "save"))
        try reopened.save()
        #expect(try reopened.fetchHistory(Self.all).map(\.changes.count) == [1])
        StoreKind.close(reopened.container)
    }

    /// The kinds of a log file's records after its preamble, in file order.
    static func recordKinds(_ url: URL) throws -> [LogRecordWalk.Record.Kind] {
        let fs = POSIXStoreFileSystem()
        let fd = try #require(try fs.open(url.path, mode: .existing))
        defer { fs.close(fd) }
        let size = try fs.size(fd)
        guard case .success(let preamble) = try LogPreamble.read(fs, fd, fileSize: size) else {
            Issue.record("\(url.path) has no valid preamble")
            return []
        }
        var walk = LogRecordWalk(fs, fd, fileSize: size, preamble: preamble) { offset, reason in
            Issue.record("damage at \(offset): \(reason)")
        }
        var kinds: [LogRecordWalk.Record.Kind] = []
        while let record = try walk.next() { kinds.append(record.kind) }
        return kinds
    }

    /// A version 5 log has no history sections: each commit is a transaction whose updates
    /// name every attribute, and it cannot record a deletion of history until compaction
    /// rewrites it as version 6, which keeps its transactions.
    @Test func aVersion5LogReadsItsCommitsAsTransactions() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let url = directory.url.appendingPathComponent("trips-v5.stowlog")
        try FileManager.default.copyItem(at: LogGoldenTests.samples.appendingPathComponent("trips-v5.stowlog"), to: url)
        var configuration = LogStoreConfiguration(schema: LogSamples.schema, url: url)
        configuration.automaticCompaction = nil
        let store = try LogStore(configuration, migrationPlan: nil)
        defer { store.close() }
        let history = try store.fetchHistory(Self.all)
        #expect(history.map(\.transactionIdentifier) == [1, 2, 3, 4, 5])
        #expect(history.map(\.author) == [nil, nil, "sampler", "sampler", "sampler"])
        // Version 5 did not record who saved.
        #expect(history.allSatisfy { $0.bundleIdentifier.isEmpty && $0.processIdentifier.isEmpty })
        let kinds = history.map { transaction in
            transaction.changes.map { change -> String in
                switch change {
                case .insert: "i"
                case .update: "u"
                case .delete: "d"
                @unknown default: "?"
                }
            }.joined()
        }
        #expect(kinds == ["iii", String(repeating: "i", count: 21), "ud", "i", "ud"])
        #expect(throws: DataStoreError.self) { try store.deleteHistory(Self.all) }
        do {
            try store.deleteHistory(Self.all)
        } catch let error as DataStoreError {
            #expect(error.code == .unsupportedFeature)
            #expect(error.message.contains("version 5"))
        }
        try store.compact()
        let compacted = try store.fetchHistory(Self.all)
        #expect(compacted.map(\.transactionIdentifier) == history.map(\.transactionIdentifier))
        #expect(compacted.map(\.changes.count) == history.map(\.changes.count))
        try store.deleteHistory(
            HistoryDescriptor<DefaultHistoryTransaction>(predicate: #Predicate { $0.transactionIdentifier < 3 }))
        #expect(try store.fetchHistory(Self.all).map(\.transactionIdentifier) == [3, 4, 5])
    }

    // MARK: JSON

    static func jsonContainer(_ directory: LogTestDirectory, keepsHistory: Bool) throws -> ModelContainer {
        let schema = Schema([HistoryNote.self])
        var configuration = JSONStoreConfiguration(
            name: "notes", schema: schema, fileURL: directory.url.appendingPathComponent("notes.json"))
        configuration.keepsHistory = keepsHistory
        return try ModelContainer(for: schema, configurations: [configuration])
    }

    static func documentVersion(_ directory: LogTestDirectory) throws -> (version: Int, hasHistory: Bool) {
        let data = try Data(contentsOf: directory.url.appendingPathComponent("notes.json"))
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        return (try #require(object["version"] as? Int), object["history"] != nil)
    }

    /// By default the JSON store keeps no history (every save rewrites the document, and
    /// its bytes stay those of version 1); asking for it is a clear error. Turned on, the
    /// document becomes version 2 and records saves from then on, and keeps doing so when
    /// opened again without the option.
    @Test func theJSONStoreKeepsHistoryOnlyWhenAskedTo() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        do {
            let container = try Self.jsonContainer(directory, keepsHistory: false)
            let context = ModelContext(container)
            _ = try HistoryTests.writeThreeTransactions(context)
            do {
                _ = try context.fetchHistory(Self.all)
                Issue.record("a JSON store without history answered fetchHistory")
            } catch let error as DataStoreError {
                #expect(error.code == .unsupportedFeature)
                #expect(error.message.contains("keepsHistory"), "\(error.message)")
            }
            #expect(throws: DataStoreError.self) { try context.deleteHistory(Self.all) }
            StoreKind.close(container)
        }
        #expect(try Self.documentVersion(directory) == (1, false))
        do {
            let container = try Self.jsonContainer(directory, keepsHistory: true)
            let context = ModelContext(container)
            #expect(try context.fetchHistory(Self.all).isEmpty, "saves before keepsHistory are not history")
            context.insert(HistoryNote(title: "First kept", body: "x"))
            try context.save()
            #expect(try context.fetchHistory(Self.all).count == 1)
            StoreKind.close(container)
        }
        #expect(try Self.documentVersion(directory) == (2, true))
        do {
            let container = try Self.jsonContainer(directory, keepsHistory: false)
            let context = ModelContext(container)
            let note = try #require(try context.fetch(FetchDescriptor<HistoryNote>()).first)
            note.body = "y"
            try context.save()
            let history = try context.fetchHistory(Self.all)
            #expect(history.count == 2, "a document that has history keeps it")
            #expect(history.last?.transactionIdentifier ?? 0 > history.first?.transactionIdentifier ?? .max)
            StoreKind.close(container)
        }
        #expect(try Self.documentVersion(directory) == (2, true))
    }
}
