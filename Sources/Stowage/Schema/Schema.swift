import Foundation

/// The entities a container stores: one per model class, with their properties,
/// relationships, indexes and uniqueness constraints.
///
/// Build one from model types (`Schema([Trip.self, Item.self])`) or from a
/// ``VersionedSchema``. A schema is immutable and `Sendable`.
public final class Schema: Sendable, Hashable, CustomStringConvertible {
    /// The schema's entities, in the order their types were given.
    public let entities: [Entity]
    /// The entities by name.
    public let entitiesByName: [String: Entity]
    /// The schema's version.
    public let version: Version
    /// Whether any entity bounds a relationship's count, which every save then checks.
    let boundsRelationshipCounts: Bool
    /// The entities some relationship points to.
    let relationshipDestinations: Set<String>
    /// For each entity with subentities in the schema, every entity that inherits from
    /// it, at any depth, in schema order.
    let descendantsByName: [String: [Entity]]

    /// The error for a model type or entity the schema does not have. For a subclass of a
    /// model class the schema has, it says that the subclass must be listed: Swift on
    /// Linux cannot list a class's subclasses at run time, so registering the base class
    /// alone, as SwiftData allows, does not bring them.
    func unknownModelType(_ entityName: String) -> SwiftDataError {
        var ancestor = EntityRegistry.built(named: entityName)?.superentity
        while let base = ancestor {
            if entitiesByName[base.name] != nil {
                return SwiftDataError(
                    .unknownModelType,
                    "\(entityName) is a subclass of \(base.name), but is not in the container's schema: "
                        + "list \(entityName) in the schema or the container's model types (Swift on Linux cannot "
                        + "find a model class's subclasses at run time, so registering \(base.name) does not bring it)")
            }
            ancestor = base.superentity
        }
        return SwiftDataError(.unknownModelType, "\(entityName) is not in the container's schema")
    }

    /// For each entity of a hierarchy, the other entities a uniqueness constraint of theirs
    /// shares with it: a constraint declared on a common ancestor covers both, so a value
    /// one of them holds is taken for the other too.
    let uniquenessPeers: [String: [UniquenessPeer]]

    /// Another entity of the same hierarchy and the constraints both have from a common
    /// ancestor, as positions in each one's ``Entity/uniquenessConstraints``.
    struct UniquenessPeer: Sendable {
        let entity: Entity
        let shared: [(mine: Int, theirs: Int)]
    }

    static func uniquenessPeers(_ entities: [Entity]) -> [String: [UniquenessPeer]] {
        func ancestors(_ entity: Entity) -> [Entity] {
            var chain: [Entity] = []
            var current: Entity? = entity
            while let e = current {
                chain.append(e)
                current = e.superentity
            }
            return chain
        }
        var result: [String: [UniquenessPeer]] = [:]
        for entity in entities
        where entity.superentity != nil || entities.contains(where: { $0.superentity === entity }) {
            let mine = ancestors(entity)
            for other in entities where other !== entity {
                let theirs = ancestors(other)
                guard let common = mine.first(where: { a in theirs.contains { $0 === a } }) else { continue }
                var shared: [(mine: Int, theirs: Int)] = []
                for (i, names) in entity.uniquenessConstraints.enumerated()
                where common.uniquenessConstraints.contains(names) {
                    if let j = other.uniquenessConstraints.firstIndex(of: names) { shared.append((i, j)) }
                }
                if !shared.isEmpty {
                    result[entity.name, default: []].append(UniquenessPeer(entity: other, shared: shared))
                }
            }
        }
        return result
    }

    /// The entities of the schema that inherit from `entity` directly.
    ///
    /// SwiftData has `Schema.Entity.subentities`; Stowage's entities are shared by every
    /// schema that holds their class, so the schema answers instead.
    public func subentities(of entity: Entity) -> [Entity] {
        (descendantsByName[entity.name] ?? []).filter { $0.superentityName == entity.name }
    }

    /// `entity` and, unless `includeSubclasses` is `false`, every entity of the schema
    /// that inherits from it: the tables a fetch of `entity` reads.
    func family(of entity: Entity, includeSubclasses: Bool = true) -> [Entity] {
        guard includeSubclasses, let descendants = descendantsByName[entity.name] else { return [entity] }
        return [entity] + descendants
    }

    /// Creates a schema for `types` and every model type reachable from them through
    /// relationships.
    public init(_ types: [any PersistentModel.Type], version: Version = Version(1, 0, 0)) {
        var ordered: [Entity] = []
        var seen: Set<ObjectIdentifier> = []
        var pending = types
        while !pending.isEmpty {
            let type = pending.removeFirst()
            guard seen.insert(ObjectIdentifier(type)).inserted else { continue }
            let entity = EntityRegistry.entity(for: type)
            ordered.append(entity)
            // A subclass brings its superclasses: their records are its own kind too.
            if let superclass = type._stowageSuperentityType { pending.append(superclass) }
            for property in entity.properties {
                if let destination = property.relationship?.destinationType {
                    pending.append(destination)
                }
            }
        }
        self.entities = ordered
        var byName: [String: Entity] = [:]
        for entity in ordered where byName[entity.name] == nil {
            byName[entity.name] = entity
        }
        self.entitiesByName = byName
        var family: [String: [Entity]] = [:]
        for entity in ordered where byName[entity.name] === entity {
            var ancestor = entity.superentity
            while let base = ancestor {
                family[base.name, default: []].append(entity)
                ancestor = base.superentity
            }
        }
        self.descendantsByName = family
        self.uniquenessPeers = Self.uniquenessPeers(ordered.filter { byName[$0.name] === $0 })
        self.version = version
        self.boundsRelationshipCounts = ordered.contains { !$0.countBounds.isEmpty }
        self.relationshipDestinations = Set(
            ordered.flatMap { $0.relationships.compactMap { $0.relationship?.destination } })
    }

    /// Creates a schema for `types`.
    public convenience init(_ types: any PersistentModel.Type..., version: Version = Version(1, 0, 0)) {
        self.init(types, version: version)
    }

    /// Creates the schema that a versioned schema describes.
    public convenience init(versionedSchema: any VersionedSchema.Type) {
        self.init(versionedSchema.models, version: versionedSchema.versionIdentifier)
    }

    /// The entity for a model type, if the schema has it.
    /// - Complexity: O(1).
    public func entity<T: PersistentModel>(for type: T.Type) -> Entity? {
        guard let entity = entitiesByName[EntityRegistry.entity(for: type).name],
            entity.modelType == type
        else { return nil }
        return entity
    }

    func entity(forModelType type: any PersistentModel.Type) -> Entity? {
        let name = EntityRegistry.entity(for: type).name
        guard let entity = entitiesByName[name], entity.modelType == type else { return nil }
        return entity
    }

    /// A stable, human-readable description of the schema's shape, used to detect
    /// a schema that does not match a store.
    public var fingerprint: String {
        entities.sorted { $0.name < $1.name }.map(\.fingerprint).joined(separator: "\n")
    }

    /// The version and the entities' names: `Schema(1.0.0): Trip, PackingItem`.
    public var description: String { "Schema(\(version)): " + entities.map(\.name).joined(separator: ", ") }

    /// Whether two schemas have the same version and shape (the same ``fingerprint``).
    public static func == (lhs: Schema, rhs: Schema) -> Bool {
        lhs === rhs || (lhs.version == rhs.version && lhs.fingerprint == rhs.fingerprint)
    }

    /// Hashes the version and the entities' names.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(version)
        hasher.combine(entities.map(\.name))
    }
}

extension Schema {
    /// A schema version: major, minor and patch numbers.
    public struct Version: Hashable, Comparable, Codable, Sendable, CustomStringConvertible {
        /// The major version.
        public let major: Int
        /// The minor version.
        public let minor: Int
        /// The patch version.
        public let patch: Int

        /// The version `major.minor.patch`.
        public init(_ major: Int, _ minor: Int, _ patch: Int) {
            self.major = major
            self.minor = minor
            self.patch = patch
        }

        /// Whether `lhs` is an earlier version: by major, then minor, then patch.
        public static func < (lhs: Version, rhs: Version) -> Bool {
            (lhs.major, lhs.minor, lhs.patch) < (rhs.major, rhs.minor, rhs.patch)
        }

        /// `major.minor.patch`.
        public var description: String { "\(major).\(minor).\(patch)" }
    }
}

extension Schema {
    /// The name of the entity a model type becomes: its class name, without its module or
    /// enclosing types. What a custom store files a fetch's records under.
    public static func entityName(for modelType: any PersistentModel.Type) -> String {
        modelType._stowageEntityName
    }
}
