import IndexKey

/// The store's side of ``JSONDocumentWalk``: it reads a document's records with the
/// container's schema into a ``SnapshotTable``, and stops at the first problem, which
/// becomes the open's error (``JSONDocument/Problem``).
///
/// Beyond the walk's checks it decodes each attribute as its Swift type, compares the
/// stored schema with the container's (converting records where no migration is needed),
/// and, once every record is read, checks that relationships point at live records and
/// that no two records break a uniqueness constraint.
struct JSONTableLoader: JSONDocumentVisitor {
    typealias Failure = JSONDocument.Problem

    /// A relationship's target, checked once every record is read.
    private struct Reference {
        let entity: String
        let key: Int64
        let field: String
        let destination: String
        let target: Int64
    }

    private let model: Schema
    private let options: SchemaConversion.Options
    private var storeIdentifier = ""
    private var storedNextKey: Int64 = 1
    private var maximumKey: Int64 = 0
    /// Uniqueness constraints the container's schema has and the stored one lacks.
    private var addedUniqueness: [String: [[String]]] = [:]
    private var entities: [String: JSONDocumentWalk.Entity] = [:]
    /// Entities the store has and the schema drops: they must hold no record.
    private var dropped: Set<String> = []
    /// The first difference between the stored schema and the container's, for messages.
    private var difference = ""
    private var live: [String: [Int64: DefaultSnapshot]] = [:]
    private var references: [Reference] = []
    /// The entity whose records are being read, and its records so far.
    private var entityName = ""
    private var properties: [Schema.PropertyMetadata] = []
    private var rows: [Int64: DefaultSnapshot] = [:]

    init(schema: Schema, options: SchemaConversion.Options = .init()) {
        model = schema
        self.options = options
    }

    // MARK: The walk's steps

    /// The first problem is the error, so a repeated name is reported ahead of the rest.
    var order: JSONDocumentWalk.Order { .namesFirst }

    func report(_ problem: JSONDocumentProblem) throws(JSONDocument.Problem) {
        throw JSONDocument.Problem(problem.code, problem.message)
    }

    mutating func header(storeIdentifier: String, nextPrimaryKey: Int64?) {
        self.storeIdentifier = storeIdentifier
        storedNextKey = nextPrimaryKey ?? 1
    }

    mutating func schema(_ stored: StoredSchema) throws(JSONDocument.Problem) {
        // The JSON store keeps external-storage values inline: that flag is not part of its schema.
        // Indexes (`#Index`) and uniqueness constraints may differ: they are built from the
        // records (which must then hold no duplicates), and the next save writes the schema's.
        // So may whatever else needs no migration plan (`SchemaConversion`): each record is
        // read by the stored names and takes the new properties' values.
        let described = StoredSchema(model).withoutExternalFlags
        var conversion: SchemaConversion?
        if let difference = stored.difference(from: described) {
            if !stored.differsOnlyInIndexes(from: described) {
                do {
                    conversion = try SchemaConversion.make(from: stored, to: described, schema: model, options: options)
                } catch {
                    throw JSONDocument.Problem(
                        .schemaMismatch,
                        "the schema does not match the store's: \(difference); it needs a migration: \(error.reason)")
                }
            }
            addedUniqueness = stored.addedUniqueness(in: described)
            self.difference = difference
        }
        entities = Self.entities(of: model, stored: stored, conversion: conversion)
        // An entity the schema drops reads, so that its records, if any, can be refused.
        for name in conversion?.droppedEntities ?? [] {
            entities[name] = JSONDocumentWalk.Entity(properties: [], positions: [:])
            dropped.insert(name)
        }
    }

    func entity(named name: String) -> JSONDocumentWalk.Entity? { entities[name] }

    mutating func beginRecords(of entity: String, count: Int) throws(JSONDocument.Problem) {
        if dropped.contains(entity), count > 0 {
            throw JSONDocument.Problem(
                .schemaMismatch,
                "the schema does not match the store's: \(difference); it needs a migration: "
                    + SchemaConversion.refusal(dropping: entity, records: count))
        }
        entityName = entity
        properties = model.entitiesByName[entity]?.properties ?? []
        rows = [:]
        rows.reserveCapacity(count)
    }

    /// Decodes an attribute as its Swift type; notes a relationship's targets.
    mutating func field(_ value: SnapshotValue, at position: Int, named field: String, key: Int64) -> String? {
        // The property is read in place, a member at a time, not copied: the open does this for
        // every value of the document.
        if let destination = properties[position].relationship?.destination {
            let targets: [SnapshotValue]
            if case .array(let items) = value { targets = items } else { targets = [value] }
            for case .identifier(let id) in targets {
                guard let target = id.primaryKey else { continue }
                references.append(
                    Reference(entity: entityName, key: key, field: field, destination: destination, target: target))
            }
            return nil
        }
        if value.isNull && !properties[position].isOptional {
            return "null, but \(properties[position].typeName) is not optional"
        }
        do {
            _ = try properties[position].decode(value)
        } catch {
            return "\(value.kindName) \(value) is not a valid \(properties[position].typeName) (\(error))"
        }
        return nil
    }

    mutating func record(_ key: Int64, values: [SnapshotValue], reported: [Int]) {
        rows[key] = DefaultSnapshot(
            persistentIdentifier: .permanent(entityName: entityName, storeIdentifier: storeIdentifier, primaryKey: key),
            values: values)
    }

    mutating func endRecords() {
        live[entityName] = rows
        rows = [:]
    }

    mutating func end(maximumKey: Int64) { self.maximumKey = maximumKey }

    /// The history the document keeps (version 2); a version 1 document has none.
    var history: (entries: [HistoryEntry], next: Int64)?

    mutating func history(_ entries: [HistoryEntry], next: Int64) { history = (entries, next) }

    // MARK: After the walk

    /// Every relationship names a live record of its destination.
    func checkReferences() throws(JSONDocument.Problem) {
        for reference in references where live[reference.destination]?[reference.target] == nil {
            throw .corrupt(
                "\(reference.entity) record \(reference.key), field \"\(reference.field)\": it points at "
                    + "\(reference.destination) \(reference.target), which does not exist")
        }
    }

    /// The records read, as a table of the container's schema.
    func table() -> SnapshotTable {
        var table = SnapshotTable(schema: model, storeIdentifier: storeIdentifier)
        table.bulkLoad(live)
        table.nextPrimaryKey = max(storedNextKey, maximumKey + 1)
        table.history = history?.entries
        table.nextHistoryTransaction = history?.next ?? 1
        return table
    }

    /// Two records with equal values for a uniqueness constraint collapse into one index
    /// entry; find them and say which.
    func checkUniqueness(of table: SnapshotTable) throws(JSONDocument.Problem) {
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
            if addedUniqueness[broken.entity]?.contains(names) == true {
                throw JSONDocument.Problem(
                    .schemaMismatch,
                    "the schema adds a uniqueness constraint the records break: \(which)"
                        + "which must be unique")
            }
            throw .corrupt(which + "which must be unique (field \"\(names.first ?? "")\")")
        }
    }

    // MARK: Reading by the container's schema

    /// How each of the container's entities reads: by its properties' names, or, for one
    /// the conversion covers, by the stored names, with the new properties' values for
    /// the fields a record cannot have.
    private static func entities(
        of schema: Schema, stored: StoredSchema, conversion: SchemaConversion?
    ) -> [String: JSONDocumentWalk.Entity] {
        var result: [String: JSONDocumentWalk.Entity] = [:]
        for entity in schema.entitiesByName.values {
            let properties = entity.properties.map { property in
                let isToMany = property.relationship.map { !$0.isToOne } ?? false
                // A to-many relationship a record lacks is empty, an optional value or to-one nil.
                return JSONDocumentWalk.Entity.Property(
                    name: property.name, typeName: property.typeName, destination: property.relationship?.destination,
                    isToMany: isToMany, missing: isToMany ? .array([]) : property.isOptional ? .null : nil)
            }
            result[entity.name] = JSONDocumentWalk.Entity(properties: properties, positions: entity.indexByName)
        }
        guard let conversion else { return result }
        for storedEntity in stored.entities {
            guard let sources = conversion.entities[storedEntity.name], var entity = result[storedEntity.name] else {
                continue
            }
            entity.positions = [:]
            for (position, source) in sources.enumerated() {
                switch source {
                case .stored(let from): entity.positions[storedEntity.properties[from].name] = position
                case .value(let value): entity.properties[position].missing = value
                }
            }
            entity.dropped = Set(storedEntity.properties.map(\.name).filter { entity.positions[$0] == nil })
            result[storedEntity.name] = entity
        }
        return result
    }
}
