import Foundation
import Stowage

/// How the schema lies in PostgreSQL: a table per entity, named as the entity, with a
/// `pk bigint` primary key (from one sequence, `stowage_pk`, for every table) and a column
/// per attribute and per to-one relationship, each named as its property; a table per
/// to-many relationship, named `Entity.property`, with `(owner, position, target)` rows,
/// so that the order of the models in the relationship is kept.
struct PostgresTables: Sendable {
    let entities: [String: PostgresEntityTable]

    init(_ schema: Schema) throws {
        var entities: [String: PostgresEntityTable] = [:]
        for entity in schema.entities {
            if entity.superentityName != nil || schema.entities.contains(where: { $0.superentityName == entity.name }) {
                throw DataStoreError(
                    .unsupportedFeature,
                    "PostgresStore does not store model inheritance yet: \(entity.name) is part of a class hierarchy")
            }
            entities[entity.name] = PostgresEntityTable(entity)
        }
        self.entities = entities
    }

    /// The statements that create every table and index, each idempotent.
    var creationScript: [String] {
        var statements = ["CREATE SEQUENCE IF NOT EXISTS stowage_pk"]
        for table in entities.values.sorted(by: { $0.name < $1.name }) {
            statements.append(table.createTable)
        }
        // Foreign keys and join tables after every entity's table exists.
        for table in entities.values.sorted(by: { $0.name < $1.name }) {
            statements += table.createForeignKeys(entities)
            statements += table.createJoinTables(entities)
            statements += table.createIndexes
        }
        return statements + Self.historyScript
    }

    /// The history's sequence and table (`Formats/postgres.md`, "The history"), which
    /// layout 2 added: made with the other tables, or when a layout 1 database is opened.
    static let historyScript = [
        "CREATE SEQUENCE IF NOT EXISTS stowage_history_txn",
        """
        CREATE TABLE IF NOT EXISTS stowage_history ("txn" bigint PRIMARY KEY, "time" bigint NOT NULL, \
        "author" text, "program" text NOT NULL, "process" bigint NOT NULL, "changes" json NOT NULL)
        """,
    ]
}

/// How one stored value is kept in a column.
enum PostgresColumnKind: Sendable, Equatable {
    case text, bigint, integer, smallint, double, real, boolean, timestamp, uuid, bytea, numeric, unsigned, url, json
    /// A to-one relationship: the destination's primary key.
    case reference(String)

    /// The column's SQL type.
    var sqlType: String {
        switch self {
        case .text, .url: "text COLLATE \"C\""
        case .bigint, .reference: "bigint"
        case .integer: "integer"
        case .smallint: "smallint"
        case .double: "double precision"
        case .real: "real"
        case .boolean: "boolean"
        case .timestamp: "timestamptz"
        case .uuid: "uuid"
        case .bytea: "bytea"
        case .numeric: "numeric"
        case .unsigned: "numeric(20,0)"
        case .json: "jsonb"
        }
    }

    /// The type a bound parameter is cast to (`$1::type`).
    var castType: String {
        switch self {
        case .text, .url: "text"
        case .unsigned: "numeric"
        default: sqlType
        }
    }

    /// Whether the column holds IEEE floating-point numbers, which may be NaN.
    var isFloatingPoint: Bool { self == .double || self == .real }

    /// Whether a predicate's comparison or a sort on the column means in SQL what it means
    /// in Swift, so that it may go to the server.
    var isComparable: Bool {
        switch self {
        case .json, .bytea, .url, .reference: false
        default: true
        }
    }

    init(_ property: Schema.PropertyMetadata) {
        if let relationship = property.relationship {
            self = .reference(relationship.destination)
            return
        }
        if let check = property.caseCheck {
            switch check.leaf {
            case .string: self = .text
            case .int, .int64: self = .bigint
            case .int32: self = .integer
            case .double: self = .double
            case .float: self = .real
            case .bool: self = .boolean
            case .date: self = .timestamp
            case .uuid: self = .uuid
            case .data: self = .bytea
            case .url: self = .url
            case .decimal: self = .numeric
            }
            return
        }
        let name =
            property.typeName.hasPrefix("Optional<")
            ? String(property.typeName.dropFirst(9).dropLast()) : property.typeName
        switch name.replacingOccurrences(of: "Swift.", with: "") {
        case "Int8", "Int16", "UInt8": self = .smallint
        case "UInt16": self = .integer
        case "UInt32": self = .bigint
        case "UInt", "UInt64": self = .unsigned
        default: self = .json
        }
    }
}

/// One entity's table.
struct PostgresEntityTable: Sendable {
    struct Column: Sendable {
        let name: String
        let index: Int
        let kind: PostgresColumnKind
        let isOptional: Bool
    }
    struct ToMany: Sendable {
        let name: String
        let index: Int
        let destination: String
        /// The join table's name.
        let table: String
    }

    let name: String
    let columns: [Column]
    let toMany: [ToMany]
    let propertyCount: Int
    let uniqueness: [[String]]
    let indices: [[String]]
    /// `"pk", "a", "b", …` as the selects read them, with results in binary form (see
    /// ``selectExpression(_:)``).
    let selectList: String
    /// The statements that write rows, made once: their parameters are one array per
    /// column (`pk` first), which `unnest` spreads into rows.
    let insertRows: String
    let updateRows: String
    /// The same for one row, its values as plain parameters (`pk` first): a save of one
    /// model spends neither the client's time making array literals nor the server's
    /// spreading them.
    let insertOne: String
    let updateOne: String
    /// The insert that meets a stored row on the entity's one single-column uniqueness
    /// constraint in the statement (`ON CONFLICT … DO UPDATE`, returning each row's key and
    /// that column as text), and the column's position in ``columns``.
    let upsertRows: (sql: String, column: Int)?
    /// ``upsertRows`` for one row, as ``insertOne``.
    let upsertOne: String?

    init(_ entity: Schema.Entity) {
        name = entity.name
        var columns: [Column] = []
        var toMany: [ToMany] = []
        for property in entity.properties {
            if let relationship = property.relationship, !relationship.isToOneRelationship {
                toMany.append(
                    ToMany(
                        name: property.name, index: property.index, destination: relationship.destination,
                        table: "\(entity.name).\(property.name)"))
            } else {
                columns.append(
                    Column(
                        name: property.name, index: property.index, kind: PostgresColumnKind(property),
                        isOptional: property.isOptional || property.isRelationship))
            }
        }
        self.columns = columns
        self.toMany = toMany
        propertyCount = entity.properties.count
        uniqueness = entity.uniquenessConstraints
        indices = entity.indices
        selectList = (["\"pk\""] + columns.map { Self.selectExpression($0) }).joined(separator: ", ")
        let kinds = [PostgresColumnKind.bigint] + columns.map(\.kind)
        let source =
            "unnest(\(kinds.enumerated().map { "$\($0 + 1)::\(Self.arrayType($1))" }.joined(separator: ", "))) "
            + "AS u(\(kinds.indices.map { "c\($0)" }.joined(separator: ", ")))"
        let values = columns.enumerated().map { Self.fromArray("u.c\($0 + 1)", $1.kind) }
        let insert =
            "INSERT INTO \(quote(name)) (\((["\"pk\""] + columns.map { quote($0.name) }).joined(separator: ", "))) "
            + "SELECT \((["u.c0"] + values).joined(separator: ", ")) FROM \(source)"
        insertRows = insert
        updateRows =
            "UPDATE \(quote(name)) AS t SET "
            + zip(columns, values).map { "\(quote($0.name)) = \($1)" }.joined(separator: ", ")
            + " FROM \(source) WHERE t.\"pk\" = u.c0"
        let placeholders = kinds.enumerated().map { PostgresValues.placeholder($0 + 1, $1) }
        insertOne =
            "INSERT INTO \(quote(name)) (\((["\"pk\""] + columns.map { quote($0.name) }).joined(separator: ", "))) "
            + "VALUES (\(placeholders.joined(separator: ", ")))"
        updateOne =
            "UPDATE \(quote(name)) SET "
            + zip(columns, placeholders.dropFirst()).map { "\(quote($0.name)) = \($1)" }.joined(separator: ", ")
            + " WHERE \"pk\" = $1::bigint"
        let constraints = entity.uniquenessConstraints
        if constraints.count == 1, constraints[0].count == 1,
            let position = columns.firstIndex(where: { $0.name == constraints[0][0] })
        {
            let unique = quote(columns[position].name)
            let assignments = columns.map { "\(quote($0.name)) = EXCLUDED.\(quote($0.name))" }
            let conflict =
                " ON CONFLICT (\(unique)) DO UPDATE SET \(assignments.joined(separator: ", ")) "
                + "RETURNING \"pk\", \(unique)::text"
            upsertRows = (insert + conflict, position)
            upsertOne = insertOne + conflict
        } else {
            upsertRows = nil
            upsertOne = nil
        }
    }

    /// The array type a column's values travel in (dates as seconds since 1970).
    static func arrayType(_ kind: PostgresColumnKind) -> String {
        kind == .timestamp ? "double precision[]" : kind.castType + "[]"
    }

    /// The SQL that turns an element of ``arrayType(_:)`` into the column's value.
    static func fromArray(_ element: String, _ kind: PostgresColumnKind) -> String {
        kind == .timestamp ? "to_timestamp(\(element))" : element
    }

    /// How a select reads `column`, for results in binary form: as it is stored, except
    /// `numeric` and `jsonb` as text (their binary forms are PostgreSQL's own encodings).
    static func selectExpression(_ column: Column) -> String {
        switch column.kind {
        case .numeric, .unsigned, .json: "\(quote(column.name))::text"
        default: quote(column.name)
        }
    }

    func column(named name: String) -> Column? { columns.first { $0.name == name } }
    func column(at index: Int) -> Column? { columns.first { $0.index == index } }

    var createTable: String {
        let definitions =
            ["\"pk\" bigint PRIMARY KEY"]
            + columns.map { "\(quote($0.name)) \($0.kind.sqlType)\($0.isOptional ? "" : " NOT NULL")" }
            + uniqueness.map { "UNIQUE (\($0.map(quote).joined(separator: ", ")))" }
        return "CREATE TABLE IF NOT EXISTS \(quote(name)) (\(definitions.joined(separator: ", ")))"
    }

    /// Foreign keys of the to-one columns, checked at commit (a save may delete a record
    /// before it clears the references to it).
    func createForeignKeys(_ tables: [String: PostgresEntityTable]) -> [String] {
        columns.compactMap { column in
            guard case .reference(let destination) = column.kind, tables[destination] != nil else { return nil }
            let constraint = quote(String("fk_\(name)_\(column.name)".prefix(63)))
            return """
                DO $$ BEGIN
                  ALTER TABLE \(quote(name)) ADD CONSTRAINT \(constraint) FOREIGN KEY (\(quote(column.name)))
                    REFERENCES \(quote(destination)) ("pk") ON DELETE SET NULL DEFERRABLE INITIALLY DEFERRED;
                EXCEPTION WHEN duplicate_object THEN NULL; END $$
                """
        }
    }

    func createJoinTables(_ tables: [String: PostgresEntityTable]) -> [String] {
        toMany.flatMap { relationship -> [String] in
            let target =
                tables[relationship.destination] != nil
                ? " REFERENCES \(quote(relationship.destination)) (\"pk\") ON DELETE CASCADE" : ""
            return [
                """
                CREATE TABLE IF NOT EXISTS \(quote(relationship.table)) (\
                "owner" bigint NOT NULL REFERENCES \(quote(name)) ("pk") ON DELETE CASCADE, \
                "position" integer NOT NULL, \
                "target" bigint NOT NULL\(target), \
                PRIMARY KEY ("owner", "position"))
                """,
                "CREATE INDEX IF NOT EXISTS \(quote(String("\(relationship.table).target".prefix(63)))) "
                    + "ON \(quote(relationship.table)) (\"target\")",
            ]
        }
    }

    /// `#Index` groups as B-tree indexes (a group that is also a uniqueness constraint
    /// already has the constraint's index). An optional column's entries keep `NULL` first,
    /// the order of a sort on it (``PostgresQueryPlan``), so that the index serves the sort.
    var createIndexes: [String] {
        indices.filter { !uniqueness.contains($0) }.compactMap { group in
            let columns = group.compactMap { column(named: $0) }
            guard columns.count == group.count else { return nil }
            let indexName = Self.indexName(name, group)
            let keys = columns.map { quote($0.name) + ($0.isOptional ? " ASC NULLS FIRST" : "") }
            return "CREATE INDEX IF NOT EXISTS \(quote(indexName)) ON \(quote(name)) (\(keys.joined(separator: ", ")))"
        }
    }
}

extension PostgresEntityTable {
    /// The name of the index of `group` on `entity`'s table, cut to PostgreSQL's 63 bytes.
    static func indexName(_ entity: String, _ group: [String]) -> String {
        String("ix_\(entity)_\(group.joined(separator: "_"))".prefix(63))
    }

    /// The names of the table's `#Index` indexes (``createIndexes``).
    var indexNames: [String] {
        indices.filter { !uniqueness.contains($0) }.map { Self.indexName(name, $0) }
    }
}

/// `name` as a quoted SQL identifier.
func quote(_ name: String) -> String {
    guard name.utf8.contains(UInt8(ascii: "\"")) else { return "\"" + name + "\"" }
    return "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
}

/// The schema as `stowage_metadata` records it (JSON of Stowage's stored-schema
/// description), so that a later open, in this process or another, can tell whether the
/// tables are the container's.
struct PostgresSchemaRecord: Codable {
    struct Property: Codable {
        var name: String
        var typeName: String
        var flags: UInt8
        var destination: String?
    }
    struct Entity: Codable {
        var name: String
        var properties: [Property]
        var uniqueness: [[String]]
        var indices: [[String]]
    }
    var version: [UInt64]
    var entities: [Entity]

    init(_ schema: Schema) {
        let stored = StoredSchema(schema)
        version = stored.version
        entities = stored.entities.map { entity in
            Entity(
                name: entity.name,
                properties: entity.properties.map {
                    Property(name: $0.name, typeName: $0.typeName, flags: $0.flags, destination: $0.destination)
                },
                uniqueness: entity.uniqueness, indices: entity.indices)
        }
    }

    init?(json: String) {
        guard let decoded = try? JSONDecoder().decode(Self.self, from: Data(json.utf8)) else { return nil }
        self = decoded
    }

    var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    var stored: StoredSchema {
        StoredSchema(
            version: version,
            entities: entities.map { entity in
                StoredSchema.Entity(
                    name: entity.name,
                    properties: entity.properties.map {
                        StoredSchema.Property(
                            name: $0.name, typeName: $0.typeName, flags: $0.flags, destination: $0.destination)
                    },
                    uniqueness: entity.uniqueness, indices: entity.indices)
            })
    }

    /// The FNV-1a 64-bit hash of `text`'s UTF-8 bytes, as 16 lower-case hex digits: how
    /// `stowage_metadata`'s `replaced` names a schema.
    static func hash(_ text: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x100_0000_01b3
        }
        let digits = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }

    /// The first difference between this recorded schema and `live`, or `nil`.
    func difference(from live: PostgresSchemaRecord) -> String? {
        stored.difference(from: live.stored)
    }
}
