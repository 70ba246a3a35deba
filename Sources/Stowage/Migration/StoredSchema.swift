import Foundation

/// The schema as a disk store records it: each entity's properties (name, type name,
/// optional, relationship destination and kind, external storage), uniqueness constraints
/// and indexes, and the schema's version. The log store keeps it in its header record
/// (`Formats/log.md`), the JSON store in its `schema` member (`Formats/json.md`). Opening
/// compares it with the container's schema to decide what needs converting
/// (``SchemaConversion``).
///
/// `flags` keeps the log's bit layout (bit 0 optional, bit 1 relationship, bit 2 to-one,
/// bit 3 external storage), which both stores share.
package struct StoredSchema: Equatable, Sendable {
    package struct Property: Equatable, Sendable {
        package var name: String
        package var typeName: String
        package var flags: UInt8
        package var destination: String?

        package init(name: String, typeName: String, flags: UInt8, destination: String?) {
            self.name = name
            self.typeName = typeName
            self.flags = flags
            self.destination = destination
        }

        var summary: String {
            "\(name): \(typeName)\(flags & 1 != 0 ? "?" : "")"
                + (destination.map { " -> \($0)\(flags & 4 != 0 ? "" : "[]")" } ?? "")
                + (isExternal ? " (external storage)" : "")
        }

        /// Flag bit 3 (format version 2): an `.externalStorage` attribute.
        package var isExternal: Bool { flags & 8 != 0 }
    }

    package struct Entity: Equatable, Sendable {
        package var name: String
        package var properties: [Property]
        package var uniqueness: [[String]]
        package var indices: [[String]]
        /// The entity it inherits from (model inheritance): log format version 7, JSON
        /// format version 3. `nil` for an entity that inherits from none, and for every
        /// entity of an older file, which does not record it.
        package var superentity: String?

        package init(
            name: String, properties: [Property], uniqueness: [[String]], indices: [[String]],
            superentity: String? = nil
        ) {
            self.name = name
            self.properties = properties
            self.uniqueness = uniqueness
            self.indices = indices
            self.superentity = superentity
        }
    }

    package var version: [UInt64]
    package var entities: [Entity]

    package init(version: [UInt64], entities: [Entity]) {
        self.version = version
        self.entities = entities
    }

    package init(_ schema: Schema) {
        version = [schema.version.major, schema.version.minor, schema.version.patch].map { UInt64(clamping: $0) }
        entities = schema.entities.map { entity in
            Entity(
                name: entity.name,
                properties: entity.properties.map { p in
                    var flags: UInt8 = p.isOptional ? 1 : 0
                    if let relationship = p.relationship {
                        flags |= 2
                        if relationship.isToOne { flags |= 4 }
                    } else if p.attribute?.options.contains(.externalStorage) == true {
                        flags |= 8
                    }
                    return Property(
                        name: p.name, typeName: p.typeName, flags: flags, destination: p.relationship?.destination)
                },
                uniqueness: entity.uniquenessConstraints, indices: entity.indices, superentity: entity.superentityName)
        }
    }

    /// Whether any entity inherits from another: such a description is written as log
    /// format version 7 and JSON format version 3.
    package var hasSuperentities: Bool { entities.contains { $0.superentity != nil } }

    /// The description without superentities, as a file of an older format version
    /// records it.
    package var withoutSuperentities: StoredSchema {
        var copy = self
        for e in copy.entities.indices { copy.entities[e].superentity = nil }
        return copy
    }

    /// `live` as this stored description compares with it: a description that records no
    /// superentity (an older file, or one written before the app's classes inherited from
    /// each other) is compared without them. An entity's records are its own either way,
    /// so a class that gains a model superclass whose properties its records already hold
    /// opens as it is.
    func comparable(_ live: StoredSchema) -> StoredSchema {
        hasSuperentities ? live : live.withoutSuperentities
    }

    /// Whether any attribute is kept in external files.
    var hasExternalValues: Bool { entities.contains { $0.properties.contains(where: \.isExternal) } }

    /// The description without flag bit 3, as a version 1 file stores it.
    var withoutExternalFlags: StoredSchema {
        var copy = self
        for e in copy.entities.indices {
            for p in copy.entities[e].properties.indices { copy.entities[e].properties[p].flags &= ~8 }
        }
        return copy
    }

    /// This description with the external flags of `live` (same entities and properties).
    func withExternalFlags(of live: StoredSchema) -> StoredSchema {
        var copy = self
        let wanted = Dictionary(live.entities.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        for e in copy.entities.indices {
            guard let other = wanted[copy.entities[e].name] else { continue }
            for p in copy.entities[e].properties.indices where p < other.properties.count {
                copy.entities[e].properties[p].flags |= other.properties[p].flags & 8
            }
        }
        return copy
    }

    /// This description with each entity's indexes (`#Index`) and uniqueness constraints
    /// (`#Unique`, `@Attribute(.unique)`) as `live` has them, where `live` has the entity.
    func withIndexes(of live: StoredSchema) -> StoredSchema {
        var copy = self
        let wanted = Dictionary(live.entities.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        for e in copy.entities.indices {
            guard let other = wanted[copy.entities[e].name] else { continue }
            copy.entities[e].indices = other.indices
            copy.entities[e].uniqueness = other.uniqueness
        }
        return copy
    }

    /// Whether `live` differs from this description in its indexes or uniqueness
    /// constraints alone, if at all.
    func differsOnlyInIndexes(from live: StoredSchema) -> Bool {
        withIndexes(of: live).difference(from: comparable(live)) == nil
    }

    /// The uniqueness constraints `live` has and this description does not, by entity name:
    /// those need the records checked before they can be trusted.
    func addedUniqueness(in live: StoredSchema) -> [String: [[String]]] {
        var added: [String: [[String]]] = [:]
        let stored = Dictionary(entities.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        for entity in live.entities {
            let new = entity.uniqueness.filter { !(stored[entity.name]?.uniqueness.contains($0) ?? false) }
            if !new.isEmpty { added[entity.name] = new }
        }
        return added
    }

    /// The first difference between the stored schema (`self`) and `live`, or `nil` when
    /// they match. Entity order does not matter.
    package func difference(from live: StoredSchema) -> String? {
        let live = comparable(live)
        if version != live.version {
            return "the store holds schema version \(version.map(String.init).joined(separator: ".")), "
                + "the container's is \(live.version.map(String.init).joined(separator: "."))"
        }
        let stored = Dictionary(entities.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        let wanted = Dictionary(live.entities.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        if let missing = live.entities.first(where: { stored[$0.name] == nil }) {
            return "the store has no entity \(missing.name)"
        }
        if let extra = entities.first(where: { wanted[$0.name] == nil }) {
            return "the store has an entity \(extra.name) that the schema lacks"
        }
        for entity in entities {
            guard let other = wanted[entity.name], other != entity else { continue }
            if entity.superentity != other.superentity {
                return "\(entity.name) inherits from \(entity.superentity ?? "no entity") in the store "
                    + "but from \(other.superentity ?? "no entity") in the schema"
            }
            if entity.properties != other.properties {
                for i in 0..<max(entity.properties.count, other.properties.count) {
                    let a = i < entity.properties.count ? entity.properties[i].summary : "nothing"
                    let b = i < other.properties.count ? other.properties[i].summary : "nothing"
                    if a != b
                        || (i < entity.properties.count && i < other.properties.count
                            && entity.properties[i] != other.properties[i])
                    {
                        return "\(entity.name) property \(i + 1) is \(a) in the store but \(b) in the schema"
                    }
                }
            }
            if entity.uniqueness != other.uniqueness {
                return "\(entity.name) has uniqueness constraints \(entity.uniqueness) in the store "
                    + "but \(other.uniqueness) in the schema"
            }
            return "\(entity.name) has indexes \(entity.indices) in the store but \(other.indices) in the schema"
        }
        return nil
    }
}
