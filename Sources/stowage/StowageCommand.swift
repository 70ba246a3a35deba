/// One subcommand of `stowage`, in the manner of swift-argument-parser's `ParsableCommand`:
/// the type declares its name and options (`spec`) and its `--help` text (`help`), reads a
/// parsed command line into typed properties (`init`), and does the work (`run`). The
/// commands are listed, in the order `stowage --help` shows them, in `Commands.all`.
protocol StowageCommand {
    /// The name and options the parser accepts.
    static var spec: CommandSpec { get }
    /// The parts of the `--help` text, and the one-line abstract for the overview.
    static var help: CommandHelp { get }

    /// Reads the command line into the command's options. A value the parser cannot judge
    /// (a number out of range) is a usage error here, before any file is opened.
    init(_ invocation: Invocation) throws(UsageError)

    /// Does the work, printing to `console`. Throws `ToolFailure` (exit status 1) when the
    /// file cannot be read or written, `UsageError` (2) for a wrong argument found late.
    func run(console: Console) throws -> ExitStatus
}

extension StowageCommand {
    /// The command's `stowage <command> --help` text.
    static var helpText: String { help.rendered(options: spec.options) }
}

/// What the parser knows of a command: its name and the options it takes.
struct CommandSpec {
    let name: String
    /// In the order `--help` lists them; `-h, --help` is not among them (every command
    /// takes it, and the parser handles it before the spec is consulted).
    let options: [OptionSpec]

    func option(named name: String) -> OptionSpec? {
        options.first { $0.name == name }
    }
}

/// One option of a command: its name, whether and which value it takes, and its help.
struct OptionSpec {
    /// What follows the option's name on the command line.
    enum Value {
        /// No value: a flag.
        case none
        /// Any value; the placeholder names it in the help (`--width N`).
        case any(placeholder: String)
        /// One of these values (`--format jsonl|table`); the parser refuses any other.
        case oneOf([String])
    }

    let name: String
    let value: Value
    /// The description's lines in the OPTIONS list, wrapped by hand as they are printed.
    let help: [String]

    init(_ name: String, _ value: Value = .none, help: [String]) {
        self.name = name
        self.value = value
        self.help = help
    }

    /// The option as the OPTIONS list shows it: its name and what its value looks like.
    var label: String {
        switch value {
        case .none: name
        case .any(let placeholder): "\(name) \(placeholder)"
        case .oneOf(let values): "\(name) \(values.joined(separator: "|"))"
        }
    }
}

/// A command's `--help` text, in parts: the OPTIONS list is drawn from the command's spec
/// so that it names exactly the options the parser accepts.
struct CommandHelp {
    /// The command's line in the overview's COMMANDS list.
    let abstract: String
    /// The OVERVIEW line of the command's own help.
    let overview: String
    let usage: String
    /// The paragraphs between USAGE and OPTIONS, as printed.
    let discussion: String
    /// Spaces between the widest option label and the descriptions. Three, except in
    /// dump's help, which was published with two; the golden files pin every help text.
    var optionGap = 3
    /// Lines printed after the shared EXIT STATUS list, each indented by two spaces.
    var exitNotes: String?

    /// The exit statuses every command shares (`ExitStatus`), printed in every help text.
    static let exitStatus = """
        EXIT STATUS:
          0  ok (for verify: the store is healthy)
          1  damaged or failed: the store is damaged, is not a Stowage store, cannot be
             read or written, or is open in another process
          2  usage: an unknown command or option, a missing PATH, an unknown --entity
        """

    /// The help for `--help` itself, which every command takes and lists last.
    private static let helpOption = OptionSpec("-h, --help", help: ["Show this help"])

    /// The whole text, with the OPTIONS list made from `options` plus `-h, --help`.
    func rendered(options: [OptionSpec]) -> String {
        let all = options + [Self.helpOption]
        let column = 2 + (all.map(\.label.count).max() ?? 0) + optionGap
        var lines = ["OVERVIEW: \(overview)", "", "USAGE: \(usage)", "", discussion, "", "OPTIONS:"]
        for option in all {
            for (n, text) in option.help.enumerated() {
                let lead =
                    n == 0 ? "  " + Text.padRight(option.label, column - 2) : String(repeating: " ", count: column)
                lines.append(lead + text)
            }
        }
        lines += ["", Self.exitStatus]
        if let exitNotes { lines.append(exitNotes) }
        return lines.joined(separator: "\n")
    }
}
