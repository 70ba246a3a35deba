import Stowage
import StowageInspection

/// `stowage history`: a log store's commits, one line each, in file order, and the store's
/// history as `ModelContext.fetchHistory` reads it (a log's commits and history records, a
/// JSON document's `history` member).
struct History: StowageCommand {
    static let spec = CommandSpec(
        name: "history",
        options: [
            .json,
            OptionSpec(
                "--changes",
                help: [
                    "List each transaction of the history with its changes: inserts, the",
                    "attributes updates changed, and deletes with their preserved values",
                ]),
        ])

    static let help = CommandHelp(
        abstract: "The log's commits: time, author, inserts, updates, deletes",
        overview: "list a log store's commits",
        usage: "stowage history [--json] [--changes] PATH",
        discussion: """
            One line per commit record, in file order: its transaction identifier, time (UTC),
            author, and counts of inserts, updates and deletes, with its offset and size in the
            file, and "lz4" when the commit is stored compressed (format versions 4 and 5: when
            one of its blocks holds LZ4 bytes; --json also gives each commit's blocks). A compacted log holds the
            live records as inserts in commits that carry the last transaction identifier.
            Then the history as ModelContext.fetchHistory reads it: its transactions, with
            those that compaction kept in history records (format version 6) and without
            those deleteHistory removed; --changes lists each with its changes, and --json
            always does. A JSON store keeps a history only when it was opened with
            JSONStoreConfiguration.keepsHistory (stowage-json version 2). Reads only; the file
            is not changed.
            """)

    let path: String
    let json: Bool
    let changes: Bool

    init(_ invocation: Invocation) throws(UsageError) {
        path = invocation.path
        json = invocation.has("--json")
        changes = invocation.has("--changes")
    }

    func run(console: Console) throws -> ExitStatus {
        let store = try ToolStore.read(path: path)
        let commits = store.log?.commits ?? []
        if json {
            console.print(Self.jsonObject(store, commits).rendered())
            return store.damage == nil ? .ok : .failed
        }
        let c = console
        if store.format == .json {
            if store.history == nil {
                c.print(
                    "\(store.path) is a JSON store without history: it was not opened with "
                        + "JSONStoreConfiguration.keepsHistory.")
            } else {
                c.print("\(store.path) is a JSON store with history.")
            }
            printHistory(store, console: c)
            return store.damage == nil ? .ok : .failed
        }
        c.print("\(store.path): \(Text.count(commits.count, "commit"))")
        if !commits.isEmpty {
            let authors = max(6, commits.map { ($0.author ?? "-").count }.max() ?? 0)
            c.print(
                "  txn  time                      \(Text.padRight("author", authors))  inserts  updates  deletes"
                    + "  offset   bytes")
            for commit in commits {
                c.print(
                    "  \(Text.padLeft(String(commit.transactionID), 3))  "
                        + "\(ToolJSON.time(milliseconds: commit.timestamp))  "
                        + "\(Text.padRight(commit.author ?? "-", authors))  "
                        + "\(Text.padLeft(String(commit.inserts), 7))  \(Text.padLeft(String(commit.updates), 7))  "
                        + "\(Text.padLeft(String(commit.deletes), 7))  \(Text.padLeft(String(commit.offset), 6))  "
                        + "\(Text.padLeft(String(commit.recordLength), 6))\(commit.isCompressed ? " lz4" : "")")
            }
        }
        printHistory(store, console: c)
        if let damage = store.damage {
            c.print("damaged\(StoreReport.damageText(damage, store)); no commit after it can be read")
            return .failed
        }
        return .ok
    }

    /// The history's summary line and, with `--changes`, its transactions.
    private func printHistory(_ store: ToolStore, console c: Console) {
        guard let history = store.history else {
            for problem in store.problems where problem.message.hasPrefix("the history") { c.print(problem.message) }
            return
        }
        let kept =
            store.logVersion?.keepsHistory != true
            ? "" : store.log.map { ", \(Text.count($0.historyRecords, "history record"))" } ?? ""
        c.print("history: \(Text.count(history.count, "transaction"))\(kept)")
        guard changes else { return }
        for entry in history {
            let writer =
                entry.writer.process == 0 && entry.writer.program.isEmpty
                ? "" : "  \(entry.writer.program) (process \(entry.writer.process))"
            c.print(
                "  txn \(entry.transactionID)  \(ToolJSON.time(milliseconds: entry.timestamp))  \(entry.author ?? "-")"
                    + writer)
            for change in entry.changes { c.print("    \(Self.text(change))") }
        }
    }

    private static func text(_ change: HistoryEntry.Change) -> String {
        let record = "\(change.entity) \(change.key)"
        switch change.kind {
        case .insert: return "insert \(record)"
        case .update:
            return "update \(record): "
                + (change.updated.isEmpty ? "nothing changed" : change.updated.joined(separator: ", "))
        case .delete:
            let kept = change.tombstone.keys.sorted().map { "\($0) = \(ToolJSON.text(change.tombstone[$0] ?? .null))" }
            return "delete \(record)" + (kept.isEmpty ? "" : " (preserved: \(kept.joined(separator: ", ")))")
        }
    }

    private static func historyJSON(_ history: [HistoryEntry]?) -> JSON {
        guard let history else { return .null }
        return .array(
            history.map { entry in
                .object([
                    ("transactionID", .int(entry.transactionID)),
                    ("time", .string(ToolJSON.time(milliseconds: entry.timestamp))),
                    ("timestamp", .int(entry.timestamp)),
                    ("author", .optional(entry.author)),
                    ("program", .string(entry.writer.program)),
                    ("process", .int(entry.writer.process)),
                    (
                        "changes",
                        .array(
                            entry.changes.map { change in
                                var members: [(String, JSON)] = [
                                    ("kind", .string(["insert", "update", "delete"][Int(change.kind.rawValue)])),
                                    ("entity", .string(change.entity)),
                                    ("key", .int(change.key)),
                                ]
                                if change.kind == .update {
                                    members.append(("updatedAttributes", .array(change.updated.map(JSON.string))))
                                }
                                if change.kind == .delete {
                                    members.append(
                                        (
                                            "preserved",
                                            .object(
                                                change.tombstone.keys.sorted().map {
                                                    ($0, .raw(ToolJSON.text(change.tombstone[$0] ?? .null)))
                                                })
                                        ))
                                }
                                return .object(members)
                            })
                    ),
                ])
            })
    }

    private static func jsonObject(_ store: ToolStore, _ commits: [ToolCommit]) -> JSON {
        let list = commits.map { commit -> JSON in
            var members: [(String, JSON)] = [
                ("transactionID", .int(Int64(bitPattern: commit.transactionID))),
                ("time", .string(ToolJSON.time(milliseconds: commit.timestamp))),
                ("timestamp", .int(commit.timestamp)),
                ("author", .optional(commit.author)),
                ("inserts", .int(commit.inserts)),
                ("updates", .int(commit.updates)),
                ("deletes", .int(commit.deletes)),
                ("offset", .int(commit.offset)),
                ("length", .int(commit.recordLength)),
                ("compressed", .bool(commit.isCompressed)),
            ]
            // Blocks exist from format version 4; earlier logs' commits get no such members.
            if store.logVersion?.locatesRecords == true {
                members.append(("blocks", .int(commit.blocks)))
                members.append(("compressedBlocks", .int(commit.compressedBlocks)))
            }
            return .object(members)
        }
        return JSON.object([
            ("path", .string(store.path)),
            ("format", .string(store.format.rawValue)),
            ("commits", .array(list)),
            ("history", historyJSON(store.history)),
            ("damage", StoreReport.problemJSON(store.damage, store)),
        ])
    }
}
