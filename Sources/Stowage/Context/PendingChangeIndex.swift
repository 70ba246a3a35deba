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
    var insertedEntities: Set<String> = []
    /// Entities with changed models.
    var changedEntities: Set<String> = []
    /// Entities with pending deletes.
    var deletedEntities: Set<String> = []
    /// Changed models by entity, under each bit of ``ModelBackingData/writtenProperties``
    /// they set.
    var written: [String: [[PersistentIdentifier]]] = [:]

    var isEmpty: Bool { insertedEntities.isEmpty && changedEntities.isEmpty && deletedEntities.isEmpty }

    /// Notes that the changed model `id` set the written bits `bits`.
    mutating func noteWrite(_ id: PersistentIdentifier, bits: UInt16) {
        guard bits != 0 else { return }
        let entity = id.entityName
        changedEntities.insert(entity)
        var lists = written.removeValue(forKey: entity) ?? Array(repeating: [], count: 16)
        var remaining = bits
        while remaining != 0 {
            let bit = remaining.trailingZeroBitCount
            lists[bit].append(id)
            remaining &= remaining - 1
        }
        written[entity] = lists
    }

    /// The changed models of `entity` that set any of `bits`, each once (stale ones too).
    func changed(in entity: String, writing bits: UInt16) -> [PersistentIdentifier] {
        guard bits != 0, let lists = written[entity] else { return [] }
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
        guard !isEmpty || !written.isEmpty else { return }
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
