import Foundation

/// Undo and redo of a context's changes through its ``ModelContext/undoManager``.
///
/// Before a model first changes in an undo group (a property or relationship written,
/// the model inserted or deleted, an inverse kept in step, a cascade), the context keeps
/// its state: its values and whether it was absent, a pending insert, or saved (changed or
/// not). The group's one undo action puts every model it touched back in that state, and
/// registers the states it replaced as the redo. Inverses come back with the models on
/// the other side, which the same group touched.
///
/// As in SwiftData, undoing after a save makes new unsaved changes: a model inserted and
/// saved is deleted, a saved change is written back as a change. The undo manager's
/// groups are the undo steps; on Linux, where no run loop closes them,
/// ``processPendingChanges()`` closes the group changes opened (see ``UndoManager``).
///
/// Where Stowage differs: bringing back a model whose delete was saved inserts it anew,
/// with a new identifier; relationships of other models to its old identifier are not
/// restored. Changes other contexts made and this one merged are not undone.
extension ModelContext {
    /// The undo bookkeeping of a context.
    struct UndoState {
        /// The group being recorded: the states of the models it touched, before.
        var current: UndoCapture?
        /// The manager's checkpoint count when `current` began: a checkpoint (a group
        /// opened or closed, an undo, a redo) ends it.
        var currentCheckpoint = -1
        let counter = CheckpointCounter()
        var checkpoints: Int { counter.value }
        var checkpointObserver: (any NSObjectProtocol)?
        /// Whether an undo or redo is putting models back, which records nothing itself.
        var isRestoring = false
    }

    /// The manager's checkpoints, counted by a notification observer. `@unchecked
    /// Sendable`: the manager posts on the thread that works with it and the context.
    final class CheckpointCounter: @unchecked Sendable {
        var value = 0
    }

    /// Where a model was, for undo.
    enum UndoPresence {
        /// Not in the context: never inserted, or deleted.
        case absent
        /// A pending insert.
        case inserted
        /// A saved model the context has; `changed` when it had unsaved changes.
        case saved(changed: Bool)
    }

    /// One model's state at the start of an undo group.
    struct UndoModelState {
        let model: any PersistentModel
        let values: ModelBackingData.UndoValues
        let presence: UndoPresence
        let saveGeneration: Int
    }

    /// The states an undo or redo puts back, keyed by backing data.
    final class UndoCapture {
        var order: [ObjectIdentifier] = []
        var states: [ObjectIdentifier: UndoModelState] = [:]
    }

    func undoManagerChanged(from old: UndoManager?) {
        if let observer = undo.checkpointObserver { NotificationCenter.default.removeObserver(observer) }
        undo = UndoState()
        link.recordsUndo = undoManager != nil
        guard let manager = undoManager else { return }
        // A checkpoint of the manager ends the group of changes being recorded.
        let counter = undo.counter
        undo.checkpointObserver = NotificationCenter.default.addObserver(
            forName: .NSUndoManagerCheckpoint, object: manager, queue: nil
        ) { _ in
            counter.value &+= 1
        }
    }

    /// Keeps `model`'s state before its first change in the current undo group.
    func captureForUndo(_ model: any PersistentModel) {
        guard !undo.isRestoring, let manager = undoManager, manager.isUndoRegistrationEnabled else { return }
        let capture: UndoCapture
        if let current = undo.current, undo.currentCheckpoint == undo.checkpoints {
            capture = current
        } else {
            capture = UndoCapture()
            undo.current = capture
            manager.registerUndo(withTarget: self) { context in context.restoreForUndo(capture) }
            // Registering may open a group, a checkpoint that belongs to this capture.
            undo.currentCheckpoint = undo.checkpoints
        }
        let data = model.persistentBackingData
        let key = ObjectIdentifier(data)
        guard capture.states[key] == nil else { return }
        capture.order.append(key)
        capture.states[key] = state(of: model)
    }

    /// Keeps the state of a model about to be deleted and of every model its `.cascade`
    /// rules will delete at the save, so that the delete and its cascade are one undo step,
    /// as when SwiftData processes the pending changes.
    func captureDeleteForUndo(_ model: any PersistentModel) {
        var seen: Set<ObjectIdentifier> = []
        var pending = [model]
        while let next = pending.popLast() {
            let data = next.persistentBackingData
            guard seen.insert(ObjectIdentifier(data)).inserted else { continue }
            captureForUndo(next)
            for property in data.entity.properties where property.relationship?.deleteRule == .cascade {
                pending.append(contentsOf: data.resolvedModels(at: property.index))
            }
        }
    }

    func state(of model: any PersistentModel) -> UndoModelState {
        let data = model.persistentBackingData
        let id = data.persistentModelID
        let presence: UndoPresence
        if data.isRegistered(in: self), !data.isDeleted {
            presence = id.isTemporary ? .inserted : .saved(changed: changedModels[id] != nil)
        } else {
            presence = .absent
        }
        return UndoModelState(model: model, values: data.undoValues, presence: presence, saveGeneration: saveGeneration)
    }

    /// Puts the models of `capture` back in its states, and registers the states it
    /// replaced as the opposite action (a redo while undoing, an undo while redoing).
    func restoreForUndo(_ capture: UndoCapture) {
        applyPendingMerges()
        let replaced = UndoCapture()
        undo.isRestoring = true
        var restored: [(any PersistentModel, _ModelObservation)] = []
        for key in capture.order {
            guard let target = capture.states[key] else { continue }
            replaced.order.append(key)
            replaced.states[key] = state(of: target.model)
            if let observation = target.model._stowageObservation { restored.append((target.model, observation)) }
        }
        for (model, observation) in restored {
            let entity = model.persistentBackingData.entity
            for index in entity.properties.indices {
                model.observationEvent(entity.observedKeyPath(at: index), observation.registrar, willSet: true)
            }
        }
        var renewed: [PersistentIdentifier: any PersistentModel] = [:]
        for key in capture.order {
            guard let target = capture.states[key] else { continue }
            let before = target.model.persistentModelID
            put(target)
            if !before.isTemporary, target.model.persistentModelID != before { renewed[before] = target.model }
        }
        if !renewed.isEmpty {
            // Models whose saved delete this brings back are new models now: the models
            // brought back with them refer to them anew.
            for key in capture.order {
                capture.states[key]?.model.persistentBackingData.replaceReferences(renewed)
            }
        }
        undo.isRestoring = false
        for (model, observation) in restored {
            let entity = model.persistentBackingData.entity
            for index in entity.properties.indices {
                model.observationEvent(entity.observedKeyPath(at: index), observation.registrar, willSet: false)
            }
        }
        undo.current = nil
        undoManager?.registerUndo(withTarget: self) { context in context.restoreForUndo(replaced) }
        changeCount &+= 1
        scheduleAutosave()
    }

    /// Puts one model back in `target`'s state: its values, then where it was.
    private func put(_ target: UndoModelState) {
        let model = target.model
        let data = model.persistentBackingData
        data.restore(target.values)
        let savedSince = target.saveGeneration != saveGeneration
        switch target.presence {
        case .absent:
            makeAbsent(model)
        case .inserted:
            if data.persistentModelID.isTemporary {
                makeInserted(model)
            } else {
                // Saved since: the model exists, now with the values it had then.
                makeSaved(model, changed: true)
            }
        case .saved(let changed):
            makeSaved(model, changed: changed || savedSince)
        }
    }

    private func makeAbsent(_ model: any PersistentModel) {
        let data = model.persistentBackingData
        let id = data.persistentModelID
        guard data.isRegistered(in: self) else { return }
        if id.isTemporary {
            removeInserted(id)
            data.context = nil
            return
        }
        if deletedModels[id] != nil { return }
        if changedModels.removeValue(forKey: id) != nil { changedOrder.removeAll { $0 == id } }
        deletedModels[id] = model
        deletedOrder.append(id)
        pending.noteDelete(id)
        data.isDeleted = true
    }

    private func makeInserted(_ model: any PersistentModel) {
        let data = model.persistentBackingData
        let id = data.persistentModelID
        data.isDeleted = false
        if data.isRegistered(in: self), insertedModel(for: id) != nil { return }
        appendInserted(model, id)
        data.context = self
    }

    private func makeSaved(_ model: any PersistentModel, changed: Bool) {
        let data = model.persistentBackingData
        var id = data.persistentModelID
        data.isDeleted = false
        if deletedModels.removeValue(forKey: id) != nil {
            deletedOrder.removeAll { $0 == id }
        } else if !data.isRegistered(in: self) && !id.isTemporary {
            // Its delete was saved: the record is gone, so the model comes back as new.
            data.forgetIdentifier()
            id = data.persistentModelID
            makeInserted(model)
            return
        }
        if id.isTemporary {
            makeInserted(model)
            return
        }
        registered[id] = model
        data.context = self
        if changed {
            if changedModels.updateValue(model, forKey: id) == nil { changedOrder.append(id) }
            pending.noteWrite(id, bits: .max)
        } else if changedModels.removeValue(forKey: id) != nil {
            changedOrder.removeAll { $0 == id }
        }
    }

    /// Ends the undo group that changes opened by themselves, where no run loop does: the
    /// next change starts the next undo step.
    func closeUndoEvent() {
        #if !canImport(ObjectiveC)
            undoManager?.closeImplicitGroup()
        #endif
        undo.current = nil
    }
}
