import Foundation

// What undo keeps of a model: its values as the backing data holds them, taken before a
// change and put back by an undo (`ModelContext+Undo.swift`).
extension ModelBackingData {
    /// The model's values and the state around them, as they were at a moment.
    struct UndoValues {
        let slots: [Slot]
        let encodedValues: [SnapshotValue]
        let unsetValues: UInt64
        let writtenProperties: UInt16
        let isDeleted: Bool
        let pendingInverses: [Int]
    }

    /// Tells the model's context, when it keeps an undo manager, that the model is about
    /// to change, so that it keeps the model's state before the change. One load and a
    /// test when the context keeps none.
    @inline(__always)
    func willChange(_ owner: any PersistentModel) {
        if let link = contextLink, link.recordsUndo { link.context?.captureForUndo(owner) }
    }

    var undoValues: UndoValues {
        UndoValues(
            slots: slots, encodedValues: encodedValues, unsetValues: unsetValues,
            writtenProperties: writtenProperties, isDeleted: isDeleted, pendingInverses: pendingInverses)
    }

    func restore(_ values: UndoValues) {
        slots = values.slots
        encodedValues = values.encodedValues
        unsetValues = values.unsetValues
        writtenProperties = values.writtenProperties
        isDeleted = values.isDeleted
        pendingInverses = values.pendingInverses
    }

    /// Rewrites references to the identifiers in `renewed` as references to their models.
    func replaceReferences(_ renewed: [PersistentIdentifier: any PersistentModel]) {
        for index in entity.relationshipIndices where index < slots.count {
            switch slots[index] {
            case .toOne(.some(let ref)):
                if let model = renewed[ref.id] { slots[index] = .toOne(.model(model)) }
            case .toMany(let refs) where refs.contains(where: { renewed[$0.id] != nil }):
                slots[index] = .toMany(refs.map { ref in renewed[ref.id].map { .model($0) } ?? ref })
            default:
                break
            }
        }
    }

    /// Makes the model a new one again, with a temporary identifier: an undo that brings
    /// back a model whose delete was saved inserts it anew.
    func forgetIdentifier() {
        assignedID = nil
    }
}
