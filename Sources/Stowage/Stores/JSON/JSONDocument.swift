import BTree
import Foundation
import IndexKey

/// The whole `stowage-json` document (`Formats/json.md`): rendering a table into bytes,
/// and reading bytes back into a validated table.
package enum JSONDocument {
    package static let formatName = "stowage-json"
    package static let formatVersion: Int64 = 1

    // MARK: Rendering

    /// The document for `table`, byte for byte as the format fixes it.
    /// - Complexity: O(size of the store).
    static func render(_ table: SnapshotTable, capacity: Int = 0) -> [UInt8] {
        let schema = table.schema
        var w = JSONWriter(capacity: capacity)
        w.beginObject()
        w.key("format")
        w.string(formatName)
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
        w.int(formatVersion)
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
            entities.append(
                StoredSchema.Entity(
                    name: name, properties: properties, uniqueness: try groups(entity["unique"], "\(context): unique"),
                    indices: try groups(entity["indexes"], "\(context): indexes")))
        }
        return StoredSchema(version: parts.map { $0! }, entities: entities)
    }

    /// Reads and validates a whole document into a table for `schema`.
    /// - Returns: The table; its store identifier is the document's.
    static func load(_ bytes: [UInt8], schema: Schema, maximumDepth: Int = JSONParser.defaultMaximumDepth)
        throws(Problem) -> SnapshotTable
    {
        let document: JSONValue
        do {
            document = try JSONParser.parse(bytes, maximumDepth: maximumDepth)
        } catch {
            throw .corrupt("it is not valid JSON: \(error)")
        }
        guard case .object(let topList) = document else {
            throw Problem(.wrongFormat, "it is \(document.typeName), not a stowage-json document")
        }
        guard case .string(formatName)? = topList.first(where: { $0.key == "format" })?.value else {
            throw Problem(
                .wrongFormat, "it has no \"format\": \"\(formatName)\" member; it is not a stowage-json document")
        }
        let top = try members(document, "the document")
        guard case .integer(formatVersion)? = top["version"] else {
            let found: String
            switch top["version"] {
            case .integer(let v)?: found = String(v)
            case let other?: found = other.typeName
            case nil: found = "(none)"
            }
            throw Problem(.wrongFormat, "it is stowage-json version \(found), not \(formatVersion)")
        }
        let known: Set<String> = ["format", "version", "storeIdentifier", "nextPrimaryKey", "schema", "records"]
        if let unknown = top.keys.sorted().first(where: { !known.contains($0) }) {
            throw .corrupt("the document has an unknown member \"\(unknown)\"")
        }
        let storeIdentifier = try string(top["storeIdentifier"], "storeIdentifier")
        guard !storeIdentifier.isEmpty else { throw .corrupt("storeIdentifier is empty") }
        guard case .integer(let storedNextKey)? = top["nextPrimaryKey"], storedNextKey >= 1 else {
            throw .corrupt("nextPrimaryKey must be an integer of at least 1")
        }
        let stored = try readSchema(top["schema"] ?? .null)
        // The JSON store keeps external-storage values inline: that flag is not part of its schema.
        // Indexes (`#Index`) and uniqueness constraints may differ: they are built from the
        // records (which must then hold no duplicates), and the next save writes the schema's.
        // So may whatever else needs no migration plan (`SchemaConversion`): each record is
        // read by the stored names and takes the new properties' values.
        let described = StoredSchema(schema).withoutExternalFlags
        var addedUniqueness: [String: [[String]]] = [:]
        var conversion: SchemaConversion?
        if let difference = stored.difference(from: described) {
            if !stored.differsOnlyInIndexes(from: described) {
                do {
                    conversion = try SchemaConversion.make(from: stored, to: described, schema: schema)
                } catch {
                    throw Problem(
                        .schemaMismatch,
                        "the schema does not match the store's: \(difference); it needs a migration: \(error.reason)")
                }
            }
            addedUniqueness = stored.addedUniqueness(in: described)
        }
        // For each entity, the property each stored field fills (`nil`: a removed one), and
        // the values of the properties the store does not have.
        var fieldPositions: [String: [String: Int?]] = [:]
        var newValues: [String: [Int: SnapshotValue]] = [:]
        if let conversion {
            for entity in stored.entities {
                guard let sources = conversion.entities[entity.name] else { continue }
                var positions: [String: Int?] = Dictionary(
                    uniqueKeysWithValues: entity.properties.map { ($0.name, nil) })
                for (position, source) in sources.enumerated() {
                    switch source {
                    case .stored(let from): positions[entity.properties[from].name] = position
                    case .value(let value): newValues[entity.name, default: [:]][position] = value
                    }
                }
                fieldPositions[entity.name] = positions
            }
        }

        // Records, then the references between them.
        let recordGroups = try members(top["records"] ?? .null, "records")
        var live: [String: [Int64: DefaultSnapshot]] = [:]
        var maximumKey: Int64 = 0
        struct Reference {
            package let entity: String
            package let key: Int64
            package let field: String
            package let destination: String
            package let target: Int64
        }
        var references: [Reference] = []
        for (entityName, group) in recordGroups.sorted(by: { jsonKeyOrder($0.key, $1.key) }) {
            guard let entity = schema.entitiesByName[entityName] else {
                throw .corrupt("records has an unknown entity \"\(entityName)\"")
            }
            guard case .object(let records) = group else {
                throw .corrupt("records.\(entityName) must be an object, found \(group.typeName)")
            }
            var rows: [Int64: DefaultSnapshot] = [:]
            rows.reserveCapacity(records.count)
            var keys = Set<String>(minimumCapacity: records.count)
            for (keyText, _) in records where !keys.insert(keyText).inserted {
                throw .corrupt("\(entityName) record \(keyText): the identifier appears twice")
            }
            for (keyText, record) in records {
                guard let key = Int64(keyText), key >= 1, String(key) == keyText else {
                    throw .corrupt("\(entityName) record \"\(keyText)\": the identifier is not a positive integer")
                }
                guard rows[key] == nil else {
                    throw .corrupt("\(entityName) record \(key): the identifier appears twice")
                }
                maximumKey = max(maximumKey, key)
                guard case .object(let fields) = record else {
                    throw .corrupt("\(entityName) record \(key) must be an object, found \(record.typeName)")
                }
                var values = [SnapshotValue?](repeating: nil, count: entity.properties.count)
                for (field, json) in fields {
                    let converted = fieldPositions[entityName]?[field]
                    if let converted, converted == nil { continue }  // a removed property
                    guard let index = converted ?? (fieldPositions[entityName] == nil ? entity.indexByName[field] : nil)
                    else {
                        throw .corrupt(
                            "\(entityName) record \(key), field \"\(field)\": the schema has no such property")
                    }
                    guard values[index] == nil else {
                        throw .corrupt("\(entityName) record \(key), field \"\(field)\": it appears twice")
                    }
                    let property = entity.properties[index]
                    func fail(_ reason: String) -> Problem {
                        .corrupt("\(entityName) record \(key), field \"\(field)\": \(reason)")
                    }
                    if let relationship = property.relationship {
                        let destination = relationship.destination
                        func reference(_ target: Int64) -> SnapshotValue {
                            references.append(
                                Reference(
                                    entity: entityName, key: key, field: field, destination: destination, target: target
                                ))
                            return .identifier(
                                .permanent(
                                    entityName: destination, storeIdentifier: storeIdentifier, primaryKey: target))
                        }
                        if relationship.isToOne {
                            switch json {
                            case .null: values[index] = .null
                            case .integer(let target): values[index] = reference(target)
                            default:
                                throw fail(
                                    "a to-one relationship must be null or a \(destination) identifier, found \(json.typeName)"
                                )
                            }
                        } else {
                            guard case .array(let items) = json else {
                                throw fail(
                                    "a to-many relationship must be an array of \(destination) identifiers, found \(json.typeName)"
                                )
                            }
                            var targets: [SnapshotValue] = []
                            targets.reserveCapacity(items.count)
                            for item in items {
                                guard case .integer(let target) = item else {
                                    throw fail(
                                        "a to-many relationship must hold \(destination) identifiers, found \(item.typeName)"
                                    )
                                }
                                targets.append(reference(target))
                            }
                            values[index] = .array(targets)
                        }
                        continue
                    }
                    let value: SnapshotValue
                    do {
                        value = try JSONValueCodec.readAttribute(
                            json, typeName: property.typeName, storeIdentifier: storeIdentifier)
                    } catch {
                        throw fail(error.message)
                    }
                    if value.isNull && !property.isOptional {
                        throw fail("null, but \(property.typeName) is not optional")
                    }
                    do {
                        _ = try property.decode(value)
                    } catch {
                        throw fail("\(value.kindName) \(value) is not a valid \(property.typeName) (\(error))")
                    }
                    values[index] = value
                }
                for (index, value) in values.enumerated() where value == nil {
                    let property = entity.properties[index]
                    if let new = newValues[entityName]?[index] {
                        values[index] = new
                    } else if property.isOptional && property.relationship?.isToOne != false {
                        values[index] = .null
                    } else if let relationship = property.relationship, !relationship.isToOne {
                        values[index] = .array([])
                    } else {
                        throw .corrupt("\(entityName) record \(key), field \"\(property.name)\": it is missing")
                    }
                }
                rows[key] = DefaultSnapshot(
                    persistentIdentifier: .permanent(
                        entityName: entityName, storeIdentifier: storeIdentifier, primaryKey: key),
                    values: values.map { $0! })
            }
            live[entityName] = rows
        }
        for reference in references where live[reference.destination]?[reference.target] == nil {
            throw .corrupt(
                "\(reference.entity) record \(reference.key), field \"\(reference.field)\": it points at "
                    + "\(reference.destination) \(reference.target), which does not exist")
        }

        var table = SnapshotTable(schema: schema, storeIdentifier: storeIdentifier)
        table.bulkLoad(live)
        table.nextPrimaryKey = max(storedNextKey, maximumKey + 1)
        try checkUniqueness(table, added: addedUniqueness)
        return table
    }

    /// Two records with equal values for a uniqueness constraint collapse into one index
    /// entry; find them and say which.
    private static func checkUniqueness(_ table: SnapshotTable, added: [String: [[String]]]) throws(Problem) {
        guard let broken = table.brokenUniqueness().first, let records = table.entities[broken.entity] else { return }
        let index = records.indexes[broken.index]
        var seen: [IndexKey: Int64] = [:]
        for (key, row) in records.rows {
            guard case .snapshot(let snapshot) = row else { continue }
            guard let first = seen.updateValue(key, forKey: index.tupleKey(snapshot)) else { continue }
            let names = broken.constraint
            let which =
                "\(broken.entity) records \(first) and \(key) have the same \(names.joined(separator: ", ")), "
            // Records that break a constraint the schema adds are not damage.
            if added[broken.entity]?.contains(names) == true {
                throw Problem(
                    .schemaMismatch,
                    "the schema adds a uniqueness constraint the records break: \(which)"
                        + "which must be unique")
            }
            throw .corrupt(which + "which must be unique (field \"\(names.first ?? "")\")")
        }
    }
}
