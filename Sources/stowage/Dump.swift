import Foundation
import Stowage
import StowageInspection

/// `stowage dump`: every live record, as JSON lines (the JSON store's value mapping) or
/// as one table per entity.
struct Dump: StowageCommand {
    /// The output formats `--format` accepts.
    enum Format: String, CaseIterable {
        case jsonl
        case table
    }

    static let spec = CommandSpec(
        name: "dump",
        options: [
            OptionSpec("--entity", .any(placeholder: "NAME"), help: ["Only the records of this entity"]),
            OptionSpec(
                "--format", .oneOf(Format.allCases.map(\.rawValue)),
                help: ["JSON lines (default), or one table per entity"]),
        ])

    static let help = CommandHelp(
        abstract: "Every live record, as JSON lines or tables",
        overview: "print every live record",
        usage: "stowage dump [--entity NAME] [--format jsonl|table] PATH",
        discussion: """
            One JSON object per line (jsonl, the default), entities in schema order and records
            in primary-key order:
              {"entity": "Trip", "id": 3, "values": {"name": "Oslo", "items": [4, 5], ...}}
            Values use the JSON store's mapping (Formats/json.md): numbers, strings, booleans
            and null as themselves; dates, UUIDs, URLs, data, decimals and unsigned integers
            tagged ({"$date": "2026-01-01T00:00:00.000Z"}); relationships as the primary keys
            of their destination. A value kept outside a version 2 log (.externalStorage) is
            shown as {"$external": {"file": NAME, "bytes": N}}, NAME inside PATH.blobs/. A
            damaged log is dumped up to the damage, with exit status 1.
            Reads only; the file is not changed.
            """,
        optionGap: 2)

    /// A table cell's longest text; a longer value is cut, so that one long string does
    /// not push every other column off the screen.
    static let cellWidth = 40

    let path: String
    let entity: String?
    let format: Format

    init(_ invocation: Invocation) throws(UsageError) {
        path = invocation.path
        entity = invocation.options["--entity"]
        // The parser has already refused any value that is not a Format's.
        format = invocation.options["--format"].flatMap(Format.init(rawValue:)) ?? .jsonl
    }

    func run(console: Console) throws -> ExitStatus {
        let store = try ToolStore.read(path: path)
        guard let schema = store.schema else {
            if let damage = store.damage {
                console.error("stowage: error: \(store.path) is damaged\(StoreReport.damageText(damage, store))")
            }
            return .failed
        }
        var entities = schema.entities
        if let name = entity {
            // Only the file knows its entities, so a wrong name is found after reading it.
            guard let entity = schema.entity(named: name) else {
                throw UsageError(
                    message: "the store has no entity '\(name)' (it has "
                        + "\(schema.entities.map(\.name).joined(separator: ", ")))",
                    command: "dump")
            }
            entities = [entity]
        }
        switch format {
        case .table:
            for (n, entity) in entities.enumerated() {
                if n > 0 { console.print() }
                Self.printTable(entity, store.records[entity.name] ?? [], on: console)
            }
        case .jsonl:
            for entity in entities {
                for record in store.records[entity.name] ?? [] {
                    console.print(Self.jsonLine(entity, record))
                }
            }
        }
        if let damage = store.damage {
            console.error(
                "stowage: \(store.path) is damaged\(StoreReport.damageText(damage, store)); "
                    + "the records above are those of the valid part before it")
            return .failed
        }
        return .ok
    }

    /// One record as a line of JSON: `{"entity": …, "id": …, "values": {…}}`.
    private static func jsonLine(_ entity: ToolSchema.Entity, _ record: ToolRecord) -> String {
        var line = "{\"entity\": \(ToolJSON.quote(entity.name)), \"id\": \(record.key), \"values\": {"
        for (i, property) in entity.properties.enumerated() {
            if i > 0 { line += ", " }
            let value = i < record.values.count ? record.values[i] : .null
            line += ToolJSON.quote(property.name) + ": "
            if let external = record.external[i] {
                line +=
                    "{\"$external\": {\"file\": \(ToolJSON.quote(external.fileName)), "
                    + "\"bytes\": \(external.byteCount)}}"
            } else {
                line += ToolJSON.text(value, destination: property.destination)
            }
        }
        return line + "}}"
    }

    private static func printTable(_ entity: ToolSchema.Entity, _ records: [ToolRecord], on console: Console) {
        let inherits = entity.superentity.map { " : \($0)" } ?? ""
        console.print("\(entity.name)\(inherits) (\(Text.count(records.count, "record")))")
        let header = ["id"] + entity.properties.map(\.name)
        var rows: [[String]] = [header]
        for record in records {
            var row = [String(record.key)]
            for (i, property) in entity.properties.enumerated() {
                let value = i < record.values.count ? record.values[i] : .null
                if let external = record.external[i] {
                    row.append("(external, \(external.byteCount) bytes)")
                } else {
                    row.append(cell(value, destination: property.destination))
                }
            }
            rows.append(row)
        }
        var widths = [Int](repeating: 0, count: header.count)
        for row in rows {
            for (i, text) in row.enumerated() { widths[i] = max(widths[i], text.count) }
        }
        for row in rows {
            let line = row.enumerated().map { i, text in
                i == row.count - 1 ? text : Text.padRight(text, widths[i])
            }.joined(separator: "  ")
            console.print(line)
        }
    }

    /// A value for a table cell: strings and tagged values without their JSON wrapping,
    /// cut to `cellWidth` characters.
    private static func cell(_ value: SnapshotValue, destination: String?) -> String {
        var text: String
        switch value {
        case .string(let s):
            text = String(ToolJSON.quote(s).dropFirst().dropLast())
        case .date, .uuid, .url, .decimal, .uint, .data:
            let json = ToolJSON.text(value)
            // {"$tag": inner} -> inner, unquoted if a string
            if let colon = json.firstIndex(of: ":") {
                var inner = json[json.index(after: colon)...].dropLast().trimmingCharacters(in: .whitespaces)
                if inner.hasPrefix("\""), inner.hasSuffix("\""), inner.count >= 2 {
                    inner = String(inner.dropFirst().dropLast())
                }
                text = inner
            } else {
                text = json
            }
        default:
            text = ToolJSON.text(value, destination: destination)
        }
        if text.count > cellWidth { text = String(text.prefix(cellWidth - 1)) + "…" }
        return text
    }
}
