import Stowage
import StowageInspection

/// `stowage inspect`: what a store file holds (format, schema, record counts) and, for a
/// log, how its bytes are spent, as text or one JSON object, optionally with a map.
struct Inspect: StowageCommand {
    static let spec = CommandSpec(
        name: "inspect",
        options: [
            .json,
            OptionSpec(
                "--map",
                help: [
                    "Also draw the log as a strip, one character per stretch of the",
                    "file: H header, # live, . dead, C checkpoint, ! damaged,",
                    "_ zeros a store reserved after its last record",
                ]),
            OptionSpec("--width", .any(placeholder: "N"), help: ["The strip's width in characters (default 64)"]),
            OptionSpec(
                "--svg", .any(placeholder: "FILE"),
                help: [
                    "Also draw the log as an SVG picture in FILE: the file as one",
                    "strip, each region at its share of the bytes, with offsets",
                    "and each kind's bytes (the store itself is not written)",
                ]),
        ])

    static let help = CommandHelp(
        abstract: "The format, the schema, record counts, and the log's space use",
        overview: "show what a store file holds",
        usage: "stowage inspect [--json] [--map [--width N]] [--svg FILE] PATH",
        discussion: """
            Prints the format and its version, the file size, the store identifier, the schema
            (version; entities with their properties and types, relationships, uniqueness
            constraints and indexes), the live records per entity and the next primary key, and
            how many transactions the history holds (as ModelContext.fetchHistory reads it).
            For a log store also: the commits (the last one's time and author), in format
            versions 4 and 5 the blocks that hold the commits' writes (and how many hold LZ4
            bytes: in version 4 a block is compressed whole, in version 5 each write on its own),
            the checkpoints (the last one's offset and the transaction it covers), live and dead
            bytes, and the compression ratio. Reads only; the file is not changed.

            Live and dead bytes (log store): a commit record none of whose writes is still the
            current version of a live record is dead in full, frame included. A commit that
            still holds a live version is live, except for the share of its bytes (rounded
            down) that its superseded writes and delete entries take up in its uncompressed
            payload (in versions 4 and 5, with its blocks decompressed). The last checkpoint record
            (format versions 3 to 5) is live, every earlier one dead. The file header and the
            header record are live. Bytes after the valid prefix (a torn or damaged tail) are
            neither: they are reported as damaged. Compaction keeps about the live bytes. The
            compression ratio is the records' payload bytes (versions 4 and 5: with the commits'
            blocks decompressed) over the bytes they take in the file.
            """,
        exitNotes: """
              inspect exits 1 when the file is damaged (what it prints then describes the
              valid part before the damage).
            """)

    /// The widths `--width` accepts; the usage error names this range.
    static let widths = 8...1000

    let path: String
    let json: Bool
    /// The map's width when `--map` is given.
    let mapWidth: Int?
    /// Where `--svg` writes the picture of the log.
    let svgPath: String?

    init(_ invocation: Invocation) throws(UsageError) {
        var width = 64
        // A bad --width is refused even without --map, as it always was.
        if let text = invocation.options["--width"] {
            guard let value = Int(text), Self.widths.contains(value) else {
                throw UsageError(
                    message: "--width takes a number from \(Self.widths.lowerBound) to \(Self.widths.upperBound)",
                    command: "inspect")
            }
            width = value
        }
        path = invocation.path
        json = invocation.has("--json")
        mapWidth = invocation.has("--map") ? width : nil
        svgPath = invocation.options["--svg"]
    }

    func run(console: Console) throws -> ExitStatus {
        let store = try ToolStore.read(path: path)
        if json {
            console.print(Self.jsonObject(store, mapWidth: mapWidth).rendered())
        } else {
            Self.printText(store, mapWidth: mapWidth, on: console)
        }
        if let svgPath {
            guard let log = store.log else {
                console.error(
                    "stowage inspect: \(svgPath) not written: a JSON store is one document, rewritten whole by "
                        + "every save; it has no regions to draw")
                return .failed
            }
            do {
                try Data(LogMapSVG.render(store, log: log).utf8).write(to: URL(fileURLWithPath: svgPath))
            } catch {
                console.error("stowage inspect: cannot write \(svgPath): \(error)")
                return .failed
            }
        }
        // The text describes the valid part before any damage; the status says there was some.
        return store.damage == nil ? .ok : .failed
    }

    private static func printText(_ store: ToolStore, mapWidth: Int?, on c: Console) {
        c.print(store.path)
        c.print("  format:            \(StoreReport.formatName(store))")
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
                // A subentity's first properties are its superentity's.
                c.print("  \(entity.name)" + (entity.superentity.map { " : \($0)" } ?? ""))
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
        c.print()
        c.print("history: " + Self.historyText(store))
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
            if store.logVersion?.locatesRecords == true {
                let blocks = commits.reduce(0) { $0 + $1.blocks }
                let compressed = commits.reduce(0) { $0 + $1.compressedBlocks }
                // Version 5 compresses a block's writes one by one: count the blocks that hold any.
                let what =
                    store.logVersion?.compressesEachWrite == true ? "with LZ4-compressed writes" : "LZ4-compressed"
                c.print("  blocks:            \(blocks) (\(compressed) \(what))")
            }
            if !log.layouts.isEmpty {
                c.print(
                    "  layout records:    \(log.layouts.count) (the last at offset \(log.layouts.last ?? 0)); "
                        + "records before it are read in the schema above until saved or compacted")
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
            var line = "status: damaged\(StoreReport.damageText(damage, store))"
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
            let strip = LogMap(log.regions, fileSize: store.fileSize, width: width)
            c.print("map: \(strip.columns) columns of \(strip.bytesPerColumn) bytes")
            c.print(
                "  H header  # live  . dead  C checkpoint  ! damaged"
                    + (log.regions.contains { $0.kind == .reserved } ? "  _ reserved zeros" : ""))
            c.print("  " + strip.text)
        } else if mapWidth != nil {
            c.print()
            c.print("map: a JSON store is one document, rewritten whole by every save; it has no regions")
        }
    }

    /// The history as `fetchHistory` reads it: how many transactions, and where they are kept.
    private static func historyText(_ store: ToolStore) -> String {
        guard let history = store.history else {
            return store.format == .json
                ? "none kept (the document was not opened with JSONStoreConfiguration.keepsHistory)"
                : "does not read (see the problems)"
        }
        var text = Text.count(history.count, "transaction")
        if let last = history.last {
            text += " (the last, \(last.transactionID), at \(ToolJSON.time(milliseconds: last.timestamp)))"
        }
        if let log = store.log, log.historyRecords > 0 {
            text +=
                "; \(Text.count(log.historyRecords, "history record")) keep what compaction rewrote and deleteHistory removed"
        }
        return text
    }

    private static func jsonObject(_ store: ToolStore, mapWidth: Int?) -> JSON {
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
        members.append(("historyTransactions", store.history.map { .int($0.count) } ?? .null))
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
            if store.logVersion?.locatesRecords == true {
                logMembers.append(("blocks", .int(Int64(log.commits.reduce(0) { $0 + $1.blocks }))))
                logMembers.append(
                    ("compressedBlocks", .int(Int64(log.commits.reduce(0) { $0 + $1.compressedBlocks }))))
            }
            if !log.layouts.isEmpty { logMembers.append(("layoutRecords", .int(log.layouts.count))) }
            if log.historyRecords > 0 { logMembers.append(("historyRecords", .int(log.historyRecords))) }
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
                let strip = LogMap(log.regions, fileSize: store.fileSize, width: width)
                logMembers.append(("map", .string(strip.text)))
                logMembers.append(("mapBytesPerColumn", .int(strip.bytesPerColumn)))
            }
            members.append(("log", .object(logMembers)))
        }
        members.append(("damage", StoreReport.problemJSON(store.damage, store)))
        members.append(("problems", .int(store.problems.count)))
        return .object(members)
    }

    private static func schemaJSON(_ schema: ToolSchema) -> JSON {
        .object([
            ("version", .string(schema.version)),
            (
                "entities",
                .array(
                    schema.entities.map { entity in
                        .object(
                            [
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
                            ] + (entity.superentity.map { [("superentity", JSON.string($0))] } ?? []))
                    })
            ),
        ])
    }
}
