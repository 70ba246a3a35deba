import BTree
import Foundation

/// The whole `stowage-json` document (`Formats/json.md`): rendering a table into bytes,
/// and reading bytes back into a validated table.
package enum JSONDocument {
    package static let formatName = "stowage-json"
    /// The newest version: version 2 adds the `history` member, which a document has only
    /// when its store keeps history (``JSONStoreConfiguration/keepsHistory``); a document
    /// without one is written as version 1, byte for byte as before.
    /// Version 3 adds `superentity` to the schema's entities (model inheritance); its
    /// `history` member is there when the store keeps history.
    package static let formatVersion: Int64 = 3
    /// The versions this Stowage reads.
    package static let readableVersions: ClosedRange<Int64> = 1...3

    /// The version a document of `table` is written as: 3 for a schema with model
    /// inheritance, else 2 with a history and 1 without.
    static func version(of table: SnapshotTable) -> Int64 {
        if table.schema.entities.contains(where: { $0.superentity != nil }) { return 3 }
        return table.history == nil ? 1 : 2
    }

    // MARK: Rendering

    /// The document for `table`, byte for byte as the format fixes it.
    /// - Complexity: O(size of the store).
    static func render(_ table: SnapshotTable, capacity: Int = 0) -> [UInt8] {
        let schema = table.schema
        var w = JSONWriter(capacity: capacity)
        w.beginObject()
        w.key("format")
        w.string(formatName)
        if table.history != nil {
            w.key("history")
            writeHistory(table, &w)
        }
        w.key("nextPrimaryKey")
        w.int(table.nextPrimaryKey)
        w.key("records")
        w.beginObject()
        for entity in entities(of: schema) {
            w.key(entity.name)
            w.beginObject()
            let order = entity.properties.indices.sorted {
                jsonKeyOrder(entity.properties[$0].name, entity.properties[$1].name)
            }
            // A JSON store's table holds every record itself, never a location.
            for (key, row) in table.entities[entity.name]?.rows ?? .init() {
                guard case .snapshot(let snapshot) = row else { continue }
                w.key(String(key))
                w.beginObject()
                for i in order {
                    let property = entity.properties[i]
                    w.key(property.name)
                    let value = i < snapshot.values.count ? snapshot.values[i] : .null
                    if let relationship = property.relationship {
                        writeRelationship(value, relationship, table, &w)
                    } else {
                        JSONValueCodec.write(value, to: &w)
                    }
                }
                w.endObject()
            }
            w.endObject()
        }
        w.endObject()
        w.key("schema")
        writeSchema(schema, &w)
        w.key("storeIdentifier")
        w.string(table.storeIdentifier)
        w.key("version")
        w.int(version(of: table))
        w.endObject()
        return w.finish()
    }

    /// The schema's entities, one per name, sorted by name.
    package static func entities(of schema: Schema) -> [Schema.Entity] {
        schema.entitiesByName.values.sorted { jsonKeyOrder($0.name, $1.name) }
    }

    /// The primary key a relationship value names, when it is a live record of the destination.
    private static func liveKey(_ value: SnapshotValue, _ destination: String, _ table: SnapshotTable) -> Int64?? {
        guard case .identifier(let id) = value else { return nil }
        guard id.entityName == destination, id.storeIdentifier == table.storeIdentifier, let key = id.primaryKey,
            table.entities[destination]?.rows.value(forKey: key) != nil
        else {
            return .some(nil)
        }
        return .some(key)
    }

    private static func writeRelationship(
        _ value: SnapshotValue, _ relationship: Schema.Relationship, _ table: SnapshotTable, _ w: inout JSONWriter
    ) {
        let destination = relationship.destination
        if relationship.isToOne {
            switch liveKey(value, destination, table) {
            case .some(.some(let key)): w.int(key)
            case .some(.none): w.null()  // a dangling reference is not written
            case .none: JSONValueCodec.write(value, to: &w)
            }
            return
        }
        guard case .array(let items) = value else {
            JSONValueCodec.write(value, to: &w)
            return
        }
        w.beginArray()
        for item in items {
            switch liveKey(item, destination, table) {
            case .some(.some(let key)): w.int(key)
            case .some(.none): break
            case .none: JSONValueCodec.write(item, to: &w)
            }
        }
        w.endArray()
    }

    private static func writeSchema(_ schema: Schema, _ w: inout JSONWriter) {
        func groups(_ list: [[String]]) {
            w.beginArray()
            for group in list {
                w.beginArray()
                for name in group { w.string(name) }
                w.endArray()
            }
            w.endArray()
        }
        w.beginObject()
        w.key("entities")
        w.beginObject()
        for entity in entities(of: schema) {
            w.key(entity.name)
            w.beginObject()
            w.key("indexes")
            groups(entity.indices)
            w.key("properties")
            w.beginArray()
            for property in entity.properties {
                w.beginObject()
                if let relationship = property.relationship {
                    w.key("destination")
                    w.string(relationship.destination)
                }
                w.key("name")
                w.string(property.name)
                w.key("optional")
                w.bool(property.isOptional)
                if let relationship = property.relationship {
                    w.key("toMany")
                    w.bool(!relationship.isToOne)
                }
                w.key("type")
                w.string(property.typeName)
                w.endObject()
            }
            w.endArray()
            if let superentity = entity.superentityName {
                w.key("superentity")
                w.string(superentity)
            }
            w.key("unique")
            groups(entity.uniquenessConstraints)
            w.endObject()
        }
        w.endObject()
        w.key("version")
        w.string(schema.version.description)
        w.endObject()
    }

    // MARK: Reading

    /// What was wrong with a document, before the path is added.
    package struct Problem: Error {
        package let code: DataStoreError.Code
        package let message: String
        package init(_ code: DataStoreError.Code, _ message: String) {
            self.code = code
            self.message = message
        }
        static func corrupt(_ message: String) -> Problem { Problem(.corruptStore, message) }
    }

    /// The members of an object by name; a duplicate is an error naming `context`.
    private static func members(_ value: JSONValue, _ context: String) throws(Problem) -> [String: JSONValue] {
        guard case .object(let list) = value else {
            throw .corrupt("\(context) must be an object, found \(value.typeName)")
        }
        var result: [String: JSONValue] = [:]
        result.reserveCapacity(list.count)
        for (key, member) in list {
            guard result.updateValue(member, forKey: key) == nil else {
                throw .corrupt("\(context) has the member \"\(key)\" twice")
            }
        }
        return result
    }

    private static func string(_ value: JSONValue?, _ context: String) throws(Problem) -> String {
        guard case .string(let s)? = value else {
            throw .corrupt("\(context) must be a string, found \(value?.typeName ?? "nothing")")
        }
        return s
    }

    private static func groups(_ value: JSONValue?, _ context: String) throws(Problem) -> [[String]] {
        guard case .array(let list)? = value else { throw .corrupt("\(context) must be an array of arrays of names") }
        var result: [[String]] = []
        for item in list {
            guard case .array(let names) = item else {
                throw .corrupt("\(context) must be an array of arrays of names")
            }
            var group: [String] = []
            for name in names { group.append(try string(name, "\(context) entry")) }
            result.append(group)
        }
        return result
    }

    /// Reads the stored schema into the log store's comparable description.
    package static func readSchema(_ value: JSONValue) throws(Problem) -> StoredSchema {
        let top = try members(value, "schema")
        let versionText = try string(top["version"], "schema.version")
        let parts = versionText.split(separator: ".", omittingEmptySubsequences: false).map { UInt64($0) }
        guard parts.count == 3, parts.allSatisfy({ $0 != nil }) else {
            throw .corrupt("schema.version \"\(versionText)\" is not major.minor.patch")
        }
        let entityMembers = try members(top["entities"] ?? .null, "schema.entities")
        var entities: [StoredSchema.Entity] = []
        for (name, value) in entityMembers.sorted(by: { jsonKeyOrder($0.key, $1.key) }) {
            let context = "schema entity \(name)"
            let entity = try members(value, context)
            guard case .array(let propertyList)? = entity["properties"] else {
                throw .corrupt("\(context): properties must be an array")
            }
            var properties: [StoredSchema.Property] = []
            for item in propertyList {
                let p = try members(item, "\(context): a property")
                let propertyName = try string(p["name"], "\(context): a property's name")
                guard case .bool(let optional)? = p["optional"] else {
                    throw .corrupt("\(context), property \(propertyName): optional must be true or false")
                }
                var flags: UInt8 = optional ? 1 : 0
                var destination: String?
                if p["destination"] != nil || p["toMany"] != nil {
                    destination = try string(p["destination"], "\(context), property \(propertyName): destination")
                    guard case .bool(let toMany)? = p["toMany"] else {
                        throw .corrupt("\(context), property \(propertyName): toMany must be true or false")
                    }
                    flags |= toMany ? 2 : 6
                }
                properties.append(
                    StoredSchema.Property(
                        name: propertyName,
                        typeName: try string(p["type"], "\(context), property \(propertyName): type"),
                        flags: flags, destination: destination))
            }
            var superentity: String?
            if let named = entity["superentity"] { superentity = try string(named, "\(context): superentity") }
            entities.append(
                StoredSchema.Entity(
                    name: name, properties: properties, uniqueness: try groups(entity["unique"], "\(context): unique"),
                    indices: try groups(entity["indexes"], "\(context): indexes"), superentity: superentity))
        }
        return StoredSchema(version: parts.map { $0! }, entities: entities)
    }

    /// Reads and validates a whole document into a table for `schema`: the walk over the
    /// document (``JSONDocumentWalk``) with the store's steps (``JSONTableLoader``), then
    /// the checks that need every record.
    /// - Returns: The table; its store identifier is the document's.
    /// - Throws: The first problem found.
    static func load(
        _ bytes: [UInt8], schema: Schema, options: SchemaConversion.Options = .init(),
        maximumDepth: Int = JSONParser.defaultMaximumDepth
    ) throws(Problem) -> SnapshotTable {
        var loader = JSONTableLoader(schema: schema, options: options)
        try JSONDocumentWalk.walk(bytes, maximumDepth: maximumDepth, &loader)
        try loader.checkReferences()
        let table = loader.table()
        try loader.checkUniqueness(of: table)
        return table
    }
}

extension JSONDocument {
    /// The `history` member (`Formats/json.md`, version 2): the next transaction's
    /// identifier and every transaction kept, in order.
    static func writeHistory(_ table: SnapshotTable, _ w: inout JSONWriter) {
        w.beginObject()
        w.key("next")
        w.int(table.nextHistoryTransaction)
        w.key("transactions")
        w.beginArray()
        for entry in table.history ?? [] {
            w.beginObject()
            w.key("author")
            if let author = entry.author { w.string(author) } else { w.null() }
            w.key("changes")
            HistoryJSON.write(entry.changes, to: &w)
            w.key("process")
            w.int(entry.writer.process)
            w.key("program")
            w.string(entry.writer.program)
            w.key("time")
            w.int(entry.timestamp)
            w.key("transaction")
            w.int(entry.transactionID)
            w.endObject()
        }
        w.endArray()
        w.endObject()
    }

    /// Reads the `history` member against the stored `schema` (whose attribute types read
    /// the tombstones' values).
    static func readHistory(_ json: JSONValue, schema: StoredSchema, storeIdentifier: String) throws(Problem) -> (
        entries: [HistoryEntry], next: Int64
    ) {
        let top = try members(json, "history")
        guard case .integer(let next)? = top["next"], next >= 1 else {
            throw .corrupt("history.next must be an integer of at least 1")
        }
        guard case .array(let list)? = top["transactions"] else {
            throw .corrupt("history.transactions must be an array")
        }
        var entries: [HistoryEntry] = []
        var previous: Int64 = 0
        for item in list {
            let entry = try members(item, "a history transaction")
            guard case .integer(let id)? = entry["transaction"], id > previous, id < next else {
                throw .corrupt("a history transaction's identifier must be ascending and below history.next")
            }
            previous = id
            guard case .integer(let time)? = entry["time"] else {
                throw .corrupt("history transaction \(id): time must be an integer")
            }
            let author: String?
            switch entry["author"] {
            case .null?: author = nil
            case .string(let name)?: author = name
            default: throw .corrupt("history transaction \(id): author must be a string or null")
            }
            guard case .integer(let process)? = entry["process"], process >= 0, process <= Int64(Int32.max) else {
                throw .corrupt(
                    "history transaction \(id): process must be a process identifier (an integer, 0 if unknown)")
            }
            let program = try string(entry["program"], "history transaction \(id)'s program")
            guard case .array(let changeList)? = entry["changes"] else {
                throw .corrupt("history transaction \(id): changes must be an array")
            }
            let changes: [HistoryEntry.Change]
            do {
                changes = try HistoryJSON.read(
                    changeList, context: "history transaction \(id)", storeIdentifier: storeIdentifier
                ) { entity, property in
                    schema.entities.first { $0.name == entity }?.properties.first { $0.name == property }?.typeName
                }
            } catch {
                throw .corrupt(error.message)
            }
            entries.append(
                HistoryEntry(
                    transactionID: id, timestamp: time, author: author, changes: changes,
                    writer: HistoryWriter(program: program, process: process)))
        }
        return (entries, next)
    }
}
