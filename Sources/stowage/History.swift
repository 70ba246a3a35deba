import StowageInspection

/// `stowage history`: a log store's commits, one line each, in file order.
struct History: StowageCommand {
    static let spec = CommandSpec(name: "history", options: [.json])

    static let help = CommandHelp(
        abstract: "The log's commits: time, author, inserts, updates, deletes",
        overview: "list a log store's commits",
        usage: "stowage history [--json] PATH",
        discussion: """
            One line per commit record, in file order: its transaction identifier, time (UTC),
            author, and counts of inserts, updates and deletes, with its offset and size in the
            file, and "lz4" when the commit is stored compressed (format versions 4 and 5: when
            one of its blocks holds LZ4 bytes; --json also gives each commit's blocks). A compacted log holds the
            live records as inserts in commits that carry the last transaction identifier. A
            JSON store keeps no history: every save replaces the whole document. Reads only;
            the file is not changed.
            """)

    let path: String
    let json: Bool

    init(_ invocation: Invocation) throws(UsageError) {
        path = invocation.path
        json = invocation.has("--json")
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
            c.print(
                "\(store.path) is a JSON store, which keeps no history: every save replaces the whole document.")
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
        if let damage = store.damage {
            c.print("damaged\(StoreReport.damageText(damage, store)); no commit after it can be read")
            return .failed
        }
        return .ok
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
            ("damage", StoreReport.problemJSON(store.damage, store)),
        ])
    }
}
