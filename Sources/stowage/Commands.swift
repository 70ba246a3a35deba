import Stowage

/// The table of commands, and the texts made from it: the overview (`stowage --help`) and
/// the version line (`stowage --version`).
enum Commands {
    /// Every command, in the order the overview lists them. The parser, the help and the
    /// dispatch all read this one list, so a command added here is complete everywhere.
    static var all: [any StowageCommand.Type] {
        [Inspect.self, Verify.self, Dump.self, History.self, Recover.self, Compact.self]
    }

    /// The specs by name, as the parser looks them up.
    static var specs: [String: CommandSpec] {
        Dictionary(uniqueKeysWithValues: all.map { ($0.spec.name, $0.spec) })
    }

    /// The command of that name, for `--help` and the dispatch.
    static func named(_ name: String) -> (any StowageCommand.Type)? {
        all.first { $0.spec.name == name }
    }

    /// The tool's own version; the formats it reads follow it in `version`.
    static let toolVersion = 1

    /// The `--version` line. The formats come from the library's constants, so that the
    /// line stays true when the library learns to read a new version.
    static var version: String {
        let log = LogFormat.readableVersions
        let logVersions =
            log.lowerBound == log.upperBound
            ? "version \(log.lowerBound)" : "versions \(log.lowerBound) to \(log.upperBound)"
        let json = JSONDocument.readableVersions
        let jsonVersions =
            json.lowerBound == json.upperBound
            ? "version \(json.lowerBound)" : "versions \(json.lowerBound) to \(json.upperBound)"
        return "stowage \(toolVersion) (reads log format \(logVersions), "
            + "\(JSONDocument.formatName) \(jsonVersions))"
    }

    /// The `stowage --help` text; its COMMANDS list is each command's abstract.
    static var overview: String {
        // The abstracts start three columns past the longest name, as option descriptions do.
        let nameWidth = all.map { $0.spec.name.count }.max() ?? 0
        let commands = all.map { "  " + Text.padRight($0.spec.name, nameWidth + 3) + $0.help.abstract }
        return """
            OVERVIEW: inspect, check, dump and repair Stowage store files

            USAGE: stowage <command> [options] PATH

            PATH is a log store (a LogStore file, which starts with "STOWLOG") or a JSON store
            (a stowage-json document); the tool tells them apart by their first bytes and
            refuses any other file. It needs no model types: the schema comes from the file.

            COMMANDS:
            \(commands.joined(separator: "\n"))

            Only recover and compact ever write to a store, and both take its lock first.

            \(CommandHelp.exitStatus)

            Run 'stowage <command> --help' for a command's options.
            """
    }
}
