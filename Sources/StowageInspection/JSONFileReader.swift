import Foundation
import Stowage

/// Reads a `stowage-json` document (`Formats/json.md`) without model types: the store's
/// own parser, schema reader and value mapping, with the checks of opening, except that
/// values are checked against the stored type names (``ToolValueChecker``) instead of by
/// decoding them as Swift types, and that every problem is collected instead of the first
/// one thrown.
enum JSONFileReader {
    /// The largest document read: 1 GiB (the store itself stops at 256 MiB by default).
    static let maximumSize = 1 << 30

    static func read(_ file: ToolFile, path: String) throws(ToolFailure) -> ToolStore {
        var store = ToolStore(
            path: path, format: .json, formatVersion: Int(JSONDocument.formatVersion), fileSize: file.size,
            schema: nil, storeIdentifier: nil, createdAt: nil, nextPrimaryKey: 1, records: [:], log: nil,
            damage: nil, problems: [])
        guard file.size <= Int64(maximumSize) else {
            throw ToolFailure(.io, "\(path) is \(file.size) bytes, more than the \(maximumSize) this tool reads")
        }
        let bytes = try file.read(count: Int(file.size), at: 0)
        let document: JSONValue
        do {
            document = try JSONParser.parse(bytes)
        } catch {
            store.damage = ToolProblem(
                offset: offset(ofLine: error.line, column: error.column, in: bytes),
                message: "it is not valid JSON: \(error)")
            store.damageLine = (error.line, error.column)
            return store
        }
        guard case .object(let topList) = document else {
            throw ToolFailure(.notAStore, "\(path) is not a Stowage store: it is \(document.typeName), not an object")
        }
        guard case .string(JSONDocument.formatName)? = topList.first(where: { $0.key == "format" })?.value else {
            throw ToolFailure(
                .notAStore, "\(path) is not a Stowage store: it has no \"format\": \"stowage-json\" member")
        }
        var top: [String: JSONValue] = [:]
        for (key, value) in topList where top.updateValue(value, forKey: key) != nil {
            store.problems.append(ToolProblem(offset: nil, message: "the document has the member \"\(key)\" twice"))
        }
        guard case .integer(let version)? = top["version"] else {
            throw ToolFailure(.notAStore, "\(path): the stowage-json document has no integer \"version\"")
        }
        guard version == JSONDocument.formatVersion else {
            throw ToolFailure(
                .notAStore,
                "\(path) is stowage-json version \(version); this tool reads version \(JSONDocument.formatVersion)")
        }
        let known: Set<String> = ["format", "version", "storeIdentifier", "nextPrimaryKey", "schema", "records"]
        for unknown in top.keys.sorted() where !known.contains(unknown) {
            store.problems.append(
                ToolProblem(offset: nil, message: "the document has an unknown member \"\(unknown)\""))
        }
        guard case .string(let identifier)? = top["storeIdentifier"], !identifier.isEmpty else {
            store.damage = ToolProblem(offset: nil, message: "storeIdentifier must be a non-empty string")
            return store
        }
        store.storeIdentifier = identifier
        var storedNextKey: Int64 = 1
        if case .integer(let next)? = top["nextPrimaryKey"], next >= 1 {
            storedNextKey = next
        } else {
            store.problems.append(
                ToolProblem(offset: nil, message: "nextPrimaryKey must be an integer of at least 1"))
        }
        let schema: ToolSchema
        do {
            schema = ToolSchema(try JSONDocument.readSchema(top["schema"] ?? .null))
        } catch {
            store.damage = ToolProblem(offset: nil, message: "the schema does not read: \(error.message)")
            return store
        }
        store.schema = schema
        guard case .object(let groups)? = top["records"] else {
            store.damage = ToolProblem(offset: nil, message: "records must be an object")
            return store
        }

        var maximumKey: Int64 = 0
        var seenEntities: Set<String> = []
        for (entityName, group) in groups {
            func problem(_ message: String) {
                store.problems.append(ToolProblem(offset: nil, message: message))
            }
            guard seenEntities.insert(entityName).inserted else {
                problem("records has the entity \"\(entityName)\" twice")
                continue
            }
            guard let entity = schema.entity(named: entityName) else {
                problem("records has an unknown entity \"\(entityName)\"")
                continue
            }
            guard case .object(let list) = group else {
                problem("records.\(entityName) must be an object, found \(group.typeName)")
                continue
            }
            var rows: [Int64: ToolRecord] = [:]
            for (keyText, record) in list {
                guard let key = Int64(keyText), key >= 1, String(key) == keyText else {
                    problem("\(entityName) record \"\(keyText)\": the identifier is not a positive integer")
                    continue
                }
                guard rows[key] == nil else {
                    problem("\(entityName) record \(key): the identifier appears twice")
                    continue
                }
                maximumKey = max(maximumKey, key)
                guard case .object(let fields) = record else {
                    problem("\(entityName) record \(key) must be an object, found \(record.typeName)")
                    continue
                }
                var values = [SnapshotValue?](repeating: nil, count: entity.properties.count)
                // Fields already reported, so that the type check does not report them again.
                var reported: Set<Int> = []
                for (field, json) in fields {
                    func fail(_ reason: String) {
                        problem("\(entityName) record \(key), field \"\(field)\": \(reason)")
                    }
                    guard let index = entity.properties.firstIndex(where: { $0.name == field }) else {
                        fail("the schema has no such property")
                        continue
                    }
                    guard values[index] == nil else {
                        fail("it appears twice")
                        continue
                    }
                    let property = entity.properties[index]
                    if let destination = property.destination {
                        func reference(_ target: Int64) -> SnapshotValue {
                            .identifier(
                                .permanent(entityName: destination, storeIdentifier: identifier, primaryKey: target))
                        }
                        switch (property.isToMany, json) {
                        case (false, .null): values[index] = .null
                        case (false, .integer(let target)): values[index] = reference(target)
                        case (true, .array(let items)):
                            var targets: [SnapshotValue] = []
                            for item in items {
                                if case .integer(let target) = item {
                                    targets.append(reference(target))
                                } else {
                                    fail("a to-many relationship must hold \(destination) identifiers")
                                }
                            }
                            values[index] = .array(targets)
                        default:
                            fail("a relationship to \(destination) holds \(json.typeName)")
                            values[index] = .null
                            reported.insert(index)
                        }
                        continue
                    }
                    do {
                        values[index] = try JSONValueCodec.readAttribute(
                            json, typeName: property.typeName, storeIdentifier: identifier)
                    } catch {
                        fail(error.message)
                        values[index] = .null
                        reported.insert(index)
                    }
                }
                for (index, value) in values.enumerated() where value == nil {
                    let property = entity.properties[index]
                    if property.isRelationship && property.isToMany {
                        values[index] = .array([])
                    } else if property.isOptional || property.isRelationship {
                        values[index] = .null
                    } else {
                        problem("\(entityName) record \(key), field \"\(property.name)\": it is missing")
                        reported.insert(index)
                        values[index] = .null
                    }
                }
                let complete = values.map { $0 ?? .null }
                for (index, property) in entity.properties.enumerated() where !reported.contains(index) {
                    if let message = ToolValueChecker.check(complete[index], property, storeIdentifier: identifier) {
                        problem("\(entityName) record \(key), field \"\(property.name)\": \(message)")
                    }
                }
                rows[key] = ToolRecord(key: key, values: complete, offset: nil)
            }
            store.records[entityName] = rows.keys.sorted().map { rows[$0]! }
        }
        for entity in schema.entities where store.records[entity.name] == nil { store.records[entity.name] = [] }
        store.nextPrimaryKey = max(storedNextKey, maximumKey &+ 1)
        return store
    }

    /// The byte offset of a 1-based line and column (columns count bytes).
    private static func offset(ofLine line: Int, column: Int, in bytes: [UInt8]) -> Int64 {
        var current = 1
        var start = 0
        var i = 0
        while current < line, i < bytes.count {
            if bytes[i] == 0x0A {
                current += 1
                start = i + 1
            }
            i += 1
        }
        return Int64(min(bytes.count, start + column - 1))
    }
}
