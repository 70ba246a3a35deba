import Foundation

/// A context's small indexes of its unsaved changes, so that a fetch merges only the
/// changes that can affect it: the entities with pending inserts, changes or deletes, and
/// the changed models under each property they wrote. A fetch whose predicate and sort read
/// `id` looks at the models that wrote `id`, not at every changed model.
///
/// The sets and lists are supersets: they grow as changes are made and are emptied by a
/// save or a rollback, not when a change goes away another way (an undo, a delete of a
/// changed model, another context's delete). A fetch checks each candidate against the
/// context's lists, so a stale entry costs a look-up and changes nothing.
struct PendingChangeIndex {
    /// Entities with pending inserts.
    private(set) var insertedEntities: Set<String> = []
    /// Entities with changed models.
    private(set) var changedEntities: Set<String> = []
    /// Entities with pending deletes.
    private(set) var deletedEntities: Set<String> = []
    /// Changed models by entity (a few, searched in order), under each bit of
    /// ``ModelBackingData/writtenProperties`` they set.
    private var written: [(entity: String, lists: [[PersistentIdentifier]])] = []
    /// The entity of the last insert: an import inserts one entity's models one after
    /// another, and comparing a name with the same string is cheaper than hashing it.
    private var lastInserted: String?

    /// Pending inserts by the stored value of one attribute, for each (entity, property)
    /// a fetch has asked for: an import that looks rows up by a key finds the inserts with
    /// that key without testing every insert. Built on the first such fetch, then kept as
    /// models are inserted and written; a superset (a model is listed under every value it
    /// has had), so a fetch still tests each candidate.
    private(set) var insertsByValue: [InsertKey: [SnapshotValue: [PersistentIdentifier]]] = [:]

    struct InsertKey: Hashable {
        let entity: String
        let property: Int
    }

    var isEmpty: Bool { insertedEntities.isEmpty && changedEntities.isEmpty && deletedEntities.isEmpty }

    /// Lists the pending insert `id`, whose stored values are `values`, in the value indexes
    /// of its entity.
    mutating func noteInsertedValues(_ id: PersistentIdentifier, _ values: [SnapshotValue]) {
        guard !insertsByValue.isEmpty else { return }
        // The keys first: changing the table while its `keys` view holds it copied the whole
        // index on every insert.
        let keys = insertsByValue.keys.filter { $0.entity == id.entityName && $0.property < values.count }
        for key in keys {
            insertsByValue[key, default: [:]][values[key.property], default: []].append(id)
        }
    }

    /// Whether a value index of `entity`'s pending inserts exists, so that writes to them
    /// must be noted.
    func indexesInserts(of entity: String) -> Bool {
        !insertsByValue.isEmpty && insertsByValue.keys.contains { $0.entity == entity }
    }

    /// The pending inserts of `entity` listed under `value` of the property at `property`,
    /// building the index from `all` (every pending insert of the entity, with its values)
    /// the first time.
    mutating func inserts(
        of entity: String, property: Int, equalTo value: SnapshotValue,
        all: () throws -> [(PersistentIdentifier, [SnapshotValue])]
    ) rethrows -> [PersistentIdentifier] {
        let key = InsertKey(entity: entity, property: property)
        if insertsByValue[key] == nil {
            var index: [SnapshotValue: [PersistentIdentifier]] = [:]
            for (id, values) in try all() where property < values.count {
                index[values[property], default: []].append(id)
            }
            insertsByValue[key] = index
        }
        return insertsByValue[key]?[value] ?? []
    }

    mutating func noteInsert(_ id: PersistentIdentifier) {
        let entity = id.entityName
        if entity == lastInserted { return }
        insertedEntities.insert(entity)
        lastInserted = entity
    }

    mutating func noteDelete(_ id: PersistentIdentifier) {
        deletedEntities.insert(id.entityName)
    }

    /// Notes that the changed model `id` set the written bits `bits`.
    mutating func noteWrite(_ id: PersistentIdentifier, bits: UInt16) {
        guard bits != 0 else { return }
        let entity = id.entityName
        var slot = written.firstIndex { $0.entity == entity }
        if slot == nil {
            changedEntities.insert(entity)
            written.append((entity, Array(repeating: [], count: 16)))
            slot = written.count - 1
        }
        guard let slot else { return }
        var remaining = bits
        while remaining != 0 {
            let bit = remaining.trailingZeroBitCount
            written[slot].lists[bit].append(id)
            remaining &= remaining - 1
        }
    }

    /// The changed models of `entity` that set any of `bits`, each once (stale ones too).
    func changed(in entity: String, writing bits: UInt16) -> [PersistentIdentifier] {
        guard bits != 0, let lists = written.first(where: { $0.entity == entity })?.lists else { return [] }
        if bits.nonzeroBitCount == 1 { return lists[bits.trailingZeroBitCount] }
        var seen = Set<PersistentIdentifier>()
        var result: [PersistentIdentifier] = []
        var remaining = bits
        while remaining != 0 {
            let bit = remaining.trailingZeroBitCount
            for id in lists[bit] where seen.insert(id).inserted { result.append(id) }
            remaining &= remaining - 1
        }
        return result
    }

    mutating func removeAll() {
        guard !isEmpty || !written.isEmpty || lastInserted != nil || !insertsByValue.isEmpty else { return }
        self = PendingChangeIndex()
    }
}

extension FetchQuery {
    /// The bits of ``ModelBackingData/writtenProperties`` for the properties the predicate
    /// and the sort read: a changed model that set none of them matches and sorts as its
    /// saved record does. Every bit when the predicate reads other models or the record
    /// as a whole.
    var writtenBitsRead: UInt16 {
        var bits: UInt16 = 0
        if let predicate {
            let columns = CompiledPredicate.columns(predicate, root: rootVariable)
            if columns.isAll { return .max }
            var mask = columns.mask
            while mask != 0 {
                bits |= ModelBackingData.writtenBit(mask.trailingZeroBitCount)
                mask &= mask - 1
            }
            // Positions from 64 on are always read.
            bits |= 0x8000
        }
        for key in sort { bits |= ModelBackingData.writtenBit(key.index) }
        return bits
    }
}

extension FetchQuery {
    /// The property and the constant of an equality the predicate requires of the record
    /// under test (itself, or one side of an `&&`), when the constant is a string, UUID or
    /// integer: values whose `==` and hashing agree with the predicate's equality.
    var requiredEquality: (property: Int, value: SnapshotValue)? {
        guard let predicate else { return nil }
        func find(_ e: QueryExpression) -> (Int, SnapshotValue)? {
            switch e {
            case .and(let a, let b): return find(a) ?? find(b)
            case .compare(.equal, .property(.variable(let v), _, let index, _), .constant(let c)),
                .compare(.equal, .constant(let c), .property(.variable(let v), _, let index, _)):
                guard v == rootVariable else { return nil }
                switch c {
                case .string, .uuid, .int: return (index, c)
                default: return nil
                }
            default: return nil
            }
        }
        return find(predicate)
    }
}

extension FetchQuery {
    /// Whether the predicate reads models other than the record under test, through
    /// relationships (or the record in a way that is not one of its own properties).
    var readsOtherModels: Bool {
        guard let predicate else { return false }
        return CompiledPredicate.columns(predicate, root: rootVariable).isAll
    }
}
