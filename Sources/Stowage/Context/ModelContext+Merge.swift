import Foundation
import Observation
import Synchronization

// MARK: - Seeing other contexts' saves
//
// When a context saves, every other live context of the same container is handed the
// identifiers the save updated and deleted, into a queue of its own (its `Link`'s
// `mergeQueue`), and a flag is raised. The saving context touches nothing else of another
// context: contexts, like SwiftData's, may live on other threads or actors. A context
// applies its queue itself, on its own thread, the next time it is used: a read or write
// of one of its models' properties, or a fetch, save, `model(for:)`, `registeredModel(for:)`,
// `delete` or `processPendingChanges()`.
//
// Applying reads the records again from the store, for the identifiers this context has
// registered. A model with no unsaved changes takes the stored values. A model with unsaved
// changes takes the stored values of the properties this context did not write, and keeps
// the ones it wrote (policy: the local value of a property wins until this context saves or
// rolls back; then the last save wins). A record the store no longer has was deleted: its
// model leaves this context, with `isDeleted` set, unsaved changes or not. A container with
// a single context pays one relaxed atomic load per save.

/// The changes other contexts saved that a context has yet to bring into its models.
struct PendingMerge: Sendable {
    /// Identifiers of records another context's save updated or deleted.
    var identifiers: [PersistentIdentifier] = []
    /// Whether so many were queued that the context refreshes every model it has instead:
    /// a context nobody uses while another saves large changes holds at most
    /// ``PendingMerge/capacity`` identifiers.
    var refreshAll = false

    static let capacity = 1 << 16

    var isEmpty: Bool { identifiers.isEmpty && !refreshAll }

    mutating func add(_ ids: [PersistentIdentifier]) {
        guard !refreshAll else { return }
        if identifiers.count + ids.count > Self.capacity {
            identifiers = []
            refreshAll = true
        } else {
            identifiers.append(contentsOf: ids)
        }
    }
}

/// The live contexts of one container, which a save hands its changes to.
final class ContextDirectory: Sendable {
    /// The live contexts' links, held strongly: a context takes its own out when it goes
    /// (`ModelContext`'s `deinit`). A weak reference would give every link a side table,
    /// and every model registered or freed retains or releases its context's link: the
    /// side table made those the runtime's slow path (single-row saves took about a tenth
    /// longer in stowage-bench).
    private let links = PosixMutex<[ModelContext.Link]>([])
    /// How many contexts are live: a save looks at this alone when it is the only one.
    private let count = Atomic<Int>(0)

    func add(_ link: ModelContext.Link) {
        links.withLock { $0.append(link) }
        count.add(1, ordering: .relaxed)
    }

    func remove(_ link: ModelContext.Link) {
        links.withLock { list in
            if let index = list.firstIndex(where: { $0 === link }) { list.remove(at: index) }
        }
        count.subtract(1, ordering: .relaxed)
    }

    /// Whether any context but the one saving could have models to bring up to date.
    var hasOthers: Bool { count.load(ordering: .relaxed) > 1 }

    /// Queues `ids`, which a save of `source`'s context updated or deleted, for every
    /// other live context.
    func post(_ ids: [PersistentIdentifier], from source: ModelContext.Link) {
        guard !ids.isEmpty else { return }
        let others = links.withLock { list in list.filter { $0 !== source } }
        for link in others {
            link.mergeQueue.withLock { $0.add(ids) }
            // Raised after the identifiers are in: a context that sees it takes them under
            // the same lock.
            link.mergePending.store(true, ordering: .releasing)
        }
    }
}

extension ModelContext {
    /// Brings in other contexts' saves, if any are waiting: one relaxed atomic load when
    /// none are.
    @inline(__always)
    func applyPendingMerges() {
        if link.mergePending.load(ordering: .relaxed) { mergeOtherSaves() }
    }

    /// Brings the models this context has up to date with the saves other contexts of the
    /// container made since it last looked.
    @inline(never)
    func mergeOtherSaves() {
        link.mergePending.store(false, ordering: .relaxed)
        let pending = link.mergeQueue.withLock { queue in
            let taken = queue
            queue = PendingMerge()
            return taken
        }
        guard !pending.isEmpty else { return }
        var candidates: [PersistentIdentifier] = []
        if pending.refreshAll {
            candidates = registered.identifiers
            candidates.append(contentsOf: changedOrder)
            candidates.append(contentsOf: deletedOrder)
        } else {
            candidates = pending.identifiers
        }
        // The models this context has of them: refreshed whole if they have no unsaved
        // changes, property by property if they have.
        var seen = Set<PersistentIdentifier>()
        var refresh: [(PersistentIdentifier, any PersistentModel)] = []
        var changed: [(PersistentIdentifier, any PersistentModel)] = []
        for id in candidates where !id.isTemporary && seen.insert(id).inserted {
            if let model = changedModels[id] ?? deletedModels[id] {
                changed.append((id, model))
            } else if let model = registered[id] {
                refresh.append((id, model))
            }
        }
        guard !refresh.isEmpty || !changed.isEmpty else { return }
        // A store that cannot read the records now leaves the models as they are.
        guard let snapshots = try? loadSnapshots(refresh.map(\.0) + changed.map(\.0)) else { return }
        // Models let go here are freed after the accesses below (see `changedModels`).
        var released: [any PersistentModel] = []
        for (id, model) in refresh {
            if let snapshot = snapshots[id] {
                Self.applyMerged(snapshot, to: model)
            } else {
                forgetDeletedElsewhere(id, model, released: &released)
            }
        }
        // Unsaved changes stay, unless the record is gone: another context's delete wins.
        for (id, model) in changed {
            if let snapshot = snapshots[id] {
                // A model deleted here stays deleted; a changed one takes what it did not write.
                if deletedModels[id] == nil { Self.applyMerged(snapshot, to: model, keepingWritten: true) }
            } else {
                forgetDeletedElsewhere(id, model, released: &released)
            }
        }
        withExtendedLifetime(released) {}
    }

    /// Takes a model whose record another context deleted out of this context, and drops
    /// any unsaved change or delete of it here.
    private func forgetDeletedElsewhere(
        _ id: PersistentIdentifier, _ model: any PersistentModel, released: inout [any PersistentModel]
    ) {
        if let dropped = changedModels.removeValue(forKey: id) {
            changedOrder.removeAll { $0 == id }
            released.append(dropped)
        }
        if let dropped = deletedModels.removeValue(forKey: id) {
            deletedOrder.removeAll { $0 == id }
            released.append(dropped)
        }
        registered[id] = nil
        let data = model.persistentBackingData
        data.context = nil
        data.isDeleted = true
        released.append(model)
    }

    /// Replaces a model's values with the stored ones in `snapshot`, or with
    /// `keepingWritten` only those of the properties this context did not write, telling
    /// the observers of each property whose value changes, if anyone may observe the model.
    static func applyMerged(_ snapshot: DefaultSnapshot, to model: any PersistentModel, keepingWritten: Bool = false) {
        let data = model.persistentBackingData
        let observation = model._stowageObservation
        if observation == nil, !keepingWritten {
            try? data.apply(snapshot)
            return
        }
        // A model whose values cannot be compared is replaced whole, or left alone if it
        // has unsaved changes.
        guard let old = try? data.snapshot(), old.values.count == snapshot.values.count,
            old.values.count == data.entity.properties.count
        else {
            if !keepingWritten { try? data.apply(snapshot) }
            return
        }
        let changed = snapshot.values.indices.filter {
            (!keepingWritten || !data.wasWritten($0)) && old.values[$0] != snapshot.values[$0]
        }
        guard !changed.isEmpty else { return }
        if let observation {
            for index in changed {
                model.observationEvent(data.entity.observedKeyPath(at: index), observation.registrar, willSet: true)
            }
        }
        if keepingWritten {
            data.takeStoredValues(snapshot, at: changed)
        } else {
            try? data.apply(snapshot)
        }
        if let observation {
            for index in changed {
                model.observationEvent(data.entity.observedKeyPath(at: index), observation.registrar, willSet: false)
            }
        }
    }
}

extension PersistentModel {
    /// Tells `registrar`'s observers of the property `keyPath` names that it is about to
    /// change (`willSet`) or has changed. The key path is the one the property's accessor
    /// hands Observation: for a property a model class inherits, its superclass's
    /// (``Schema/Entity/observedKeyPath(at:)``), whose root is that superclass.
    func observationEvent(_ keyPath: AnyKeyPath, _ registrar: ObservationRegistrar, willSet: Bool) {
        func notify<Subject: Observable>(_ subject: Subject, _ root: PartialKeyPath<Subject>) {
            func open<Member>(_: Member.Type) {
                guard let typed = root as? KeyPath<Subject, Member> else { return }
                if willSet {
                    registrar.willSet(subject, keyPath: typed)
                } else {
                    registrar.didSet(subject, keyPath: typed)
                }
            }
            _openExistential(type(of: root).valueType, do: open)
        }
        if let root = keyPath as? PartialKeyPath<Self> {
            notify(self, root)
            return
        }
        func asRoot<Root: Observable>(_: Root.Type) {
            guard let subject = self as? Root, let root = keyPath as? PartialKeyPath<Root> else { return }
            notify(subject, root)
        }
        guard let rootType = type(of: keyPath).rootType as? any Observable.Type else { return }
        _openExistential(rootType, do: asRoot)
    }
}
