import Foundation
import Stowage
import StowageInspection

/// The commands: each reads with the library's tooling (Sources/Stowage/Tooling), then
/// formats and prints.
struct Commands {
    let console: Console

    func run(_ invocation: Invocation) -> ExitStatus {
        do {
            switch invocation.command {
            case "inspect": return try inspect(invocation)
            case "verify": return try verify(invocation)
            case "dump": return try dump(invocation)
            case "history": return try history(invocation)
            case "recover": return try recover(invocation)
            case "compact": return try compact(invocation)
            default: return .usage
            }
        } catch let failure as ToolFailure {
            console.error("stowage: error: \(failure.message)")
            return .failed
        } catch let usage as UsageError {
            console.error("stowage: error: \(usage.message)")
            console.error(
                "Run 'stowage \(usage.command ?? "--help")\(usage.command == nil ? "" : " --help")' for usage.")
            return .usage
        } catch {
            console.error("stowage: error: \(error)")
            return .failed
        }
    }

    private func formatName(_ store: ToolStore) -> String {
        switch store.format {
        case .log: "Stowage log store, format version \(store.formatVersion)"
        case .json: "Stowage JSON store (stowage-json), version \(store.formatVersion)"
        }
    }

    private func damageText(_ damage: ToolProblem, _ store: ToolStore) -> String {
        var text = damage.offset.map { " at offset \($0): " } ?? ": "
        if let line = store.damageLine {
            text = " at line \(line.line), column \(line.column) (offset \(damage.offset ?? 0)): "
        }
        return text + damage.message
    }

    // MARK: inspect

    func inspect(_ invocation: Invocation) throws -> ExitStatus {
        var width = 64
        if let text = invocation.options["--width"] {
            guard let value = Int(text), (8...1000).contains(value) else {
                throw UsageError(message: "--width takes a number from 8 to 1000", command: "inspect")
            }
            width = value
        }
        let store = try ToolStore.read(path: invocation.path)
        if invocation.has("--json") {
            console.print(inspectJSON(store, mapWidth: invocation.has("--map") ? width : nil).rendered())
        } else {
            inspectText(store, mapWidth: invocation.has("--map") ? width : nil)
        }
        return store.damage == nil ? .ok : .failed
    }

    private func inspectText(_ store: ToolStore, mapWidth: Int?) {
        let c = console
        c.print(store.path)
        c.print("  format:            \(formatName(store))")
        c.print("  file size:         \(Text.count(Int(store.fileSize), "byte"))")
        if let identifier = store.storeIdentifier { c.print("  store identifier:  \(identifier)") }
        if let created = store.createdAt { c.print("  created:           \(ToolJSON.time(milliseconds: created))") }
        if let log = store.log, store.schema != nil {
            c.print("  generation:        \(log.generation)")
        }
        if let schema = store.schema {
            c.print()
            c.print("schema version \(schema.version): \(Text.count(schema.entities.count, "entity", "entities"))")
            for entity in schema.entities {
                c.print("  \(entity.name)")
                for property in entity.properties { c.print("    \(Text.property(property))") }
                c.print("    unique: \(Text.groups(entity.unique))")
                c.print("    indexes: \(Text.groups(entity.indexes))")
            }
            c.print()
            c.print("records: \(store.recordCount) live")
            let nameWidth = schema.entities.map(\.name.count).max() ?? 0
            for entity in schema.entities {
                c.print(
                    "  \(Text.padRight(entity.name + ":", nameWidth + 1)) \(store.records[entity.name]?.count ?? 0)")
            }
            c.print("  next primary key: \(store.nextPrimaryKey)")
        }
        if let log = store.log {
            c.print()
            c.print("log")
            let commits = log.commits
            if let first = commits.first, let last = commits.last {
                let range =
                    first.transactionID == last.transactionID
                    ? "transaction \(last.transactionID)"
                    : "transactions \(first.transactionID) to \(last.transactionID)"
                c.print("  commits:           \(commits.count) (\(range))")
                c.print(
                    "  last commit:       transaction \(last.transactionID) at "
                        + "\(ToolJSON.time(milliseconds: last.timestamp)), "
                        + (last.author.map { "author \($0)" } ?? "no author"))
            } else {
                c.print("  commits:           0")
            }
            if store.formatVersion >= 4 {
                let blocks = commits.reduce(0) { $0 + $1.blocks }
                let compressed = commits.reduce(0) { $0 + $1.compressedBlocks }
                // Version 5 compresses a block's writes one by one: count the blocks that hold any.
                let what = store.formatVersion >= 5 ? "with LZ4-compressed writes" : "LZ4-compressed"
                c.print("  blocks:            \(blocks) (\(compressed) \(what))")
            }
            c.print("  checkpoints:       \(log.checkpoints)")
            if let last = log.lastCheckpoint {
                c.print(
                    "  last checkpoint:   transaction \(last.transactionID) at offset \(last.offset) "
                        + "(\(Text.count(Int(last.recordLength), "byte"))), "
                        + (last.commitsAfter == 0
                            ? "the last record" : "\(Text.count(last.commitsAfter, "commit")) after it"))
            }
            let valid = log.validLength
            c.print(
                "  live bytes:        \(log.liveBytes) (\(Text.percent(log.liveBytes, of: valid)) of the valid prefix)")
            c.print(
                "  dead bytes:        \(log.deadBytes) (\(Text.percent(log.deadBytes, of: valid))), "
                    + "\(Text.count(log.deadVersions, "superseded version or delete", "superseded versions and deletes"))"
            )
            c.print(
                "  compression:       ratio \(Text.ratio(log.payloadBytes, log.storedPayloadBytes)) "
                    + "(\(log.payloadBytes) payload bytes stored in \(log.storedPayloadBytes))")
        }
        c.print()
        if let damage = store.damage {
            let after = store.fileSize - (store.log?.validLength ?? 0)
            var line = "status: damaged\(damageText(damage, store))"
            if store.format == .log { line += " (\(Text.count(Int(after), "byte")) from there to the end)" }
            c.print(line)
        } else if store.problems.isEmpty {
            c.print("status: readable to the end; run 'stowage verify' for a full check")
        } else {
            c.print(
                "status: readable to the end, with \(Text.count(store.problems.count, "problem")) in records; "
                    + "run 'stowage verify'")
        }
        if let width = mapWidth, let log = store.log {
            c.print()
            let strip = map(log.regions, fileSize: store.fileSize, width: width)
            c.print("map: \(strip.count) columns of \(strip.bytesPerColumn) bytes")
            c.print(
                "  H header  # live  . dead  C checkpoint  ! damaged"
                    + (log.regions.contains { $0.kind == .reserved } ? "  _ reserved zeros" : ""))
            c.print("  " + strip.text)
        } else if mapWidth != nil {
            c.print()
            c.print("map: a JSON store is one document, rewritten whole by every save; it has no regions")
        }
    }

    private func inspectJSON(_ store: ToolStore, mapWidth: Int?) -> JSON {
        var members: [(String, JSON)] = [
            ("path", .string(store.path)),
            ("format", .string(store.format.rawValue)),
            ("formatVersion", .int(store.formatVersion)),
            ("fileSize", .int(store.fileSize)),
            ("storeIdentifier", .optional(store.storeIdentifier)),
            ("createdAt", store.createdAt.map { .string(ToolJSON.time(milliseconds: $0)) } ?? .null),
        ]
        if let schema = store.schema {
            members.append(("schema", schemaJSON(schema)))
            members.append(
                (
                    "records",
                    .object(schema.entities.map { ($0.name, .int(store.records[$0.name]?.count ?? 0)) })
                ))
            members.append(("recordCount", .int(store.recordCount)))
            members.append(("nextPrimaryKey", .int(store.nextPrimaryKey)))
        } else {
            members.append(("schema", .null))
        }
        if let log = store.log {
            var logMembers: [(String, JSON)] = [
                ("generation", .int(Int64(bitPattern: log.generation))),
                ("validLength", .int(log.validLength)),
                ("commits", .int(log.commits.count)),
                (
                    "lastCommit",
                    log.commits.last.map {
                        .object([
                            ("transactionID", .int(Int64(bitPattern: $0.transactionID))),
                            ("time", .string(ToolJSON.time(milliseconds: $0.timestamp))),
                            ("author", .optional($0.author)),
                        ])
                    } ?? .null
                ),
            ]
            if store.formatVersion >= 4 {
                logMembers.append(("blocks", .int(Int64(log.commits.reduce(0) { $0 + $1.blocks }))))
                logMembers.append(
                    ("compressedBlocks", .int(Int64(log.commits.reduce(0) { $0 + $1.compressedBlocks }))))
            }
            logMembers += [
                ("checkpoints", .int(log.checkpoints)),
                (
                    "lastCheckpoint",
                    log.lastCheckpoint.map {
                        .object([
                            ("offset", .int($0.offset)),
                            ("length", .int($0.recordLength)),
                            ("transactionID", .int(Int64(bitPattern: $0.transactionID))),
                            ("nextPrimaryKey", .int($0.nextPrimaryKey)),
                            ("records", .int($0.records)),
                            ("commitsAfter", .int($0.commitsAfter)),
                        ])
                    } ?? .null
                ),
                ("liveBytes", .int(log.liveBytes)),
                ("deadBytes", .int(log.deadBytes)),
                ("deadVersions", .int(log.deadVersions)),
                ("payloadBytes", .int(log.payloadBytes)),
                ("storedPayloadBytes", .int(log.storedPayloadBytes)),
                (
                    "compressionRatio",
                    .raw(Text.ratio(log.payloadBytes, log.storedPayloadBytes))
                ),
            ]
            if let width = mapWidth {
                let strip = map(log.regions, fileSize: store.fileSize, width: width)
                logMembers.append(("map", .string(strip.text)))
                logMembers.append(("mapBytesPerColumn", .int(strip.bytesPerColumn)))
            }
            members.append(("log", .object(logMembers)))
        }
        members.append(("damage", problemJSON(store.damage, store)))
        members.append(("problems", .int(store.problems.count)))
        return .object(members)
    }

    private func schemaJSON(_ schema: ToolSchema) -> JSON {
        .object([
            ("version", .string(schema.version)),
            (
                "entities",
                .array(
                    schema.entities.map { entity in
                        .object([
                            ("name", .string(entity.name)),
                            (
                                "properties",
                                .array(
                                    entity.properties.map { p in
                                        var members: [(String, JSON)] = [
                                            ("name", .string(p.name)), ("type", .string(p.typeName)),
                                            ("optional", .bool(p.isOptional)),
                                        ]
                                        if p.isExternal { members.append(("externalStorage", .bool(true))) }
                                        if let destination = p.destination {
                                            members.append(("destination", .string(destination)))
                                            members.append(("toMany", .bool(p.isToMany)))
                                        }
                                        return .object(members)
                                    })
                            ),
                            ("unique", .array(entity.unique.map { .array($0.map(JSON.string)) })),
                            ("indexes", .array(entity.indexes.map { .array($0.map(JSON.string)) })),
                        ])
                    })
            ),
        ])
    }

    private func problemJSON(_ problem: ToolProblem?, _ store: ToolStore) -> JSON {
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

    /// The log as a strip: each column is the kind that covers most of its bytes.
    private func map(_ regions: [ToolRegion], fileSize: Int64, width: Int) -> (
        text: String, count: Int, bytesPerColumn: Int64
    ) {
        guard fileSize > 0 else { return ("", 0, 0) }
        let perColumn = max(1, (fileSize + Int64(width) - 1) / Int64(width))
        let columns = Int((fileSize + perColumn - 1) / perColumn)
        let kinds: [ToolRegion.Kind] = [.damaged, .checkpoint, .header, .live, .dead, .reserved]
        let glyph: [ToolRegion.Kind: Character] = [
            .header: "H", .live: "#", .dead: ".", .checkpoint: "C", .damaged: "!", .reserved: "_",
        ]
        var text = ""
        var r = 0
        for column in 0..<columns {
            let start = Int64(column) * perColumn
            let end = min(fileSize, start + perColumn)
            var bytes: [ToolRegion.Kind: Int64] = [:]
            while r < regions.count, regions[r].offset + regions[r].length <= start { r += 1 }
            var i = r
            while i < regions.count, regions[i].offset < end {
                let region = regions[i]
                let overlap = min(end, region.offset + region.length) - max(start, region.offset)
                if overlap > 0 {
                    if region.kind == .live, region.deadLength > 0, region.length > 0 {
                        let dead = overlap * region.deadLength / region.length
                        bytes[.dead, default: 0] += dead
                        bytes[.live, default: 0] += overlap - dead
                    } else {
                        bytes[region.kind, default: 0] += overlap
                    }
                }
                i += 1
            }
            let best = kinds.max { a, b in
                let x = bytes[a] ?? 0
                let y = bytes[b] ?? 0
                // On a tie the kind earlier in `kinds` wins.
                return x != y ? x < y : (kinds.firstIndex(of: a) ?? 0) > (kinds.firstIndex(of: b) ?? 0)
            }
            text.append(best.flatMap { glyph[$0] } ?? " ")
        }
        return (text, columns, perColumn)
    }

    // MARK: verify

    func verify(_ invocation: Invocation) throws -> ExitStatus {
        let store = try ToolStore.read(path: invocation.path)
        let problems = ToolVerifier.problems(of: store)
        let healthy = problems.isEmpty
        if invocation.has("--json") {
            var members: [(String, JSON)] = [
                ("path", .string(store.path)),
                ("format", .string(store.format.rawValue)),
                ("formatVersion", .int(store.formatVersion)),
                ("fileSize", .int(store.fileSize)),
                ("healthy", .bool(healthy)),
                ("firstBadOffset", problems.first?.offset.map { JSON.int($0) } ?? .null),
            ]
            if let log = store.log {
                members.append(("validLength", .int(log.validLength)))
                members.append(("commits", .int(log.commits.count)))
                members.append(("checkpoints", .int(log.checkpoints)))
            }
            members.append(("records", .int(store.recordCount)))
            members.append(("problems", .array(problems.map { problemJSON($0, store) })))
            console.print(JSON.object(members).rendered())
            return healthy ? .ok : .failed
        }
        let c = console
        if healthy {
            c.print("\(store.path): healthy (\(formatName(store)), \(Text.count(Int(store.fileSize), "byte")))")
        } else if let first = problems.first {
            c.print("\(store.path): damaged\(damageText(first, store))")
        }
        if let log = store.log {
            let writes = log.commits.reduce(0) { $0 + $1.inserts + $1.updates }
            // Version 3 has checkpoints: they are named whenever the version has them.
            let hasCheckpoints = store.formatVersion >= 3 || log.checkpoints > 0
            let records =
                hasCheckpoints
                ? "the header, \(Text.count(log.commits.count, "commit")) and "
                    + "\(Text.count(log.checkpoints, "checkpoint"))"
                : "the header and \(Text.count(log.commits.count, "commit"))"
            if let damage = store.damage {
                c.print(
                    "  records: \(records) are valid up to offset "
                        + "\(log.validLength); at \(damage.offset ?? 0): \(damage.message)")
                if log.validLength > Int64(32) && store.schema != nil {
                    c.print(
                        "  'stowage recover' would keep the first \(log.validLength) bytes and drop "
                            + "\(store.fileSize - log.validLength)")
                }
            } else {
                c.print("  records: \(records), every checksum and length valid to the end")
            }
            c.print("  snapshots: \(Text.count(writes, "write")) checked against the schema")
            if store.formatVersion >= 4 {
                let blocks = log.commits.reduce(0) { $0 + $1.blocks }
                c.print(
                    "  blocks: \(blocks), each one's lengths, checksum, LZ4 bytes and writes checked"
                        + (store.damage == nil ? "" : " before the damage"))
            }
            if hasCheckpoints {
                let checked =
                    store.formatVersion >= 4
                    ? "transaction, next primary key, record versions, live keys and their locations, index entries"
                    : "transaction, next primary key, live keys, index entries"
                c.print(
                    log.checkpoints == 0
                        ? "  checkpoints: none" + (store.damage == nil ? " in the file" : " before the damage")
                        : "  checkpoints: \(log.checkpoints), \(log.checkpoints == 1 ? "" : "each ")checked against "
                            + "the records the commits before it leave (\(checked))")
            }
            let externalValues = (store.records.values.joined()).reduce(0) { $0 + $1.external.count }
            if externalValues > 0 {
                c.print(
                    "  external values: \(Text.count(externalValues, "file")) in \(store.path).blobs checked "
                        + "for length and CRC32C")
            }
        } else if store.damage == nil {
            c.print("  document: parses; every member, record and value checked against its schema")
        }
        if let schema = store.schema {
            var references = 0
            for entity in schema.entities {
                for record in store.records[entity.name] ?? [] {
                    for (property, value) in zip(entity.properties, record.values) where property.isRelationship {
                        if case .array(let items) = value {
                            references += items.count
                        } else if !value.isNull {
                            references += 1
                        }
                    }
                }
            }
            let unique = schema.entities.reduce(0) { $0 + $1.unique.count }
            let indexes = schema.entities.reduce(0) { $0 + $1.indexes.count }
            c.print(
                "  live records: \(store.recordCount), with \(Text.count(references, "relationship reference"))")
            let persisted =
                store.format == .log && store.formatVersion >= 3
                ? "" : " (the file persists no index)"
            c.print(
                "  indexes: \(Text.count(unique, "uniqueness constraint")) and \(Text.count(indexes, "index", "indexes")) "
                    + "checked over the live records\(persisted)")
        }
        if !healthy {
            c.print("\(Text.count(problems.count, "problem")):")
            for problem in problems.prefix(50) {
                c.print("  " + (problem.offset.map { "offset \($0): " } ?? "") + problem.message)
            }
            if problems.count > 50 { c.print("  … and \(problems.count - 50) more (--json lists them all)") }
        }
        return healthy ? .ok : .failed
    }

    // MARK: dump

    func dump(_ invocation: Invocation) throws -> ExitStatus {
        let store = try ToolStore.read(path: invocation.path)
        guard let schema = store.schema else {
            if let damage = store.damage {
                console.error("stowage: error: \(store.path) is damaged\(damageText(damage, store))")
            }
            return .failed
        }
        var entities = schema.entities
        if let name = invocation.options["--entity"] {
            guard let entity = schema.entity(named: name) else {
                throw UsageError(
                    message: "the store has no entity '\(name)' (it has "
                        + "\(schema.entities.map(\.name).joined(separator: ", ")))",
                    command: "dump")
            }
            entities = [entity]
        }
        if invocation.options["--format"] == "table" {
            for (n, entity) in entities.enumerated() {
                if n > 0 { console.print() }
                table(entity, store.records[entity.name] ?? [])
            }
        } else {
            for entity in entities {
                for record in store.records[entity.name] ?? [] {
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
                    console.print(line + "}}")
                }
            }
        }
        if let damage = store.damage {
            console.error(
                "stowage: \(store.path) is damaged\(damageText(damage, store)); "
                    + "the records above are those of the valid part before it")
            return .failed
        }
        return .ok
    }

    private func table(_ entity: ToolSchema.Entity, _ records: [ToolRecord]) {
        console.print("\(entity.name) (\(Text.count(records.count, "record")))")
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
    /// cut to 40 characters.
    private func cell(_ value: SnapshotValue, destination: String?) -> String {
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
        if text.count > 40 { text = String(text.prefix(39)) + "…" }
        return text
    }

    // MARK: history

    func history(_ invocation: Invocation) throws -> ExitStatus {
        let store = try ToolStore.read(path: invocation.path)
        let commits = store.log?.commits ?? []
        if invocation.has("--json") {
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
                if store.formatVersion >= 4 {
                    members.append(("blocks", .int(commit.blocks)))
                    members.append(("compressedBlocks", .int(commit.compressedBlocks)))
                }
                return .object(members)
            }
            console.print(
                JSON.object([
                    ("path", .string(store.path)),
                    ("format", .string(store.format.rawValue)),
                    ("commits", .array(list)),
                    ("damage", problemJSON(store.damage, store)),
                ]).rendered())
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
            c.print("damaged\(damageText(damage, store)); no commit after it can be read")
            return .failed
        }
        return .ok
    }

    // MARK: recover

    func recover(_ invocation: Invocation) throws -> ExitStatus {
        let path = invocation.path
        let result = try ToolMaintenance.recover(path: path, backup: invocation.options["--backup"])
        let c = console
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

    // MARK: compact

    func compact(_ invocation: Invocation) throws -> ExitStatus {
        let path = invocation.path
        let terminal = console.isTerminal
        var lastDrawn = -1
        let result = try ToolMaintenance.compact(path: path) { done, total in
            guard terminal else { return }
            let width = 30
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
