import StowageInspection

/// `stowage recover`: cuts a damaged log back to its longest valid prefix, after a synced
/// backup, as opening the store would. One of the two commands that write to a store.
struct Recover: StowageCommand {
    static let spec = CommandSpec(
        name: "recover",
        options: [
            OptionSpec(
                "--backup", .any(placeholder: "FILE"),
                help: [
                    "Where to copy the original (default PATH.bak-<UTC time>); the",
                    "file must not exist",
                ])
        ])

    static let help = CommandHelp(
        abstract: "Cut a damaged log back to its longest valid prefix, after a backup",
        overview: "bring a damaged log back to its longest valid prefix",
        usage: "stowage recover [--backup FILE] PATH",
        discussion: """
            Takes the store's lock (PATH.lock), reads the log, and if a record is torn or
            damaged at offset X: copies the whole file to a backup first (synced), then cuts the
            log to its first X bytes and syncs it, the same point-in-time recovery that opening
            the store performs. Prints the bytes kept and dropped and the backup's path. A whole
            log is not written. A log whose file header or header record is damaged cannot be
            recovered and is left untouched. A JSON store is never changed: one that does not
            parse or does not fit its schema is left untouched, and recover says where it breaks.
            """,
        exitNotes: """
              recover exits 0 when the log is whole or was recovered.
            """)

    let path: String
    /// Where to copy the original; `nil` lets the library choose `PATH.bak-<UTC time>`.
    let backup: String?

    init(_ invocation: Invocation) throws(UsageError) {
        path = invocation.path
        backup = invocation.options["--backup"]
    }

    func run(console c: Console) throws -> ExitStatus {
        let result = try ToolMaintenance.recover(path: path, backup: backup)
        switch result.outcome {
        case .healthy:
            c.print(
                "\(path) is whole: nothing to recover (\(Text.count(Int(result.originalSize), "byte"))"
                    + (result.format == .log ? ", \(Text.count(result.commits, "commit"))" : "")
                    + "); nothing was written")
            return .ok
        case .truncated(let backup):
            c.print(
                "recovered \(path): kept \(result.validLength) bytes (\(Text.count(result.commits, "commit"))), "
                    + "dropped \(result.droppedBytes) bytes from offset \(result.validLength)")
            if let damage = result.damage { c.print("  what was wrong there: \(damage.message)") }
            c.print("  backup of the original: \(backup)")
            return .ok
        case .leftUntouched:
            if result.format == .json {
                var where_ = ""
                if let line = result.line {
                    where_ = "at line \(line.line), column \(line.column) (offset \(result.damage?.offset ?? 0)): "
                }
                c.error(
                    "stowage: error: \(path) was left untouched: the JSON store does not read, "
                        + "\(where_)\(result.damage?.message ?? "")")
                c.error(
                    "A JSON store is replaced whole by every save, so there is no valid prefix to keep: "
                        + "fix the document by hand or restore a copy.")
            } else {
                c.error(
                    "stowage: error: \(path) was left untouched: "
                        + (result.damage.map { ($0.offset.map { "at offset \($0): " } ?? "") + $0.message }
                            ?? "it is damaged")
                        + "; without a valid file header and header record there is no prefix to keep")
            }
            return .failed
        }
    }
}
