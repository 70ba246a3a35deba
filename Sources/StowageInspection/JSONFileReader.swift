import Foundation
import Stowage

/// Reads a `stowage-json` document (`Formats/json.md`) without model types: the tool's
/// side of the store's own walk (``JSONDocumentWalk``), which checks values against the
/// stored schema's type names (``ToolValueChecker``) instead of decoding them as Swift
/// types, and collects every problem instead of stopping at the first.
///
/// A document of another format or version is not a store to the tool (``ToolFailure``);
/// damage that leaves nothing after it readable (syntax, the store identifier, the schema,
/// `records`) is the store's ``ToolStore/damage``; every other problem is one of its
/// ``ToolStore/problems``. A few problems are worded for the tool's reports.
struct JSONFileReader: JSONDocumentVisitor {
    typealias Failure = ToolFailure

    /// The largest document read: 1 GiB (the store itself stops at 256 MiB by default).
    static let maximumSize = 1 << 30

    static func read(_ file: ToolFile, path: String) throws(ToolFailure) -> ToolStore {
        let store = ToolStore(
            path: path, format: .json, formatVersion: Int(JSONDocument.formatVersion), fileSize: file.size,
            schema: nil, storeIdentifier: nil, createdAt: nil, nextPrimaryKey: 1, records: [:], log: nil,
            damage: nil, problems: [])
        guard file.size <= Int64(maximumSize) else {
            throw ToolFailure(.io, "\(path) is \(file.size) bytes, more than the \(maximumSize) this tool reads")
        }
        let bytes = try file.read(count: Int(file.size), at: 0)
        var reader = JSONFileReader(path: path, bytes: bytes, store: store)
        try JSONDocumentWalk.walk(bytes, maximumDepth: JSONParser.defaultMaximumDepth, &reader)
        return reader.store
    }

    private let path: String
    private let bytes: [UInt8]
    private var store: ToolStore
    private var storedNextKey: Int64 = 1
    private var entities: [String: JSONDocumentWalk.Entity] = [:]
    /// The entity whose records are being read, and its records so far.
    private var entity: ToolSchema.Entity?
    private var rows: [Int64: ToolRecord] = [:]

    private init(path: String, bytes: [UInt8], store: ToolStore) {
        self.path = path
        self.bytes = bytes
        self.store = store
    }

    // MARK: The walk's steps

    /// Every problem is listed, so the list follows the document.
    var order: JSONDocumentWalk.Order { .asWritten }

    mutating func report(_ problem: JSONDocumentProblem) throws(ToolFailure) {
        // A document the tool cannot read is not a store to it; damage that ends the walk is the
        // store's `damage`. The tool words these, and a few others, for its own reports.
        let notAStore = "\(path) is not a Stowage store"
        switch problem {
        case .notJSON(let error):
            store.damage = ToolProblem(
                offset: Self.offset(ofLine: error.line, column: error.column, in: bytes), message: problem.message)
            store.damageLine = (error.line, error.column)
        case .notAnObject(let found):
            throw ToolFailure(.notAStore, "\(notAStore): it is \(found), not an object")
        case .noFormat:
            throw ToolFailure(.notAStore, "\(notAStore): it has no \"format\": \"\(JSONDocument.formatName)\" member")
        case .version(.integer(let version)?):
            throw ToolFailure(
                .notAStore,
                "\(path) is stowage-json version \(version); this tool reads versions "
                    + "\(JSONDocument.readableVersions.lowerBound) to \(JSONDocument.readableVersions.upperBound)")
        case .version:
            throw ToolFailure(.notAStore, "\(path): the stowage-json document has no integer \"version\"")
        case .storeIdentifier:
            store.damage = ToolProblem(offset: nil, message: "storeIdentifier must be a non-empty string")
        case .schema(let reason):
            store.damage = ToolProblem(offset: nil, message: "the schema does not read: \(reason.message)")
        case .records:
            store.damage = ToolProblem(offset: nil, message: "records must be an object")
        case .repeatedEntity(let name):
            add("records has the entity \"\(name)\" twice")
        case .field(let entity, let key, let field, .relationship(let destination, _, let found)):
            add(
                .field(
                    entity: entity, key: key, field: field, .value("a relationship to \(destination) holds \(found)")))
        case .field(let entity, let key, let field, .notAnIdentifier(let destination, _)):
            add(
                .field(
                    entity: entity, key: key, field: field,
                    .value("a to-many relationship must hold \(destination) identifiers")))
        default:
            add(problem)
        }
    }

    mutating func history(_ entries: [HistoryEntry], next: Int64) {
        store.history = entries
    }

    mutating func version(_ version: Int64) {
        store.formatVersion = Int(version)
    }

    mutating func header(storeIdentifier: String, nextPrimaryKey: Int64?) {
        store.storeIdentifier = storeIdentifier
        storedNextKey = nextPrimaryKey ?? 1
    }

    mutating func schema(_ stored: StoredSchema) {
        let schema = ToolSchema(stored)
        store.schema = schema
        for entity in schema.entities where entities[entity.name] == nil {
            entities[entity.name] = Self.reading(entity)
        }
    }

    func entity(named name: String) -> JSONDocumentWalk.Entity? { entities[name] }

    mutating func beginRecords(of entity: String, count: Int) {
        self.entity = store.schema?.entity(named: entity)
        rows = [:]
    }

    /// Values are checked once the record is whole (``record(_:values:reported:)``), the
    /// ones filled in for missing fields with the rest.
    func field(_ value: SnapshotValue, at position: Int, named field: String, key: Int64) -> String? { nil }

    mutating func record(_ key: Int64, values: [SnapshotValue], reported: [Int]) {
        guard let entity, let identifier = store.storeIdentifier else { return }
        for (index, property) in entity.properties.enumerated() where !reported.contains(index) {
            if let message = ToolValueChecker.check(values[index], property, storeIdentifier: identifier) {
                add(.field(entity: entity.name, key: key, field: property.name, .value(message)))
            }
        }
        rows[key] = ToolRecord(key: key, values: values, offset: nil)
    }

    mutating func endRecords() {
        guard let entity else { return }
        store.records[entity.name] = rows.keys.sorted().map { rows[$0]! }
    }

    mutating func end(maximumKey: Int64) {
        for entity in store.schema?.entities ?? [] where store.records[entity.name] == nil {
            store.records[entity.name] = []
        }
        store.nextPrimaryKey = max(storedNextKey, maximumKey &+ 1)
    }

    // MARK: Helpers

    private mutating func add(_ problem: JSONDocumentProblem) { add(problem.message) }

    private mutating func add(_ message: String) {
        store.problems.append(ToolProblem(offset: nil, message: message))
    }

    /// How a stored entity's records read: each field by the first property of its name;
    /// a record may lack a relationship (to-many: empty) or an optional value.
    private static func reading(_ entity: ToolSchema.Entity) -> JSONDocumentWalk.Entity {
        var positions: [String: Int] = [:]
        for (position, property) in entity.properties.enumerated() where positions[property.name] == nil {
            positions[property.name] = position
        }
        let properties = entity.properties.map { property in
            let missing: SnapshotValue? =
                property.isRelationship && property.isToMany
                ? .array([]) : property.isOptional || property.isRelationship ? .null : nil
            return JSONDocumentWalk.Entity.Property(
                name: property.name, typeName: property.typeName, destination: property.destination,
                isToMany: property.isToMany, missing: missing)
        }
        return JSONDocumentWalk.Entity(properties: properties, positions: positions)
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
