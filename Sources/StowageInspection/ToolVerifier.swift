import Foundation
import IndexKey
import Stowage

/// Checks one record's values against the stored schema, by the type names the file
/// stores (no model types): the value count, null only where the property is optional,
/// the value's case for every type the store maps to one case (`String`, the integer
/// widths with their ranges, `Double`, `Date`, `UUID` and so on, and arrays and sets of
/// them), and that relationships hold identifiers of their destination in this store.
/// Types the tool cannot know (Codable structs and enums, transformable values) are
/// accepted as they are.
enum ToolValueChecker {
    static func problems(
        _ values: [SnapshotValue], of entity: ToolSchema.Entity, storeIdentifier: String, skipping: Set<Int> = []
    ) -> [String] {
        guard values.count == entity.properties.count else {
            return ["it has \(values.count) values, the schema \(entity.properties.count) properties"]
        }
        var problems: [String] = []
        for (position, (property, value)) in zip(entity.properties, values).enumerated()
        where !skipping.contains(position) {
            if let problem = check(value, property, storeIdentifier: storeIdentifier) {
                problems.append("property \(property.name): \(problem)")
            }
        }
        return problems
    }

    static func check(_ value: SnapshotValue, _ property: ToolSchema.Property, storeIdentifier: String) -> String? {
        if let destination = property.destination {
            if property.isToMany {
                if value.isNull && property.isOptional { return nil }
                guard case .array(let items) = value else {
                    return "a to-many relationship holds \(value.kindName), not an array of identifiers"
                }
                for item in items {
                    if let problem = reference(item, destination, storeIdentifier) { return problem }
                }
                return nil
            }
            // A to-one may be unset (nil) whatever its declaration says.
            if value.isNull { return nil }
            return reference(value, destination, storeIdentifier)
        }
        if value.isNull {
            return property.isOptional ? nil : "null, but \(property.typeName) is not optional"
        }
        return kindProblem(value, property.typeName, depth: 0)
    }

    private static func reference(_ value: SnapshotValue, _ destination: String, _ storeIdentifier: String) -> String? {
        guard case .identifier(let id) = value else {
            return "a relationship to \(destination) holds \(value.kindName), not an identifier"
        }
        guard id.entityName == destination else {
            return "a relationship to \(destination) holds an identifier of \(id.entityName)"
        }
        guard let key = id.primaryKey else { return "a relationship holds a temporary identifier (never saved)" }
        guard id.storeIdentifier == storeIdentifier else {
            return "the reference to \(destination) \(key) names another store (\(id.storeIdentifier ?? "none"))"
        }
        return nil
    }

    /// The element type of `Array<T>`, `[T]` or `Set<T>`.
    private static func elementType(_ typeName: String) -> String? {
        for prefix in ["Array<", "Set<", "ContiguousArray<"] where typeName.hasPrefix(prefix) && typeName.hasSuffix(">")
        {
            return String(typeName.dropFirst(prefix.count).dropLast())
        }
        if typeName.hasPrefix("["), typeName.hasSuffix("]"), !topLevelColon(typeName) {
            return String(typeName.dropFirst().dropLast())
        }
        return nil
    }

    private static func topLevelColon(_ typeName: String) -> Bool {
        var depth = 0
        for c in typeName {
            switch c {
            case "[", "<", "(": depth += 1
            case "]", ">", ")": depth -= 1
            case ":" where depth == 1: return true
            default: break
            }
        }
        return false
    }

    private static func kindProblem(_ value: SnapshotValue, _ typeName: String, depth: Int) -> String? {
        func expect(_ ok: Bool) -> String? {
            ok ? nil : "\(value.kindName) \(value) is not a valid \(typeName)"
        }
        func int(_ range: ClosedRange<Int64>) -> String? {
            if case .int(let v) = value { return range.contains(v) ? nil : "\(v) is out of range for \(typeName)" }
            return expect(false)
        }
        func uint(_ maximum: UInt64) -> String? {
            if case .uint(let v) = value { return v <= maximum ? nil : "\(v) is out of range for \(typeName)" }
            return expect(false)
        }
        switch typeName {
        case "String", "Substring":
            if case .string = value { return nil }
            return expect(false)
        case "Bool":
            if case .bool = value { return nil }
            return expect(false)
        case "Int", "Int64": return int(Int64.min...Int64.max)
        case "Int32": return int(Int64(Int32.min)...Int64(Int32.max))
        case "Int16": return int(Int64(Int16.min)...Int64(Int16.max))
        case "Int8": return int(Int64(Int8.min)...Int64(Int8.max))
        case "UInt", "UInt64": return uint(UInt64.max)
        case "UInt32": return uint(UInt64(UInt32.max))
        case "UInt16": return uint(UInt64(UInt16.max))
        case "UInt8": return uint(UInt64(UInt8.max))
        case "Double", "Float", "CGFloat":
            if case .double = value { return nil }
            return expect(false)
        case "Date":
            if case .date = value { return nil }
            return expect(false)
        case "Data":
            if case .data = value { return nil }
            return expect(false)
        case "UUID":
            if case .uuid = value { return nil }
            return expect(false)
        case "URL":
            if case .url = value { return nil }
            return expect(false)
        case "Decimal":
            if case .decimal = value { return nil }
            return expect(false)
        default:
            break
        }
        guard depth < LogCodec.maximumNesting else { return nil }
        if typeName.hasPrefix("Optional<"), typeName.hasSuffix(">") {
            if value.isNull { return nil }
            return kindProblem(value, String(typeName.dropFirst(9).dropLast()), depth: depth + 1)
        }
        if let element = elementType(typeName) {
            guard case .array(let items) = value else { return "\(value.kindName) is not a valid \(typeName)" }
            for item in items {
                if item.isNull && (element.hasPrefix("Optional<") || element.hasSuffix("?")) { continue }
                let inner = element.hasSuffix("?") ? String(element.dropLast()) : element
                if let problem = kindProblem(item, inner, depth: depth + 1) { return "an element: \(problem)" }
            }
            return nil
        }
        if typeName.hasPrefix("Dictionary<") || (typeName.hasPrefix("[") && topLevelColon(typeName)) {
            switch value {
            case .object, .array: return nil
            default: return "\(value.kindName) is not a valid \(typeName)"
            }
        }
        // A Codable struct or enum, or a transformable value: nothing to check by name.
        return nil
    }
}

/// The checks of `stowage verify` that look across records, for both formats.
package enum ToolVerifier {
    /// Everything wrong with the store, the first (lowest offset) first: the framing or
    /// syntax damage that stopped reading, problems in records, broken references,
    /// uniqueness violations and index keys that do not encode.
    package static func problems(of store: ToolStore) -> [ToolProblem] {
        var problems = store.problems
        if let damage = store.damage { problems.append(damage) }
        if let schema = store.schema {
            problems += references(store, schema) + indexes(store, schema) + externalFiles(store, schema)
        }
        // A stable sort: by offset (problems without one last), then in the order found.
        return problems.enumerated().sorted { a, b in
            let x = a.element.offset ?? Int64.max
            let y = b.element.offset ?? Int64.max
            return x != y ? x < y : a.offset < b.offset
        }.map(\.element)
    }

    /// Every external value's file (format version 2) exists, with its length and CRC32C.
    private static func externalFiles(_ store: ToolStore, _ schema: ToolSchema) -> [ToolProblem] {
        var problems: [ToolProblem] = []
        for entity in schema.entities {
            for record in store.records[entity.name] ?? [] {
                for (position, external) in record.external.sorted(by: { $0.key < $1.key }) {
                    let name = position < entity.properties.count ? entity.properties[position].name : "?"
                    let path = store.path + ".blobs/" + external.fileName
                    guard let data = FileManager.default.contents(atPath: path) else {
                        problems.append(
                            ToolProblem(
                                offset: record.offset,
                                message: "\(entity.name) \(record.key), property \(name): its external file "
                                    + "\(path) is missing"))
                        continue
                    }
                    let bytes = [UInt8](data)
                    if UInt64(bytes.count) != external.byteCount || CRC32C.checksum(bytes) != external.checksum {
                        problems.append(
                            ToolProblem(
                                offset: record.offset,
                                message: "\(entity.name) \(record.key), property \(name): its external file "
                                    + "\(path) does not hold the \(external.byteCount) bytes the log refers to"))
                    }
                }
            }
        }
        return problems
    }

    /// Every relationship names a live record of its destination.
    private static func references(_ store: ToolStore, _ schema: ToolSchema) -> [ToolProblem] {
        var keys: [String: Set<Int64>] = [:]
        for (name, records) in store.records { keys[name] = Set(records.map(\.key)) }
        var problems: [ToolProblem] = []
        for entity in schema.entities {
            for record in store.records[entity.name] ?? [] {
                for (property, value) in zip(entity.properties, record.values) {
                    guard let destination = property.destination else { continue }
                    let targets: [SnapshotValue]
                    if case .array(let items) = value { targets = items } else { targets = [value] }
                    for case .identifier(let id) in targets {
                        guard id.entityName == destination, let key = id.primaryKey else { continue }
                        if keys[destination]?.contains(key) != true {
                            problems.append(
                                ToolProblem(
                                    offset: record.offset,
                                    message: "\(entity.name) \(record.key), property \(property.name): it points at "
                                        + "\(destination) \(key), which does not exist"))
                        }
                    }
                }
            }
        }
        return problems
    }

    /// Every index and uniqueness group names properties the entity has, every indexed
    /// value encodes as an index key that decodes again, and no two live records share the
    /// key of a uniqueness constraint. (What a version 3 or 4 log persists of its indexes, its
    /// checkpoints, is checked as the file is read: ``checkpointProblems(_:at:expected:schema:blobs:)``.)
    private static func indexes(_ store: ToolStore, _ schema: ToolSchema) -> [ToolProblem] {
        var problems: [ToolProblem] = []
        let blobs = ToolExternalReader(logPath: store.path)
        for entity in schema.entities {
            let records = store.records[entity.name] ?? []
            for index in ToolIndex.groups(of: entity) {
                if let missing = index.missingName {
                    problems.append(
                        ToolProblem(
                            offset: store.log?.dataStart == nil ? nil : Int64(LogFormat.fileHeaderSize),
                            message: "the \(index.kind) \(index.label) names \(missing), which \(entity.name) does "
                                + "not have"))
                    continue
                }
                var seen: [IndexKey: Int64] = [:]
                for record in records {
                    // A record whose external file is missing is reported by `externalFiles`.
                    guard let values = blobs.values(of: record, for: index) else { continue }
                    let key = index.tupleKey(values)
                    do {
                        var decoder = IndexKeyDecoder(key)
                        _ = try decoder.decodeAll()
                    } catch {
                        problems.append(
                            ToolProblem(
                                offset: record.offset,
                                message: "\(entity.name) \(record.key): its key for the \(index.kind) "
                                    + "\(index.label) does not decode: \(error)"))
                    }
                    guard index.isUnique else { continue }
                    if let first = seen.updateValue(record.key, forKey: key) {
                        problems.append(
                            ToolProblem(
                                offset: record.offset,
                                message: "\(entity.name) records \(first) and \(record.key) have the same "
                                    + "\(index.names.joined(separator: ", ")), which must be unique"))
                    }
                }
            }
        }
        return problems
    }
}

/// One index of a stored entity, and the keys the store files records under in it
/// (``EntityIndex/entryKey(_:primaryKey:)``, `Formats/index-key.md`), computed from the
/// values the file holds. `verify` checks index keys and uniqueness with it, and compares
/// a checkpoint's entries (format versions 3 and 4) with the ones it computes.
struct ToolIndex {
    let entityName: String
    /// The group's property names, as the schema lists them.
    let names: [String]
    /// The positions of the named properties the entity has, in the group's order. (The
    /// store leaves a name the entity lacks out of the key; ``missingName`` reports it.)
    let columns: [Int]
    /// The first name the entity has no property for.
    let missingName: String?
    let isUnique: Bool

    init(entity: ToolSchema.Entity, names: [String], isUnique: Bool) {
        entityName = entity.name
        self.names = names
        let positions = names.map { name in entity.properties.firstIndex { $0.name == name } }
        columns = positions.compactMap { $0 }
        missingName = zip(names, positions).first { $0.1 == nil }?.0
        self.isUnique = isUnique
    }

    var kind: String { isUnique ? "uniqueness constraint" : "index" }
    /// `Entity(a, b)`.
    var label: String { "\(entityName)(\(names.joined(separator: ", ")))" }

    /// The entity's uniqueness constraints, then every `#Index` group, as the schema lists them.
    static func groups(of entity: ToolSchema.Entity) -> [ToolIndex] {
        entity.unique.map { ToolIndex(entity: entity, names: $0, isUnique: true) }
            + entity.indexes.map { ToolIndex(entity: entity, names: $0, isUnique: false) }
    }

    /// The indexes the store keeps for the entity, in its order (``SnapshotTable``, and a
    /// checkpoint's, ``LogCheckpoint/indexCount(of:)``): the uniqueness constraints, then
    /// the `#Index` groups that are not also one.
    static func storeOrder(of entity: ToolSchema.Entity) -> [ToolIndex] {
        entity.unique.map { ToolIndex(entity: entity, names: $0, isUnique: true) }
            + entity.indexes.filter { !entity.unique.contains($0) }.map {
                ToolIndex(entity: entity, names: $0, isUnique: false)
            }
    }

    /// The encoded tuple of a record's indexed values.
    func tupleKey(_ values: [SnapshotValue]) -> IndexKey {
        var encoder = IndexKeyEncoder()
        for column in columns {
            EntityIndex.append(column < values.count ? values[column] : .null, to: &encoder)
        }
        return encoder.key
    }

    /// The key the store files a record under: the tuple, and for an index that is not a
    /// uniqueness constraint the primary key after it, as ``EntityIndex`` does.
    func entryKey(_ values: [SnapshotValue], primaryKey: Int64) -> IndexKey {
        let tuple = tupleKey(values)
        return isUnique ? tuple : tuple.appendingPrimaryKey(primaryKey)
    }
}

/// Reads back values a log keeps in files beside it (`<file>.blobs/`, format version 2
/// and later) for index keys: the store holds their bytes in memory and indexes them,
/// while the tool's records hold `.null` in their slots.
struct ToolExternalReader {
    let directory: String

    init(logPath: String) { directory = logPath + ".blobs/" }

    /// `record`'s values with the external ones that `index` reads put in their slots;
    /// `nil` when one of their files cannot be read.
    func values(of record: ToolRecord, for index: ToolIndex) -> [SnapshotValue]? {
        var values = record.values
        for column in index.columns {
            guard let external = record.external[column] else { continue }
            guard column < values.count, let data = FileManager.default.contents(atPath: directory + external.fileName)
            else { return nil }
            values[column] = .data(data)
        }
        return values
    }
}
