import Stowage
import StowageInspection

/// `stowage verify`: the full integrity check (every record, snapshot, reference, index
/// and checkpoint), reported as "healthy" or "damaged" with every problem found.
struct Verify: StowageCommand {
    static let spec = CommandSpec(name: "verify", options: [.json])

    static let help = CommandHelp(
        abstract: "A full integrity check: exit status 0 means healthy",
        overview: "check a store file's integrity",
        usage: "stowage verify [--json] PATH",
        discussion: """
            Log store: every record's framing, length and checksum (CRC32C) and every LZ4
            payload, in file order; that every commit decodes; that every snapshot written
            fits the stored schema (value count; null only where optional; the value's kind
            for String, Bool, the integer widths and their ranges, Double, Date, Data, UUID,
            URL, Decimal and arrays of them; relationships hold identifiers of their
            destination); transaction identifiers in order; keys below the commit's next
            primary key.
            JSON store: the document parses, and every member, record and value fits the
            schema it holds, as opening the store checks.
            Both: every relationship of a live record points at a live record of its
            destination (a reference left behind by the .noAction delete rule counts as
            damage), and the indexes agree with the data: every index and uniqueness group
            names properties the entity has, every indexed value encodes as an index key that
            decodes again, and no two live records share the values of a uniqueness constraint.
            Log format versions 3 and 4 also persist index entries, in checkpoint records: every
            checkpoint decodes against the stored schema and agrees with the records the
            commits before it leave (the same transaction identifier and next primary key, the
            same live keys per entity, and for each index exactly the entries computed from the
            live records, key bytes and primary keys, in ascending key order).
            Log format versions 4 and 5 keep each commit's writes in blocks: every block's header,
            lengths (in version 5 its table of writes), checksum and LZ4 bytes are checked and
            its writes decoded, and a commit record compressed as a whole is damage (a version
            4 or 5 commit is stored raw). Its
            checkpoints also count the record versions (every write and delete before them)
            and hold the key directory (where each live record is: block offset and slot);
            both must agree with what the commits before the checkpoint leave (the location of
            each live key's last write).

            Prints "healthy", or "damaged" with the first bad offset and what is wrong there,
            then every problem found. Reads only; the file is not changed.
            """,
        exitNotes: """
              verify exits 0 only when the store is healthy.
            """)

    /// The problems the text lists; --json lists them all. A badly damaged file can have
    /// thousands, and the first ones say where to look.
    static let listedProblems = 50

    let path: String
    let json: Bool

    init(_ invocation: Invocation) throws(UsageError) {
        path = invocation.path
        json = invocation.has("--json")
    }

    func run(console: Console) throws -> ExitStatus {
        let store = try ToolStore.read(path: path)
        let problems = ToolVerifier.problems(of: store)
        let healthy = problems.isEmpty
        if json {
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
            members.append(("problems", .array(problems.map { StoreReport.problemJSON($0, store) })))
            console.print(JSON.object(members).rendered())
            return healthy ? .ok : .failed
        }
        let c = console
        if healthy {
            c.print(
                "\(store.path): healthy (\(StoreReport.formatName(store)), \(Text.count(Int(store.fileSize), "byte")))")
        } else if let first = problems.first {
            c.print("\(store.path): damaged\(StoreReport.damageText(first, store))")
        }
        if let log = store.log {
            Self.printLogChecks(store, log, on: c)
        } else if store.damage == nil {
            c.print("  document: parses; every member, record and value checked against its schema")
        }
        if let schema = store.schema {
            Self.printDataChecks(store, schema, on: c)
        }
        if !healthy {
            c.print("\(Text.count(problems.count, "problem")):")
            for problem in problems.prefix(Self.listedProblems) {
                c.print("  " + (problem.offset.map { "offset \($0): " } ?? "") + problem.message)
            }
            if problems.count > Self.listedProblems {
                c.print("  … and \(problems.count - Self.listedProblems) more (--json lists them all)")
            }
        }
        return healthy ? .ok : .failed
    }

    /// What was checked in a log: its records, snapshots, blocks, checkpoints and files.
    private static func printLogChecks(_ store: ToolStore, _ log: ToolLogDetails, on c: Console) {
        let writes = log.commits.reduce(0) { $0 + $1.inserts + $1.updates }
        // Version 3 has checkpoints: they are named whenever the version has them.
        let hasCheckpoints = store.logVersion?.hasCheckpoints == true || log.checkpoints > 0
        let records =
            hasCheckpoints
            ? "the header, \(Text.count(log.commits.count, "commit"))"
                + (log.layouts.isEmpty
                    ? " "
                    : ", \(Text.count(log.layouts.count, "layout record")) (each read against the layout before it) ")
                + "and \(Text.count(log.checkpoints, "checkpoint"))"
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
        if store.logVersion?.locatesRecords == true {
            let blocks = log.commits.reduce(0) { $0 + $1.blocks }
            c.print(
                "  blocks: \(blocks), each one's lengths, checksum, LZ4 bytes and writes checked"
                    + (store.damage == nil ? "" : " before the damage"))
        }
        if hasCheckpoints {
            let checked =
                store.logVersion?.locatesRecords == true
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
    }

    /// What was checked in the live records of either format: references and indexes.
    private static func printDataChecks(_ store: ToolStore, _ schema: ToolSchema, on c: Console) {
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
        c.print("  live records: \(store.recordCount), with \(Text.count(references, "relationship reference"))")
        let persisted =
            store.logVersion?.hasCheckpoints == true
            ? "" : " (the file persists no index)"
        c.print(
            "  indexes: \(Text.count(unique, "uniqueness constraint")) and \(Text.count(indexes, "index", "indexes")) "
                + "checked over the live records\(persisted)")
    }
}
