import Foundation
import Stowage

/// How the schema lies in PostgreSQL: a table per entity, named as the entity, with a
/// `pk bigint` primary key (from one sequence, `stowage_pk`, for every table) and a column
/// per attribute and per to-one relationship, each named as its property; a table per
/// to-many relationship, named `Entity.property`, with `(owner, position, target)` rows,
/// so that the order of the models in the relationship is kept.
///
/// The entities of a class hierarchy share one table, named as its root entity, with an
/// `"@entity"` column holding each row's own entity, and a subentity's own properties in
/// columns named `"Entity.property"` (`Formats/postgres.md`, "A table per class hierarchy").
struct PostgresTables: Sendable {
    let entities: [String: PostgresEntityTable]
    /// The hierarchies' tables, by their root entity's name.
    let hierarchies: [String: PostgresHierarchyTable]

    init(_ schema: Schema) throws {
        let layout = PostgresLayout(schema)
        var entities: [String: PostgresEntityTable] = [:]
        for entity in schema.entities {
            entities[entity.name] = PostgresEntityTable(entity, layout: layout)
        }
        var hierarchies: [String: PostgresHierarchyTable] = [:]
        for (root, members) in layout.members {
            let tables = members.compactMap { entities[$0] }
            hierarchies[root] = PostgresHierarchyTable(root: root, members: tables, layout: layout)
        }
        self.entities = entities
        self.hierarchies = hierarchies
    }

    /// Whether the schema has a class hierarchy (then the tables are of layout 3).
    var hasHierarchy: Bool { !hierarchies.isEmpty }

    /// The SQL tables of the entities (a hierarchy's once), sorted.
    var tableNames: [String] { Set(entities.values.map(\.sqlName)).sorted() }

    /// The statements that create every table and index, each idempotent.
    var creationScript: [String] {
        var statements = ["CREATE SEQUENCE IF NOT EXISTS stowage_pk"]
        for table in entities.values.sorted(by: { $0.name < $1.name }) where !table.isDiscriminated {
            statements.append(table.createTable)
        }
        for hierarchy in hierarchies.values.sorted(by: { $0.root < $1.root }) {
            statements += [hierarchy.createTable, hierarchy.createEntityIndex]
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

/// The class hierarchies of a schema: which entities share a table, and which entity
/// declares each property.
struct PostgresLayout {
    let byName: [String: Schema.Entity]
    /// The root of each entity that is part of a hierarchy.
    let roots: [String: String]
    /// Each hierarchy's entities, by its root, in schema order (the root first).
    let members: [String: [String]]

    init(_ schema: Schema) {
        let byName = Dictionary(schema.entities.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        self.byName = byName
        let parents = Set(schema.entities.compactMap(\.superentityName))
        var roots: [String: String] = [:]
        var members: [String: [String]] = [:]
        for entity in schema.entities where entity.superentityName != nil || parents.contains(entity.name) {
            var root = entity.name
            var seen: Set<String> = [root]
            while let parent = byName[root]?.superentityName, byName[parent] != nil, seen.insert(parent).inserted {
                root = parent
            }
            roots[entity.name] = root
        }
        for entity in schema.entities {
            guard let root = roots[entity.name] else { continue }
            if entity.name == root {
                members[root, default: []].insert(entity.name, at: 0)
            } else {
                members[root, default: []].append(entity.name)
            }
        }
        self.roots = roots
        self.members = members
    }

    /// The entity's ancestors, nearest first.
    func ancestors(of entity: Schema.Entity) -> [Schema.Entity] {
        var chain: [Schema.Entity] = []
        var seen: Set<String> = [entity.name]
        var current = entity.superentityName.flatMap { byName[$0] }
        while let ancestor = current, seen.insert(ancestor.name).inserted {
            chain.append(ancestor)
            current = ancestor.superentityName.flatMap { byName[$0] }
        }
        return chain
    }

    /// `entity` and the entities that inherit from it, in schema order.
    func family(of entity: String) -> [String] {
        guard let root = roots[entity], let all = members[root] else { return [entity] }
        return all.filter { name in
            name == entity || byName[name].map { ancestors(of: $0).contains { $0.name == entity } } == true
        }
    }

    /// The entity that declares `entity`'s property at `index` (itself, or the farthest
    /// ancestor that has the property at the same position).
    func declaring(_ entity: Schema.Entity, _ index: Int) -> Schema.Entity {
        guard index < entity.properties.count else { return entity }
        let name = entity.properties[index].name
        var declaring = entity
        for ancestor in ancestors(of: entity) {
            guard index < ancestor.properties.count, ancestor.properties[index].name == name else { break }
            declaring = ancestor
        }
        return declaring
    }
}

/// The one table of a class hierarchy: the root's columns, then each subentity's own.
struct PostgresHierarchyTable: Sendable {
    let root: String
    /// Every column of the hierarchy, once (by SQL name).
    let columns: [PostgresEntityTable.Column]
    let createTable: String

    init(root: String, members: [PostgresEntityTable], layout: PostgresLayout) {
        self.root = root
        var columns: [PostgresEntityTable.Column] = []
        var checks: [String] = []
        var uniqueness: [[String]] = []
        var nullable: Set<String> = []
        for table in members {
            for column in table.columns where column.isDeclared {
                columns.append(column)
                if table.name != root { nullable.insert(column.name) }
                // A subentity's non-optional column must hold a value in the rows of the
                // entity that declares it and of its subentities.
                if table.name != root, !column.isOptional {
                    let entities = layout.family(of: table.name).map(literal).joined(separator: ", ")
                    let constraint = quote(String("nn_\(root)_\(column.name)".prefix(63)))
                    checks.append(
                        "CONSTRAINT \(constraint) CHECK (\"@entity\" NOT IN (\(entities)) OR \(quote(column.name)) IS NOT NULL)"
                    )
                }
            }
            if table.name == root { uniqueness = table.uniqueness }
        }
        self.columns = columns
        let definitions =
            ["\"pk\" bigint PRIMARY KEY", "\"@entity\" text NOT NULL"]
            + columns.map { column in
                let notNull = column.isOptional || nullable.contains(column.name) ? "" : " NOT NULL"
                return "\(quote(column.name)) \(column.kind.sqlType)\(notNull)"
            }
            + uniqueness.compactMap { group in
                let names = group.compactMap { name in columns.first { $0.property == name }?.name }
                return names.count == group.count ? "UNIQUE (\(names.map(quote).joined(separator: ", ")))" : nil
            }
            + checks
        createTable = "CREATE TABLE IF NOT EXISTS \(quote(root)) (\(definitions.joined(separator: ", ")))"
    }

    /// The index on `"@entity"`, which a fetch or count of a subentity reads its rows from.
    var entityIndex: String { String("ix_\(root)_@entity".prefix(63)) }

    var createEntityIndex: String {
        "CREATE INDEX IF NOT EXISTS \(quote(entityIndex)) ON \(quote(root)) (\"@entity\")"
    }
}

/// `text` as an SQL string literal.
func literal(_ text: String) -> String {
    "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
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

/// One entity's table: its own, or, for an entity of a class hierarchy, its view of the
/// hierarchy's table (``sqlName``), whose columns for the entity's properties it maps.
struct PostgresEntityTable: Sendable {
    struct Column: Sendable {
        /// The SQL column's name: the property's, or `Entity.property` for a property a
        /// subentity declares.
        let name: String
        let index: Int
        let kind: PostgresColumnKind
        let isOptional: Bool
        /// The property's name.
        var property: String
        /// Whether the entity declares the property itself (not inherits it).
        var isDeclared: Bool = true

        init(
            name: String, index: Int, kind: PostgresColumnKind, isOptional: Bool, property: String? = nil,
            isDeclared: Bool = true
        ) {
            self.name = name
            self.index = index
            self.kind = kind
            self.isOptional = isOptional
            self.property = property ?? name
            self.isDeclared = isDeclared
        }
    }
    struct ToMany: Sendable {
        let name: String
        let index: Int
        let destination: String
        /// The join table's name.
        let table: String
        /// Whether the entity declares the relationship (and so makes its join table).
        var isDeclared: Bool = true
    }

    /// The entity's name.
    let name: String
    /// The SQL table's name: the entity's, or its hierarchy root's.
    let sqlName: String
    /// The entities of the entity's class hierarchy, root first; empty for an entity that
    /// is in none (then its table has no `"@entity"` column).
    let hierarchy: [String]
    /// The entity and the entities that inherit from it.
    let family: [String]
    /// The root of every entity of the schema that is in a class hierarchy.
    let roots: [String: String]
    let columns: [Column]
    let toMany: [ToMany]
    let propertyCount: Int
    let uniqueness: [[String]]
    /// The uniqueness constraints the entity declares itself (all of them, outside a hierarchy).
    let ownUniqueness: [[String]]
    let indices: [[String]]
    /// The `#Index` groups the entity declares itself.
    let ownIndices: [[String]]
    /// `"pk", "a", "b", …` as the selects read them, with results in binary form (see
    /// ``selectExpression(_:)``); for a hierarchy, `"pk", "@entity"` and every column of
    /// the hierarchy's table, so that every entity of the hierarchy reads the same list.
    /// After the columns, for each to-one column whose destination is in a hierarchy, the
    /// referenced row's `"@entity"`.
    let selectList: String
    /// Where each of ``columns`` is in ``selectList``'s results.
    let positions: [Int]
    /// Where the referenced row's entity of each of ``columns`` is, for a to-one column
    /// whose destination is in a hierarchy.
    let entityPositions: [Int?]
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
    /// that column as text), and the column's position in ``columns``. Never for an entity
    /// of a hierarchy: an insert that meets another entity's row must fail, not upsert it.
    let upsertRows: (sql: String, column: Int)?
    /// ``upsertRows`` for one row, as ``insertOne``.
    let upsertOne: String?

    /// Whether the table has the `"@entity"` column (the entity is in a hierarchy).
    var isDiscriminated: Bool { !hierarchy.isEmpty }

    init(_ entity: Schema.Entity, layout: PostgresLayout) {
        name = entity.name
        let root = layout.roots[entity.name]
        sqlName = root ?? entity.name
        hierarchy = root.flatMap { layout.members[$0] } ?? []
        family = layout.family(of: entity.name)
        roots = layout.roots
        var columns: [Column] = []
        var toMany: [ToMany] = []
        for property in entity.properties {
            let declaring = root == nil ? entity : layout.declaring(entity, property.index)
            let declared = declaring.name == entity.name
            if let relationship = property.relationship, !relationship.isToOneRelationship {
                toMany.append(
                    ToMany(
                        name: property.name, index: property.index, destination: relationship.destination,
                        table: "\(declaring.name).\(property.name)", isDeclared: declared))
            } else {
                let sqlName =
                    root == nil || declaring.name == root ? property.name : "\(declaring.name).\(property.name)"
                columns.append(
                    Column(
                        name: sqlName, index: property.index, kind: PostgresColumnKind(property),
                        isOptional: property.isOptional || property.isRelationship, property: property.name,
                        isDeclared: declared))
            }
        }
        self.columns = columns
        self.toMany = toMany
        propertyCount = entity.properties.count
        uniqueness = entity.uniquenessConstraints
        indices = entity.indices
        let superentity = layout.ancestors(of: entity).first
        ownUniqueness = entity.uniquenessConstraints.filter { superentity?.uniquenessConstraints.contains($0) != true }
        ownIndices = entity.indices.filter { superentity?.indices.contains($0) != true }

        // The select list: a hierarchy's entities all read every column of its table.
        var selected: [Column] = columns
        if let root, let members = layout.members[root] {
            selected = []
            for member in members {
                guard let other = layout.byName[member] else { continue }
                for property in other.properties {
                    guard property.relationship?.isToOneRelationship ?? true,
                        layout.declaring(other, property.index).name == member
                    else { continue }
                    let sqlName = member == root ? property.name : "\(member).\(property.name)"
                    selected.append(
                        Column(
                            name: sqlName, index: property.index, kind: PostgresColumnKind(property),
                            isOptional: true, property: property.name))
                }
            }
        }
        var list = ["\"pk\""] + (root == nil ? [] : ["\"@entity\""])
        var position: [String: Int] = [:]
        for column in selected {
            position[column.name] = list.count
            list.append(Self.selectExpression(column))
        }
        var entityPosition: [String: Int] = [:]
        for column in selected {
            guard case .reference(let destination) = column.kind, let target = layout.roots[destination] else {
                continue
            }
            entityPosition[column.name] = list.count
            list.append(
                "(SELECT r.\"@entity\" FROM \(quote(target)) AS r WHERE r.\"pk\" = \(quote(sqlName)).\(quote(column.name)))"
            )
        }
        selectList = list.joined(separator: ", ")
        positions = columns.map { position[$0.name] ?? 0 }
        entityPositions = columns.map { entityPosition[$0.name] }

        let discriminator = root == nil ? [] : [literal(entity.name)]
        let names = (["\"pk\""] + (root == nil ? [] : ["\"@entity\""]) + columns.map { quote($0.name) })
            .joined(separator: ", ")
        let kinds = [PostgresColumnKind.bigint] + columns.map(\.kind)
        let source =
            "unnest(\(kinds.enumerated().map { "$\($0 + 1)::\(Self.arrayType($1))" }.joined(separator: ", "))) "
            + "AS u(\(kinds.indices.map { "c\($0)" }.joined(separator: ", ")))"
        let values = columns.enumerated().map { Self.fromArray("u.c\($0 + 1)", $1.kind) }
        let insert =
            "INSERT INTO \(quote(sqlName)) (\(names)) "
            + "SELECT \((["u.c0"] + discriminator + values).joined(separator: ", ")) FROM \(source)"
        insertRows = insert
        updateRows =
            "UPDATE \(quote(sqlName)) AS t SET "
            + zip(columns, values).map { "\(quote($0.name)) = \($1)" }.joined(separator: ", ")
            + " FROM \(source) WHERE t.\"pk\" = u.c0"
        let placeholders = kinds.enumerated().map { PostgresValues.placeholder($0 + 1, $1) }
        insertOne =
            "INSERT INTO \(quote(sqlName)) (\(names)) "
            + "VALUES (\((placeholders.prefix(1) + discriminator + placeholders.dropFirst()).joined(separator: ", ")))"
        updateOne =
            "UPDATE \(quote(sqlName)) SET "
            + zip(columns, placeholders.dropFirst()).map { "\(quote($0.name)) = \($1)" }.joined(separator: ", ")
            + " WHERE \"pk\" = $1::bigint"
        let constraints = entity.uniquenessConstraints
        if root == nil, constraints.count == 1, constraints[0].count == 1,
            let position = columns.firstIndex(where: { $0.property == constraints[0][0] })
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

    /// Whether `entity` is this table's entity or in its hierarchy: a row of this SQL
    /// table may be of it.
    func shares(_ entity: String) -> Bool {
        entity == name || hierarchy.contains(entity)
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

    /// The column of the property called `name`.
    func column(named name: String) -> Column? { columns.first { $0.property == name } }
    func column(at index: Int) -> Column? { columns.first { $0.index == index } }

    var createTable: String {
        let definitions =
            ["\"pk\" bigint PRIMARY KEY"]
            + columns.map { "\(quote($0.name)) \($0.kind.sqlType)\($0.isOptional ? "" : " NOT NULL")" }
            + uniqueness.map { "UNIQUE (\($0.map(quote).joined(separator: ", ")))" }
        return "CREATE TABLE IF NOT EXISTS \(quote(name)) (\(definitions.joined(separator: ", ")))"
    }

    /// Foreign keys of the to-one columns the entity declares, checked at commit (a save
    /// may delete a record before it clears the references to it).
    func createForeignKeys(_ tables: [String: PostgresEntityTable]) -> [String] {
        columns.compactMap { column in
            guard column.isDeclared, case .reference(let destination) = column.kind,
                let target = tables[destination]?.sqlName
            else { return nil }
            let constraint = quote(String("fk_\(sqlName)_\(column.name)".prefix(63)))
            return """
                DO $$ BEGIN
                  ALTER TABLE \(quote(sqlName)) ADD CONSTRAINT \(constraint) FOREIGN KEY (\(quote(column.name)))
                    REFERENCES \(quote(target)) ("pk") ON DELETE SET NULL DEFERRABLE INITIALLY DEFERRED;
                EXCEPTION WHEN duplicate_object THEN NULL; END $$
                """
        }
    }

    func createJoinTables(_ tables: [String: PostgresEntityTable]) -> [String] {
        toMany.filter(\.isDeclared).flatMap { relationship -> [String] in
            let target =
                tables[relationship.destination].map { " REFERENCES \(quote($0.sqlName)) (\"pk\") ON DELETE CASCADE" }
                ?? ""
            return [
                """
                CREATE TABLE IF NOT EXISTS \(quote(relationship.table)) (\
                "owner" bigint NOT NULL REFERENCES \(quote(sqlName)) ("pk") ON DELETE CASCADE, \
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
    ///
    /// In a hierarchy's table, each entity makes the indexes it declares itself, and a
    /// subentity its own uniqueness constraints as unique indexes over the rows of its
    /// family (the root's are the table's `UNIQUE` constraints).
    var createIndexes: [String] {
        let groups = ownIndices.filter { !uniqueness.contains($0) }
        var statements: [String] = groups.compactMap { group in
            let columns = group.compactMap { column(named: $0) }
            guard columns.count == group.count else { return nil }
            let indexName = Self.indexName(name, group)
            let keys = columns.map { quote($0.name) + ($0.isOptional ? " ASC NULLS FIRST" : "") }
            return
                "CREATE INDEX IF NOT EXISTS \(quote(indexName)) ON \(quote(sqlName)) (\(keys.joined(separator: ", ")))"
        }
        if isDiscriminated, name != sqlName {
            statements += ownUniqueness.compactMap { group in
                let columns = group.compactMap { column(named: $0) }
                guard columns.count == group.count else { return nil }
                let indexName = String("ux_\(name)_\(group.joined(separator: "_"))".prefix(63))
                return "CREATE UNIQUE INDEX IF NOT EXISTS \(quote(indexName)) ON \(quote(sqlName)) "
                    + "(\(columns.map { quote($0.name) }.joined(separator: ", "))) "
                    + "WHERE \"@entity\" IN (\(family.map(literal).joined(separator: ", ")))"
            }
        }
        return statements
    }
}

extension PostgresEntityTable {
    /// The name of the index of `group` on `entity`'s table, cut to PostgreSQL's 63 bytes.
    static func indexName(_ entity: String, _ group: [String]) -> String {
        String("ix_\(entity)_\(group.joined(separator: "_"))".prefix(63))
    }

    /// The names of the table's `#Index` indexes (``createIndexes``).
    var indexNames: [String] {
        ownIndices.filter { !uniqueness.contains($0) }.map { Self.indexName(name, $0) }
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
        /// The entity it inherits from; absent for one that inherits from none (and in
        /// every layout 2 database).
        var superentity: String?
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
                uniqueness: entity.uniqueness, indices: entity.indices, superentity: entity.superentity)
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
                    uniqueness: entity.uniqueness, indices: entity.indices, superentity: entity.superentity)
            })
    }

    /// Whether an entity inherits from another.
    var hasHierarchy: Bool { entities.contains { $0.superentity != nil } }

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
