import Foundation
import Synchronization

extension Schema {
    /// One model class as the schema sees it: its stored properties in declaration order,
    /// and its indexes and uniqueness constraints.
    public final class Entity: Sendable, CustomStringConvertible {
        /// The entity's name: the class name, without its module or enclosing types.
        public let name: String
        /// Every stored property, attributes and relationships, in declaration order.
        /// Snapshots hold their values in this order.
        public let properties: [PropertyMetadata]
        /// The attributes, in declaration order.
        public var attributes: [PropertyMetadata] { properties.filter { !$0.isRelationship } }
        /// The relationships, in declaration order.
        public var relationships: [PropertyMetadata] { properties.filter(\.isRelationship) }
        /// Property-name groups from `#Unique` and `@Attribute(.unique)`.
        public let uniquenessConstraints: [[String]]
        /// Property-name groups from `#Index`.
        public let indices: [[String]]
        /// The model class.
        // A metatype is immutable; only its static members are called.
        nonisolated(unsafe) public let modelType: any PersistentModel.Type

        /// `\Model.persistentModelID`, made once.
        nonisolated(unsafe) let persistentModelIDKeyPath: AnyKeyPath
        /// How each property's snapshot value becomes a slot, in schema order.
        let slotKinds: [SlotKind]
        /// The scope of the entity's temporary identifiers.
        let temporaryScope: IdentifierScope
        /// The positions of the relationships, so that per-model loops over them do not
        /// copy every property's metadata.
        let relationshipIndices: [Int]
        /// The property names in schema order.
        let propertyNames: [String]
        /// The to-many relationships with a `minimumModelCount` or `maximumModelCount`
        /// (other than 0, which means no bound), checked when a model is saved.
        let countBounds: [CountBound]

        /// A to-many relationship's bounds on how many models it holds.
        struct CountBound: Sendable {
            let index: Int
            let name: String
            /// At least this many (0: no lower bound). An optional relationship may also
            /// hold none.
            let minimum: Int
            /// At most this many (0: no upper bound).
            let maximum: Int
            let isOptional: Bool
        }
        /// For an entity of attributes only, each of a type with fast conversions: the check
        /// that a stored value decodes. A model of such an entity keeps the values it was
        /// fetched with and decodes each on read (`ModelBackingData`). `nil` otherwise.
        let lazyChecks: [PropertyCodec.CaseCheck]?
        /// For each property, whether its values convert fast (a common type, no
        /// transformer): a model stores such a value encoded as soon as it is written.
        let fastConversions: [Bool]

        enum SlotKind: Sendable {
            case attribute(@Sendable (SnapshotValue) throws -> Any, @Sendable (Any) throws -> SnapshotValue)
            case toOne
            case toMany
        }
        let indexByName: [String: Int]
        // Key paths are immutable values; the map is never mutated after init.
        nonisolated(unsafe) let indexByKeyPath: [AnyKeyPath: Int]
        private let inverseCache = PosixMutex<[Int: InverseInfo?]>([:])
        /// Key path objects that property accessors passed, by identity. A key path literal
        /// is one object per call site, so after its first access an accessor finds its
        /// property by pointer instead of hashing the key path's components on every
        /// read. Each entry keeps its key path alive, so that its address cannot be reused
        /// by another; at most 512 are kept.
        private let keyPathObjects = PosixMutex<[KeyPathObject: HeldKeyPath]>([:])

        /// A key path object's address, hashed with one mix instead of `Hasher`.
        private struct KeyPathObject: Hashable {
            let id: ObjectIdentifier
            func _rawHashValue(seed: Int) -> Int {
                keyHash(UInt64(UInt(bitPattern: id)), seed: seed)
            }
        }

        /// A key path and its property's position. Key paths are immutable.
        private struct HeldKeyPath: @unchecked Sendable {
            let keyPath: AnyKeyPath
            let index: Int
        }

        /// The position of the stored property `keyPath` names.
        func index(forKeyPath keyPath: AnyKeyPath) -> Int? {
            let object = KeyPathObject(id: ObjectIdentifier(keyPath))
            if let index = keyPathObjects.withLock({ $0[object]?.index }) { return index }
            guard let index = indexByKeyPath[keyPath] else { return nil }
            keyPathObjects.withLock { cache in
                if cache.count < 512 { cache[object] = HeldKeyPath(keyPath: keyPath, index: index) }
            }
            return index
        }

        /// The inverse of a relationship: the destination's property that points back.
        struct InverseInfo: Sendable {
            let entity: Entity
            let property: PropertyMetadata
        }

        /// The inverse of the relationship at `index`: the one it declares, or the
        /// destination relationship that declares this one as its inverse.
        func inverse(ofPropertyAt index: Int) -> InverseInfo? {
            if let cached = inverseCache.withLock({ $0[index] }) { return cached }
            let property = properties[index]
            var result: InverseInfo?
            if let relationship = property.relationship, let destinationType = relationship.destinationType {
                let destination = EntityRegistry.entity(for: destinationType)
                if let declared = relationship.inverseKeyPath {
                    result = destination.property(for: declared).map { InverseInfo(entity: destination, property: $0) }
                } else if let inferred = destination.properties.first(where: {
                    $0.relationship?.inverseKeyPath == property.keypath
                }) {
                    result = InverseInfo(entity: destination, property: inferred)
                }
            }
            inverseCache.withLock { $0[index] = .some(result) }
            return result
        }

        /// The name of the entity this one inherits from (model inheritance): its model
        /// class's superclass, when that is a model class. Stowage's own; the same as
        /// `superentity?.name`.
        public let superentityName: String?
        /// The entity this one inherits from. Its properties come first in this entity's,
        /// at the same positions, so a predicate, a sort or an index over them reads a
        /// record of either entity alike.
        public let superentity: Entity?

        /// The properties this entity inherits from its superentity: the first of
        /// ``properties``.
        public var inheritedProperties: [PropertyMetadata] {
            Array(properties.prefix(superentity?.properties.count ?? 0))
        }

        /// The key path a model's accessor hands Observation for the property at `index`:
        /// that of the class that declares it, an ancestor's for an inherited property.
        func observedKeyPath(at index: Int) -> AnyKeyPath {
            var declaring = self
            while let base = declaring.superentity, index < base.properties.count { declaring = base }
            return declaring.properties[index].keypath
        }

        /// ``inheritedProperties`` by name.
        public var inheritedPropertiesByName: [String: PropertyMetadata] {
            Dictionary(inheritedProperties.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        }

        /// Whether this entity is `other` or inherits from it.
        public func isKind(of other: Entity) -> Bool {
            var current: Entity? = self
            while let entity = current {
                if entity === other || entity.name == other.name { return true }
                current = entity.superentity
            }
            return false
        }

        init(
            name: String, modelType: any PersistentModel.Type, properties: [PropertyMetadata],
            indices: [[AnyKeyPath]], uniqueness: [[AnyKeyPath]], superentity: Entity? = nil
        ) {
            self.name = name
            self.superentity = superentity
            self.superentityName = superentity?.name
            self.modelType = modelType
            self.temporaryScope = .interned(entityName: name, storeIdentifier: nil, isTemporary: true)
            self.persistentModelIDKeyPath = modelType._persistentModelIDKeyPath
            self.slotKinds = properties.map { p in
                if let relationship = p.relationship { return relationship.isToOne ? .toOne : .toMany }
                return .attribute(p.decode, p.encode)
            }
            var props = properties
            for i in props.indices { props[i].index = i }
            self.properties = props
            self.relationshipIndices = props.indices.filter { props[$0].isRelationship }
            self.propertyNames = props.map(\.name)
            self.countBounds = props.compactMap { p in
                guard let relationship = p.relationship, !relationship.isToOne else { return nil }
                let minimum = max(0, relationship.minimumModelCount ?? 0)
                let maximum = max(0, relationship.maximumModelCount ?? 0)
                guard minimum > 0 || maximum > 0 else { return nil }
                return CountBound(
                    index: p.index, name: p.name, minimum: minimum, maximum: maximum, isOptional: p.isOptional)
            }
            let checks = props.compactMap { $0.isRelationship ? nil : $0.caseCheck }
            self.lazyChecks = checks.count == props.count ? checks : nil
            self.fastConversions = props.map { !$0.isRelationship && $0.caseCheck != nil }
            var byName: [String: Int] = [:]
            var byKeyPath: [AnyKeyPath: Int] = [:]
            for (i, p) in props.enumerated() {
                byName[p.name] = i
                byKeyPath[p.keypath] = i
            }
            // A superclass's key paths (`\Base.name`) name the same properties here: its
            // accessors, predicates and sorts written against the base, and its
            // `#Index` and `#Unique`, which a subclass inherits.
            var ancestor = superentity
            while let base = ancestor {
                for (keyPath, i) in base.indexByKeyPath where byKeyPath[keyPath] == nil {
                    if let own = byName[base.properties[i].name] { byKeyPath[keyPath] = own }
                }
                ancestor = base.superentity
            }
            self.indexByName = byName
            self.indexByKeyPath = byKeyPath
            func names(_ group: [AnyKeyPath]) -> [String] {
                group.compactMap { kp in byKeyPath[kp].map { props[$0].name } }
            }
            var unique = uniqueness.map(names).filter { !$0.isEmpty }
            for p in props where p.attribute?.options.contains(.unique) == true {
                if !unique.contains([p.name]) { unique.append([p.name]) }
            }
            self.uniquenessConstraints = unique
            self.indices = indices.map(names).filter { !$0.isEmpty }
        }

        /// The property called `name`.
        /// - Complexity: O(1).
        public func property(named name: String) -> PropertyMetadata? {
            indexByName[name].map { properties[$0] }
        }

        /// The property a key path of the model class names.
        /// - Complexity: O(1).
        public func property(for keyPath: AnyKeyPath) -> PropertyMetadata? {
            index(forKeyPath: keyPath).map { properties[$0] }
        }

        /// The position of the property called `name`. A model's initializer sets its
        /// properties in declaration order, so the search starts at `guess` and usually
        /// compares one short string, instead of hashing it.
        func propertyIndex(named name: String, guess: Int) -> Int? {
            if guess >= 0, guess < propertyNames.count, propertyNames[guess] == name { return guess }
            return indexByName[name]
        }

        var fingerprint: String {
            let props = properties.map { p in
                "\(p.name):\(p.typeName)\(p.isOptional ? "?" : "")"
                    + (p.relationship.map { "->\($0.destination)[\($0.isToOne ? "1" : "n")]" } ?? "")
            }
            let inherits = superentityName.map { ":" + $0 } ?? ""
            return "\(name)\(inherits){\(props.joined(separator: ","))} unique\(uniquenessConstraints) index\(indices)"
        }

        /// `Entity(Name)`.
        public var description: String { "Entity(\(name))" }
    }
}

/// Builds each model type's entity once and caches it.
enum EntityRegistry {
    private static let cache = PosixMutex<[ObjectIdentifier: Schema.Entity]>([:])

    /// An entity some schema of this process built, by name.
    static func built(named name: String) -> Schema.Entity? {
        cache.withLock { $0.values.first { $0.name == name } }
    }

    static func entity(for type: any PersistentModel.Type) -> Schema.Entity {
        let key = ObjectIdentifier(type)
        if let cached = cache.withLock({ $0[key] }) { return cached }
        let entity = Schema.Entity(
            name: type._stowageEntityName,
            modelType: type,
            properties: type.schemaMetadata,
            indices: type._stowageIndexes,
            uniqueness: type._stowageUniqueness,
            superentity: type._stowageSuperentityType.map { EntityRegistry.entity(for: $0) })
        return cache.withLock { cache in
            if let raced = cache[key] { return raced }
            cache[key] = entity
            return entity
        }
    }
}
