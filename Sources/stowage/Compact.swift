import StowageInspection

/// `stowage compact`: rewrites a log without its dead records, atomically, as the store's
/// own compaction does. One of the two commands that write to a store.
struct Compact: StowageCommand {
    static let spec = CommandSpec(name: "compact", options: [])

    static let help = CommandHelp(
        abstract: "Rewrite a log without its dead records",
        overview: "rewrite a log without its dead records",
        usage: "stowage compact PATH",
        discussion: """
            Takes the store's lock (PATH.lock), then writes the live records, as inserts in
            commits of about 4 MiB carrying the last transaction identifier, to PATH.compact
            with a new salt and generation + 1; syncs it, reads it back and compares its records
            with the original's, renames it over PATH and syncs the directory, as the store's
            own compaction does (Formats/log.md). A crash leaves the old file or the new one.
            Prints the size before and after, with a progress bar when standard output is a
            terminal. A damaged log is refused (run recover first). A JSON store holds no dead
            records and is not rewritten.

            The log keeps its format version; a version 4 or 5 log's commits keep their writes
            in blocks, as the store writes them. A version 3, 4 or 5 log is rewritten without a
            checkpoint record (checkpoints are optional): the store builds its indexes (and, in
            versions 4 and 5, its key directory) from the records the next
            time it opens the file, and writes a checkpoint again when it compacts, when
            checkpoint() is called, or when it is closed with at least minimumCommitBytes of
            commits in the file (1 MiB by default).
            """)

    /// The progress bar's width in characters, inside its brackets.
    static let barWidth = 30

    let path: String

    init(_ invocation: Invocation) throws(UsageError) {
        path = invocation.path
    }

    func run(console: Console) throws -> ExitStatus {
        // The bar is drawn only on a terminal: in a pipe or a file its carriage returns
        // would be noise. It is redrawn only when it grows, not for every record.
        let terminal = console.isTerminal
        var lastDrawn = -1
        let result = try ToolMaintenance.compact(path: path) { done, total in
            guard terminal else { return }
            let width = Self.barWidth
            let filled = total == 0 ? width : done * width / max(1, total)
            guard filled != lastDrawn || done == total else { return }
            lastDrawn = filled
            let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
            console.raw("\r[\(bar)] \(done)/\(total) records")
        }
        if terminal && result.rewritten { console.raw("\r\u{1B}[K") }
        guard result.rewritten else {
            console.print(
                "\(path) is a JSON store: it holds no dead records, so there is nothing to compact "
                    + "(\(Text.count(Int(result.sizeBefore), "byte"))); it was not rewritten")
            return .ok
        }
        let saved = result.sizeBefore - result.sizeAfter
        console.print(
            "compacted \(path): \(result.sizeBefore) bytes before, \(result.sizeAfter) bytes after "
                + (saved >= 0 ? "(\(saved) bytes reclaimed)" : "(\(-saved) bytes more)"))
        console.print(
            "  \(Text.count(result.records, "live record")) in \(Text.count(result.commitsAfter, "commit")) "
                + "(there were \(result.commitsBefore))")
        return .ok
    }
}
