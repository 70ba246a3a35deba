import StowageInspection

/// Options more than one command takes, declared once so that their name and help line
/// read the same in every command's help.
extension OptionSpec {
    /// `--json` (inspect, verify, history): the report as one JSON object.
    static let json = OptionSpec("--json", help: ["Print one JSON object instead of text"])
}

/// The descriptions of a store that several commands print in the same words: its format,
/// where it is damaged, and a problem as JSON.
enum StoreReport {
    /// The format and its version, as inspect and verify name it.
    static func formatName(_ store: ToolStore) -> String {
        switch store.format {
        case .log: "Stowage log store, format version \(store.formatVersion)"
        case .json: "Stowage JSON store (stowage-json), version \(store.formatVersion)"
        }
    }

    /// Where and what the damage is, to follow "damaged": an offset for a log, a line and
    /// column for a JSON store (people open the document in an editor, not a hex viewer).
    static func damageText(_ damage: ToolProblem, _ store: ToolStore) -> String {
        var text = damage.offset.map { " at offset \($0): " } ?? ": "
        if let line = store.damageLine {
            text = " at line \(line.line), column \(line.column) (offset \(damage.offset ?? 0)): "
        }
        return text + damage.message
    }

    /// A problem as JSON; the store's damage also gets its line and column in a JSON store.
    static func problemJSON(_ problem: ToolProblem?, _ store: ToolStore) -> JSON {
        guard let problem else { return .null }
        var members: [(String, JSON)] = [
            ("offset", problem.offset.map { JSON.int($0) } ?? .null), ("message", .string(problem.message)),
        ]
        if problem == store.damage, let line = store.damageLine {
            members.append(("line", .int(line.line)))
            members.append(("column", .int(line.column)))
        }
        return .object(members)
    }
}
