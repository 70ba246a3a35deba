/// The one walk over a `stowage-json` document's structure (`Formats/json.md`), shared by
/// the store's open (``JSONDocument/load(_:schema:maximumDepth:)``) and the `stowage`
/// tool, so that both check the same things with the same words.
///
/// It parses the bytes, checks the top-level members (format, version, storeIdentifier,
/// nextPrimaryKey), reads the stored schema, then visits each entity group of `records`,
/// each record and each field: identifiers, relationships as primary keys, attributes
/// through ``JSONValueCodec`` by the visitor's type names, and the fields a record lacks.
/// Every problem goes to the visitor (``JSONDocumentVisitor/report(_:)``), which either
/// stops the walk or lets it go on past the member at fault.
package enum JSONDocumentWalk {
    /// The top-level members the format defines.
    package static let topLevelMembers: Set<String> = [
        "format", "version", "storeIdentifier", "nextPrimaryKey", "schema", "records", "history",
    ]

    /// Where a repeated entity name or record identifier is reported, and in which order
    /// entity groups are visited.
    package enum Order: Sendable {
        /// Repeated names first: every repeat in an object is reported before any of its
        /// members is visited, and entity groups are visited sorted by name. For a reader
        /// that stops at its first problem: a repeat, which makes the object ambiguous,
        /// wins over whatever else is wrong in it.
        case namesFirst
        /// As the document has them: a repeat is reported where it stands and skipped (the
        /// first one is read). For a reader that lists every problem: its list follows the
        /// document down.
        case asWritten
    }

    /// How one entity's records read, in the reader's schema.
    package struct Entity {
        /// One property, in the order of a record's values.
        package struct Property {
            package var name: String
            /// The Swift type's name, without `Optional`: how ``JSONValueCodec`` reads the value.
            package var typeName: String
            /// The destination entity, for a relationship.
            package var destination: String?
            /// For a relationship: to-many (an array of primary keys) or to-one.
            package var isToMany: Bool
            /// The value of a record that lacks the field; `nil` when a record must have it.
            package var missing: SnapshotValue?

            package init(
                name: String, typeName: String, destination: String?, isToMany: Bool, missing: SnapshotValue?
            ) {
                self.name = name
                self.typeName = typeName
                self.destination = destination
                self.isToMany = isToMany
                self.missing = missing
            }
        }

        package var properties: [Property]
        /// The position of the property each field name fills.
        package var positions: [String: Int]
        /// Field names that fill nothing and are passed over: properties the schema removed.
        package var dropped: Set<String>

        package init(properties: [Property], positions: [String: Int], dropped: Set<String> = []) {
            self.properties = properties
            self.positions = positions
            self.dropped = dropped
        }

        /// The value of a field for the property at `position`, and what is wrong with it: a
        /// relationship's primary keys as identifiers in this store, an attribute as
        /// ``JSONValueCodec`` maps its type. The value is `nil` when it does not read at all.
        fileprivate func read(_ json: JSONValue, at position: Int, storeIdentifier: String) -> (
            SnapshotValue?, [JSONDocumentProblem.Field]
        ) {
            // The property is read in place, a member at a time, not copied: this runs for every
            // value of the document.
            guard let destination = properties[position].destination else {
                do {
                    return (
                        try JSONValueCodec.readAttribute(
                            json, typeName: properties[position].typeName, storeIdentifier: storeIdentifier),
                        []
                    )
                } catch {
                    return (nil, [.value(error.message)])
                }
            }
            let isToMany = properties[position].isToMany
            func reference(_ target: Int64) -> SnapshotValue {
                .identifier(
                    .permanent(entityName: destination, storeIdentifier: storeIdentifier, primaryKey: target))
            }
            switch (isToMany, json) {
            case (false, .null): return (.null, [])
            case (false, .integer(let target)): return (reference(target), [])
            case (true, .array(let items)):
                var targets: [SnapshotValue] = []
                targets.reserveCapacity(items.count)
                var wrong: [JSONDocumentProblem.Field] = []
                for item in items {
                    if case .integer(let target) = item {
                        targets.append(reference(target))
                    } else {
                        wrong.append(.notAnIdentifier(destination: destination, found: item.typeName))
                    }
                }
                return (.array(targets), wrong)
            default:
                return (nil, [.relationship(destination: destination, isToMany: isToMany, found: json.typeName)])
            }
        }
    }

    /// Walks the document in `bytes`, telling `visitor` what it reads and finds.
    /// - Throws: Only what the visitor throws.
    /// - Complexity: O(size of the document).
    package static func walk<Visitor: JSONDocumentVisitor>(
        _ bytes: [UInt8], maximumDepth: Int, _ visitor: inout Visitor
    ) throws(Visitor.Failure) {
        let document: JSONValue
        do {
            document = try JSONParser.parse(bytes, maximumDepth: maximumDepth)
        } catch {
            return try visitor.report(.notJSON(error))
        }
        guard let top = try topLevel(document, &visitor) else { return }
        guard case .string(let storeIdentifier)? = top["storeIdentifier"], !storeIdentifier.isEmpty else {
            return try visitor.report(.storeIdentifier(found: top["storeIdentifier"]))
        }
        var nextPrimaryKey: Int64?
        if case .integer(let next)? = top["nextPrimaryKey"], next >= 1 {
            nextPrimaryKey = next
        } else {
            try visitor.report(.nextPrimaryKey)
        }
        try visitor.header(storeIdentifier: storeIdentifier, nextPrimaryKey: nextPrimaryKey)
        let schema: StoredSchema
        var documentVersion: Int64 = 1
        if case .integer(let version)? = top["version"] { documentVersion = version }
        do throws(JSONDocument.Problem) {
            schema = try JSONDocument.readSchema(top["schema"] ?? .null)
            if documentVersion < 3, schema.hasSuperentities {
                throw .corrupt("a version \(documentVersion) document's schema names no superentity (version 3 does)")
            }
        } catch {
            return try visitor.report(.schema(error))
        }
        try visitor.schema(schema)
        guard case .object(let groups)? = top["records"] else {
            return try visitor.report(.records(found: (top["records"] ?? .null).typeName))
        }
        var maximumKey: Int64 = 0
        try entityGroups(groups, storeIdentifier, &maximumKey, &visitor)
        // Version 2 has a history; version 3 (superentities) has one when its store keeps it.
        let versionTwo = documentVersion == 2
        if top["history"] == nil, versionTwo {
            return try visitor.report(.history(.corrupt("a version 2 document must have a history member")))
        }
        if let history = top["history"] {
            guard documentVersion >= 2 else {
                return try visitor.report(.history(.corrupt("a version 1 document has no history member")))
            }
            do {
                let (entries, next) = try JSONDocument.readHistory(
                    history, schema: schema, storeIdentifier: storeIdentifier)
                try visitor.history(entries, next: next)
            } catch let problem as JSONDocument.Problem {
                return try visitor.report(.history(problem))
            } catch let failure as Visitor.Failure {
                throw failure
            } catch {
                return try visitor.report(.history(.corrupt("\(error)")))
            }
        }
        try visitor.end(maximumKey: maximumKey)
    }

    /// The top-level members by name, or `nil` when the document is not a `stowage-json`
    /// document of this version. A repeated member is reported, and the last one is kept.
    private static func topLevel<Visitor: JSONDocumentVisitor>(
        _ document: JSONValue, _ visitor: inout Visitor
    ) throws(Visitor.Failure) -> [String: JSONValue]? {
        guard case .object(let list) = document else {
            try visitor.report(.notAnObject(found: document.typeName))
            return nil
        }
        // The format comes first: a JSON document of another kind is not checked further.
        guard case .string(JSONDocument.formatName)? = list.first(where: { $0.key == "format" })?.value else {
            try visitor.report(.noFormat)
            return nil
        }
        var top: [String: JSONValue] = [:]
        top.reserveCapacity(list.count)
        for (key, value) in list where top.updateValue(value, forKey: key) != nil {
            try visitor.report(.repeatedMember(key))
        }
        guard case .integer(let version)? = top["version"], JSONDocument.readableVersions.contains(version) else {
            try visitor.report(.version(found: top["version"]))
            return nil
        }
        try visitor.version(version)
        for name in top.keys.sorted() where !topLevelMembers.contains(name) {
            try visitor.report(.unknownMember(name))
        }
        return top
    }

    /// Reports every name that `members` repeats.
    private static func reportRepeats<Visitor: JSONDocumentVisitor>(
        _ members: [(key: String, value: JSONValue)], _ visitor: inout Visitor,
        _ problem: (String) -> JSONDocumentProblem
    ) throws(Visitor.Failure) {
        var names = Set<String>(minimumCapacity: members.count)
        for (name, _) in members where !names.insert(name).inserted {
            try visitor.report(problem(name))
        }
    }

    /// The members of `records`: each entity's group of records.
    private static func entityGroups<Visitor: JSONDocumentVisitor>(
        _ list: [(key: String, value: JSONValue)], _ storeIdentifier: String, _ maximumKey: inout Int64,
        _ visitor: inout Visitor
    ) throws(Visitor.Failure) {
        let order = visitor.order
        var groups = list
        if order == .namesFirst {
            try reportRepeats(groups, &visitor) { .repeatedEntity($0) }
            groups.sort { jsonKeyOrder($0.key, $1.key) }
        }
        var visited = Set<String>(minimumCapacity: groups.count)
        for (name, group) in groups {
            guard visited.insert(name).inserted else {
                if order == .asWritten { try visitor.report(.repeatedEntity(name)) }
                continue
            }
            guard let entity = visitor.entity(named: name) else {
                try visitor.report(.unknownEntity(name))
                continue
            }
            guard case .object(let records) = group else {
                try visitor.report(.entity(name, found: group.typeName))
                continue
            }
            try visitor.beginRecords(of: name, count: records.count)
            try self.records(records, of: name, entity, storeIdentifier, &maximumKey, &visitor)
            try visitor.endRecords()
        }
    }

    /// One entity's records, by identifier.
    private static func records<Visitor: JSONDocumentVisitor>(
        _ records: [(key: String, value: JSONValue)], of name: String, _ entity: Entity, _ storeIdentifier: String,
        _ maximumKey: inout Int64, _ visitor: inout Visitor
    ) throws(Visitor.Failure) {
        let order = visitor.order
        if order == .namesFirst {
            try reportRepeats(records, &visitor) { .repeatedKey(entity: name, key: $0) }
        }
        // The identifiers that hold a record: a later record with one is a repeat and skipped,
        // so that each identifier holds one record (one that is not an object holds none).
        var read = Set<Int64>(minimumCapacity: records.count)
        for (keyText, record) in records {
            guard let key = Int64(keyText), key >= 1, String(key) == keyText else {
                try visitor.report(.key(entity: name, key: keyText))
                continue
            }
            guard !read.contains(key) else {
                if order == .asWritten { try visitor.report(.repeatedKey(entity: name, key: keyText)) }
                continue
            }
            maximumKey = max(maximumKey, key)
            guard case .object(let fields) = record else {
                try visitor.report(.record(entity: name, key: key, found: record.typeName))
                continue
            }
            read.insert(key)
            try self.record(fields, key: key, of: name, entity, storeIdentifier, &visitor)
        }
    }

    /// One record's fields, read into a value for every property.
    private static func record<Visitor: JSONDocumentVisitor>(
        _ fields: [(key: String, value: JSONValue)], key: Int64, of name: String, _ entity: Entity,
        _ storeIdentifier: String, _ visitor: inout Visitor
    ) throws(Visitor.Failure) {
        var values = [SnapshotValue?](repeating: nil, count: entity.properties.count)
        var reported: [Int] = []
        for (field, json) in fields {
            guard let position = entity.positions[field] else {
                if !entity.dropped.contains(field) {
                    try visitor.report(.field(entity: name, key: key, field: field, .noSuchProperty))
                }
                continue
            }
            guard values[position] == nil else {
                try visitor.report(.field(entity: name, key: key, field: field, .repeated))
                continue
            }
            // A to-many relationship keeps the identifiers that read; each other item is reported.
            let (value, wrong) = entity.read(json, at: position, storeIdentifier: storeIdentifier)
            for problem in wrong {
                try visitor.report(.field(entity: name, key: key, field: field, problem))
            }
            if let value {
                guard let reason = visitor.field(value, at: position, named: field, key: key) else {
                    values[position] = value
                    continue
                }
                try visitor.report(.field(entity: name, key: key, field: field, .value(reason)))
            }
            values[position] = .null
            reported.append(position)
        }
        for position in values.indices where values[position] == nil {
            if let missing = entity.properties[position].missing {
                values[position] = missing
            } else {
                let field = entity.properties[position].name
                try visitor.report(.field(entity: name, key: key, field: field, .missing))
                values[position] = .null
                reported.append(position)
            }
        }
        try visitor.record(key, values: values.map { $0 ?? .null }, reported: reported)
    }
}
