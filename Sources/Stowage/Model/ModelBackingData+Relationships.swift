import Foundation

extension ModelBackingData {
    func references(at index: Int) -> [RelatedReference] {
        switch slot(index) {
        case .toOne(let ref): ref.map { [$0] } ?? []
        case .toMany(let refs): refs
        default: []
        }
    }

    /// Replaces the references at `index`, and gives the bit of ``writtenProperties`` it
    /// set for the first time, if any, for ``ModelContext/modelDidChange(_:newlyWritten:)``.
    @discardableResult
    func setReferences(_ refs: [RelatedReference], at index: Int, owner: any PersistentModel) -> UInt16 {
        willChange(owner)
        ensureSlots()
        let bit = Self.writtenBit(index)
        let newlyWritten = bit & ~writtenProperties
        writtenProperties |= bit
        if entity.properties[index].relationship?.isToOne == true {
            slots[index] = .toOne(refs.first)
        } else {
            slots[index] = .toMany(refs)
        }
        return newlyWritten
    }

    /// Resolves a reference to its model: the model itself, or the one the context has or
    /// fetches for the identifier. Deleted and missing models resolve to `nil`.
    func resolve(_ ref: RelatedReference) -> (any PersistentModel)? {
        switch ref {
        case .model(let model):
            return model.persistentBackingData.isDeleted ? nil : model
        case .id(let id):
            guard let context, let model = context.resolveModel(for: id) else { return nil }
            context.keepResolved(model)
            return model
        }
    }

    func resolvedModels(at index: Int) -> [any PersistentModel] {
        references(at: index).compactMap { resolve($0) }
    }

    func relatedModels<Value: PersistentModel>(_ keyPath: AnyKeyPath, as type: Value.Type, owner: any PersistentModel)
        -> [Value]
    {
        bindIfNeeded(owner)
        let index = index(of: keyPath)
        return resolvedModels(at: index).compactMap { $0 as? Value }
    }

    /// Replaces a relationship's models and keeps the inverse side in step at once, as
    /// SwiftData does: models that left get their back-reference cleared, models that
    /// joined get it set (and leave their previous owner).
    func setRelated<Value: PersistentModel>(_ keyPath: AnyKeyPath, _ models: [Value], owner: any PersistentModel) {
        bindIfNeeded(owner)
        let index = index(of: keyPath)
        var unique: [any PersistentModel] = []
        var seen: Set<PersistentIdentifier> = []
        for model in models where seen.insert(model.persistentModelID).inserted {
            unique.append(model)
        }
        let old = references(at: index)
        let oldIDs = Set(old.map(\.id))
        let written = setReferences(unique.map(RelatedReference.init), at: index, owner: owner)
        context?.modelDidChange(owner, newlyWritten: written)
        if let context {
            for model in unique
            where model.persistentBackingData.context == nil && !model.persistentBackingData.isDeleted {
                context.insert(model)
            }
        }
        guard entity.inverse(ofPropertyAt: index) != nil else { return }
        for ref in old where !seen.contains(ref.id) {
            if let model = resolve(ref) {
                unlinkInverse(of: index, on: model, from: persistentModelID)
            }
        }
        for model in unique where !oldIDs.contains(model.persistentModelID) {
            linkInverse(of: index, on: model, to: owner)
        }
    }

    /// Makes `model`'s inverse of relationship `index` point at `owner`.
    func linkInverse(of index: Int, on model: any PersistentModel, to owner: any PersistentModel) {
        guard let inverse = entity.inverse(ofPropertyAt: index) else { return }
        let other = model.persistentBackingData
        let q = inverse.property.index
        let ownerID = persistentModelID
        var written: UInt16 = 0
        if inverse.property.relationship?.isToOne == true {
            if let previous = other.references(at: q).first, previous.id != ownerID {
                // The model leaves its previous owner's relationship.
                if let previousOwner = other.resolve(previous) {
                    let prev = previousOwner.persistentBackingData
                    let written = prev.setReferences(
                        prev.references(at: index).filter { $0.id != model.persistentModelID }, at: index,
                        owner: previousOwner)
                    prev.context?.modelDidChange(previousOwner, newlyWritten: written)
                }
            }
            written = other.setReferences([RelatedReference(owner)], at: q, owner: model)
        } else {
            var refs = other.references(at: q)
            if !refs.contains(where: { $0.id == ownerID }) {
                refs.append(RelatedReference(owner))
                written = other.setReferences(refs, at: q, owner: model)
            }
        }
        other.context?.modelDidChange(model, newlyWritten: written)
        if let context, other.context == nil, !other.isDeleted {
            context.insert(model)
        } else if let otherContext = other.context, context == nil, !isDeleted {
            // The owner joins the context of the model it now relates to.
            otherContext.insert(owner)
        }
    }

    /// Removes `ownerID` from `model`'s inverse of relationship `index`.
    func unlinkInverse(of index: Int, on model: any PersistentModel, from ownerID: PersistentIdentifier) {
        guard let inverse = entity.inverse(ofPropertyAt: index) else { return }
        let other = model.persistentBackingData
        let q = inverse.property.index
        let refs = other.references(at: q)
        guard refs.contains(where: { $0.id == ownerID }) else { return }
        let written = other.setReferences(refs.filter { $0.id != ownerID }, at: q, owner: model)
        other.context?.modelDidChange(model, newlyWritten: written)
    }

    /// Lets go of the unsaved models this one refers to, for a pending insert its context
    /// discarded (``ModelContext/rollback()``, or the context going away unsaved).
    ///
    /// A relationship holds an unsaved model itself, and its inverse holds this one, so
    /// unsaved related models hold each other: without this, a discarded object graph would
    /// never be freed. A saved model is held by identifier, and stays.
    func dropUnsavedReferences() {
        for index in entity.relationshipIndices where index < slots.count {
            switch slots[index] {
            case .toOne(.some(.model)):
                slots[index] = .toOne(nil)
            case .toMany(let refs) where refs.contains(where: \.isModel):
                slots[index] = .toMany(refs.filter { !$0.isModel })
            default:
                break
            }
        }
    }

    /// Rewrites references to models that now have permanent identifiers as identifiers.
    func settleReferences() {
        for index in entity.relationshipIndices where index < slots.count {
            switch slots[index] {
            case .toOne(.some(.model(let model))) where !model.persistentModelID.isTemporary:
                slots[index] = .toOne(.id(model.persistentModelID))
            case .toMany(let refs) where refs.contains(where: { if case .model = $0 { true } else { false } }):
                slots[index] = .toMany(
                    refs.map { ref in
                        if case .model(let model) = ref, !model.persistentModelID.isTemporary {
                            return .id(model.persistentModelID)
                        }
                        return ref
                    })
            default:
                break
            }
        }
    }
}
