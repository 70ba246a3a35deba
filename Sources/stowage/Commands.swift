/// The table of commands, and the overview (`stowage --help`) made from it.
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

    static func named(_ name: String) -> (any StowageCommand.Type)? {
        all.first { $0.spec.name == name }
    }

    /// The `stowage --help` text; its COMMANDS list is each command's abstract.
    static var overview: String {
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
