import Foundation
import Synchronization

/// Tracks models, their changes, and saves them to the container's stores.
///
/// A context keeps an identity map (one object per identifier), records inserts,
/// changes and deletes, keeps relationship inverses in step, and on ``save()`` sends all
/// of it to the store as one atomic request. Like SwiftData's, it is not `Sendable`: use
/// one per actor, and pass ``PersistentIdentifier``s between them.
///
/// The context keeps a model alive only while it has unsaved changes (inserted, changed or
/// deleted), and keeps the last 1024 models reached through saved relationships. A saved
/// or fetched model that the app no longer holds is freed and leaves the identity map;
/// asking for its identifier again loads a new object with the stored values.
/// SwiftData does not document what its contexts retain; this is Core Data's default
/// (`retainsRegisteredObjects` is `false`), and it is why saving during a large import
/// frees memory.
public final class ModelContext {
    /// Posted when the context is about to save its pending inserts, changes and deletes,
    /// with the context as the notification's object and no `userInfo`, as in SwiftData.
    ///
    /// The name's raw value is Stowage's own: SwiftData does not document its value.
    public static let willSave = Notification.Name("StowageModelContextWillSave")
    /// Posted when the context has saved its pending inserts, changes and deletes, with the
    /// context as the notification's object. Its `userInfo` holds the saved models'
    /// identifiers, each a `Set<PersistentIdentifier>`, under ``NotificationKey``
    /// `.insertedIdentifiers` (the permanent identifiers the store gave the inserted
    /// models), `.updatedIdentifiers` and `.deletedIdentifiers` (including the models
    /// that delete rules cascaded to). Every set is there, empty or not.
    ///
    /// A key and its raw value are the same key (see ``NotificationKey``), so code reading
    /// `userInfo[ModelContext.NotificationKey.insertedIdentifiers]` and code reading
    /// `userInfo[ModelContext.NotificationKey.insertedIdentifiers.rawValue]` both find it.
    /// The name's raw value is Stowage's own: SwiftData does not document its value.
    ///
    /// It is posted on the thread that saved, after the other contexts of the container
    /// have been handed the save to merge (see ``processPendingChanges()``).
    public static let didSave = Notification.Name("StowageModelContextDidSave")

    /// The keys of the `userInfo` of a ``didSave`` notification. SwiftData's cases; their
    /// raw values are their names (SwiftData does not document its raw values).
    ///
    /// As an `AnyHashable`, as a dictionary key is, a case is its raw value: `userInfo`
    /// holds each set once, under the raw value, and both `userInfo[key]` and
    /// `userInfo[key.rawValue]` find it. Stowage's own: SwiftData does not say how its
    /// keys are stored.
    public enum NotificationKey: String, Sendable, _HasCustomAnyHashableRepresentation {
        /// The permanent identifiers of the models the save inserted.
        case insertedIdentifiers
        /// The identifiers of the models the save updated.
        case updatedIdentifiers
        /// The identifiers of the models the save deleted, cascades included.
        case deletedIdentifiers
        /// The identifiers of models that were invalidated. Stowage never posts it: a save
        /// invalidates no model (a context brings other contexts' saves into its models
        /// itself, see ``ModelContext/processPendingChanges()``).
        case invalidatedAllIdentifiers
        /// The query generation the context reads. Stowage never posts it: it has no query
        /// generations, as every fetch reads the latest saved state.
        case queryGeneration

        /// The raw value, so that `userInfo[key]` finds what is under `key.rawValue`.
        public func _toCustomAnyHashable() -> AnyHashable? { AnyHashable(rawValue) }
    }

    /// The container.
    ///
    /// The main context does not keep its container (which keeps it); when that container
    /// is gone, this is a new container for the same open stores, whose main context is
    /// this one. Stowage's own: SwiftData does not say how the two hold each other.
    public var container: ModelContainer {
        if let ownContainer { return ownContainer }
        if let mainContainer { return mainContainer }
        let container = ModelContainer(core: core, mainContext: self)
        mainContainer = container
        return container
    }
    /// The schema and the stores, which the context keeps open.
    let core: ModelContainer.Core
    /// The container of an ordinary context, kept by it.
    private let ownContainer: ModelContainer?
    /// The container of the main context, not kept by it.
    private weak var mainContainer: ModelContainer?
    /// Whether the context saves on its own after changes. `true` for the main context.
    ///
    /// SwiftData saves at moments of its choosing (and tests show it can lose recent
    /// changes when an app is stopped). Stowage's autosave schedules a save on the main
    /// queue after the first change; it runs only where the main queue runs. Call
    /// ``save()`` when a change matters.
    public var autosaveEnabled = false
    /// The name recorded with this context's saves.
    public var author: String?
    /// What a save does when an insert collides with a unique constraint. The default,
    /// `.upsert`, is SwiftData's; `.fail` makes the save throw. Stowage's addition.
    public var uniquenessPolicy: UniquenessPolicy = .upsert
    /// The undo manager that records this context's changes, or `nil` (the default) for
    /// none. See `ModelContext+Undo.swift`.
    public var undoManager: UndoManager? {
        didSet { undoManagerChanged(from: oldValue) }
    }
    /// The undo state: the group of changes being recorded, and the manager's checkpoints.
    var undo = UndoState()
    /// Counts this context's saves, so that an undo can tell whether one came between.
    var saveGeneration = 0

    let editingID = UUID()
    /// In a custom migration stage's `didMigrate`: a read-only context on the records as
    /// they were before the stage's conversion (``valuesBeforeMigration(of:as:)``).
    var migrationPredecessor: ModelContext?
    /// The identity map. It does not keep models alive: see ``ModelRegistry``.
    ///
    /// `@exclusivity(unchecked)`: it is read or changed for every model fetched and every
    /// model freed, so the dynamic check would add to every fetched row. No access to it can
    /// overlap another: the registry holds only unowned references, so changing it never
    /// frees a model, whose backing data's `deinit` is the one access from outside.
    @exclusivity(unchecked) var registered = ModelRegistry()
    /// The inserted models' temporary identifiers, in the order of insertion, and the
    /// models, in the same order. A pending insert is not in `registered`: these lists
    /// are its registration (a temporary identifier always means a pending insert, since
    /// a save gives every inserted model a permanent one), and the identity map takes it
    /// under its permanent identifier when the save is done. A million-row insert so
    /// builds no hash table of temporary identifiers that the save throws away.
    ///
    /// `@exclusivity(unchecked)`, as `changedOrder` and `deletedOrder`: every fetch reads
    /// all three (``hasChanges``), so their dynamic checks would add to every fetch.
    /// Each access to them is a read, or a change (append, remove, remove all) that calls
    /// nothing outside the list, so no two can overlap.
    @exclusivity(unchecked) var insertedOrder: [PersistentIdentifier] = []
    var insertedModels: [any PersistentModel] = []
    /// The position of each pending insert in `insertedOrder`, made when a temporary
    /// identifier is first looked up, kept up to date by inserts, and dropped when an
    /// insert leaves the lists (which moves the positions after it).
    var insertedPositions: [PersistentIdentifier: Int]?
    @exclusivity(unchecked) var changedOrder: [PersistentIdentifier] = []
    /// Deletes by predicate that the next save makes without loading the records
    /// (``delete(model:where:includeSubclasses:)``), in the order they were asked for.
    @exclusivity(unchecked) var pendingBatchDeletes: [PendingBatchDelete] = []
    /// Counts models newly changed or deleted, so that `enumerate` can tell whether its
    /// block changed anything.
    @exclusivity(unchecked) var changeCount = 0
    /// The small indexes of the unsaved changes that fetches merge (``PendingChangeIndex``).
    @exclusivity(unchecked) var pending = PendingChangeIndex()
    /// The changed models, which the context keeps alive until they are saved or rolled back.
    ///
    /// `@exclusivity(unchecked)`, with `deletedModels`, `changeCount` and
    /// `autosaveScheduled`: every property write of a fetched model reads or changes all
    /// four, so their dynamic checks would add to every update. No access to
    /// them calls out of the context, and none frees a model: the save and rollback hand
    /// the models they let go to a local copy first, so that no model's `deinit` (which
    /// could be the app's) runs inside an access.
    @exclusivity(unchecked) var changedModels: [PersistentIdentifier: any PersistentModel] = [:]
    @exclusivity(unchecked) var deletedOrder: [PersistentIdentifier] = []
    @exclusivity(unchecked) var deletedModels: [PersistentIdentifier: any PersistentModel] = [:]
    @exclusivity(unchecked) var autosaveScheduled = false
    /// The models most recently reached through a saved relationship, kept alive here a
    /// while. A saved relationship holds identifiers (no reference cycles), and the
    /// identity map keeps no unchanged model alive: without these, a loop over many
    /// items that share a few parents would load each parent again for every item.
    var recentlyResolved: [any PersistentModel] = []
    var recentlyResolvedNext = 0
    static let recentlyResolvedCapacity = 1024
    /// The related models ``FetchDescriptor/relationshipKeyPathsForPrefetching`` loaded,
    /// by the backing data of the model that refers to them: they stay loaded (and
    /// registered) as long as that model lives, as the identity map does not keep them.
    /// `@exclusivity(unchecked)`: every model's deinit reads it, and no access to it calls
    /// out (a removed entry is moved out and freed after the access).
    @exclusivity(unchecked) var prefetchedByOwner: [ObjectIdentifier: [any PersistentModel]] = [:]
    /// Each model type's entity and store, found once (`route(_:)`).
    /// `@exclusivity(unchecked)`: read on every fetch, written only by `route(_:)`, which
    /// calls nothing that could touch it while it writes.
    @exclusivity(unchecked) var routes: [ObjectIdentifier: (Schema.Entity, any DataStore<DefaultSnapshot>)] = [:]
    /// The entity of the last identifier ``entity(of:)`` was asked about, by the identifier's
    /// scope: scopes live for the process, and one names one entity.
    @exclusivity(unchecked) private var lastEntity: (scope: ObjectIdentifier, entity: Schema.Entity)?

    /// The container's entity of `id`, without hashing its name when the last identifier
    /// asked about had the same scope: loading models one by one by identifier looked the
    /// entity up by name for each.
    func entity(of id: PersistentIdentifier) -> Schema.Entity? {
        let scope = ObjectIdentifier(id.scope)
        if let lastEntity, lastEntity.scope == scope { return lastEntity.entity }
        guard let entity = core.schema.entitiesByName[id.entityName] else { return nil }
        lastEntity = (scope, entity)
        return entity
    }

    /// Creates a context for `container`.
    public init(_ container: ModelContainer) {
        self.core = container.core
        self.ownContainer = container
        link.context = self
        core.contexts.add(link)
        for store in core.stores { store.initializeState(for: editingState) }
    }

    /// Creates `container`'s main context, which does not keep `container`.
    init(mainOf container: ModelContainer) {
        self.core = container.core
        self.ownContainer = nil
        self.mainContainer = container
        link.context = self
        core.contexts.add(link)
        for store in core.stores { store.initializeState(for: editingState) }
    }

    deinit {
        // The pending inserts are discarded with the context: they let go of each other, or
        // related ones (each holding the other) would never be freed.
        for model in insertedModels { model.persistentBackingData.dropUnsavedReferences() }
        if let observer = undo.checkpointObserver { NotificationCenter.default.removeObserver(observer) }
        core.contexts.remove(link)
        let state = EditingState(id: editingID, author: author)
        for store in core.stores { store.invalidateState(for: state) }
    }

    /// What the models registered here hold to find their context: one weak reference for
    /// them all. A weak reference in each model would give every model a side table, one
    /// more allocation each.
    ///
    /// `@unchecked Sendable`: another context's save, on any thread, touches only
    /// `mergePending` and `mergeQueue` (``ContextDirectory/post(_:from:)``), an atomic and
    /// a mutex; everything else is the context's own.
    final class Link: @unchecked Sendable {
        weak var context: ModelContext?
        /// Whether another context's save queued identifiers in `mergeQueue`.
        let mergePending = Atomic<Bool>(false)
        /// The identifiers other contexts' saves changed, for this context to merge.
        let mergeQueue = PosixMutex(PendingMerge())
        /// Whether ``enumerate(_:batchSize:allowEscapingMutations:block:)`` is handing a batch
        /// to its block.
        var handsOutBatch = false
        /// Whether the context keeps an undo manager, so that its models tell it before
        /// they change (``ModelContext/undoManager``).
        var recordsUndo = false
        /// The observation registrar that batch's models share, made by the first of them
        /// read (``ModelBackingData/_firstObservation()``): a batch none of whose models is
        /// read makes none.
        var batchObservation: _ModelObservation?
    }
    let link = Link()

    var editingState: EditingState { EditingState(id: editingID, author: author) }

    // MARK: Change state

    /// Whether there are unsaved inserts, changes or deletes.
    public var hasChanges: Bool {
        !insertedOrder.isEmpty || !changedOrder.isEmpty || !deletedOrder.isEmpty || !pendingBatchDeletes.isEmpty
    }

    /// Models inserted since the last save.
    public var insertedModelsArray: [any PersistentModel] { insertedModels }
    /// Models changed since the last save.
    public var changedModelsArray: [any PersistentModel] { changedOrder.compactMap { changedModels[$0] } }
    /// Models deleted since the last save.
    public var deletedModelsArray: [any PersistentModel] { deletedOrder.compactMap { deletedModels[$0] } }

    func hasPendingChanges(_ id: PersistentIdentifier) -> Bool {
        if id.isTemporary { return insertedModel(for: id) != nil }
        return changedModels[id] != nil || deletedModels[id] != nil
    }

    /// The model this context has for `id`: a pending insert for a temporary identifier,
    /// else the identity map's.
    func lookUp(_ id: PersistentIdentifier) -> (any PersistentModel)? {
        id.isTemporary ? insertedModel(for: id) : registered[id]
    }

    /// The pending insert with the temporary identifier `id`.
    /// - Complexity: O(1), after O(*n*) in the pending inserts for the first look-up since
    ///   they last changed.
    func insertedModel(for id: PersistentIdentifier) -> (any PersistentModel)? {
        guard !insertedOrder.isEmpty else { return nil }
        if let insertedPositions { return insertedPositions[id].map { insertedModels[$0] } }
        var positions: [PersistentIdentifier: Int] = Dictionary(minimumCapacity: insertedOrder.count)
        for (position, id) in insertedOrder.enumerated() { positions[id] = position }
        insertedPositions = positions
        return positions[id].map { insertedModels[$0] }
    }

    /// Takes an inserted model out of the pending inserts.
    func removeInserted(_ id: PersistentIdentifier) {
        guard let position = insertedOrder.firstIndex(of: id) else { return }
        insertedOrder.remove(at: position)
        insertedPositions = nil
        insertedModels.remove(at: position)
    }

    /// Records that `model` changed. `newlyWritten` holds the bits of its
    /// ``ModelBackingData/writtenProperties`` this change set for the first time, for the
    /// fetches' index of changes.
    func modelDidChange(_ model: any PersistentModel, newlyWritten: UInt16) {
        let id = model.persistentModelID
        // A pending insert's new value joins the fetches' index of inserts, if it has one.
        if id.isTemporary, pending.indexesInserts(of: id.entityName),
            model.persistentBackingData.isRegistered(in: self),
            let snapshot = try? model.persistentBackingData.snapshot()
        {
            pending.noteInsertedValues(id, snapshot.values)
        }
        // A temporary identifier is a pending insert, which saves whole anyway. The model's
        // backing data names this context as its own only while it is registered here
        // (every unregistering clears it), so the registry is not asked again.
        guard !id.isTemporary, model.persistentBackingData.isRegistered(in: self),
            deletedModels.isEmpty || deletedModels[id] == nil
        else { return }
        if changedModels.updateValue(model, forKey: id) == nil {
            changedOrder.append(id)
            changeCount &+= 1
            // A model that joins the changed ones is indexed under everything it wrote,
            // whatever wrote it before (a relationship, an undo).
            pending.noteWrite(id, bits: model.persistentBackingData.writtenProperties | newlyWritten)
        } else if newlyWritten != 0 {
            pending.noteWrite(id, bits: newlyWritten)
        }
        scheduleAutosave()
    }

    /// Keeps `model`, reached through a relationship, alive among the most recent
    /// ``recentlyResolvedCapacity`` of them.
    func keepResolved(_ model: any PersistentModel) {
        if recentlyResolved.count < Self.recentlyResolvedCapacity {
            recentlyResolved.append(model)
            return
        }
        recentlyResolved[recentlyResolvedNext] = model
        recentlyResolvedNext = (recentlyResolvedNext + 1) % Self.recentlyResolvedCapacity
    }

    func scheduleAutosave() {
        guard autosaveEnabled, !autosaveScheduled, Thread.isMainThread else { return }
        autosaveScheduled = true
        nonisolated(unsafe) let context = self
        DispatchQueue.main.async {
            context.autosaveScheduled = false
            try? context.save()
        }
    }

    // MARK: Insert and delete

    /// Registers a new model (and any unsaved models it relates to) for the next save.
    /// Inserting a model the context already has does nothing.
    public func insert<T: PersistentModel>(_ model: T) {
        insert(model as any PersistentModel)
    }

    func insert(_ model: any PersistentModel) {
        let data = model.persistentBackingData
        let id = data.persistentModelID
        if let existing = data.context, existing !== self { return }
        if link.recordsUndo, !data.isRegistered(in: self) || deletedModels[id] != nil { captureForUndo(model) }
        if !deletedModels.isEmpty, deletedModels[id] != nil {
            // Inserting a deleted model takes the delete back.
            deletedModels[id] = nil
            deletedOrder.removeAll { $0 == id }
            data.isDeleted = false
            registered[id] = model
            return
        }
        if id.isTemporary {
            // A new model: the pending inserts are its registration. Its backing data
            // names this context once it is one of them.
            if data.isRegistered(in: self) { return }
            appendInserted(model, id)
        } else if let previous = registered.updateValue(model, forKey: id) {
            // One hash look-up registers the model and tells whether it was registered.
            if previous !== model { registered[id] = previous }
            return
        }
        data.context = self
        data.isDeleted = false
        data.bindIfNeeded(model)
        for index in data.entity.relationshipIndices {
            for ref in data.references(at: index) {
                if case .model(let related) = ref, related.persistentBackingData.context == nil,
                    !related.persistentBackingData.isDeleted
                {
                    insert(related)
                }
            }
        }
        scheduleAutosave()
    }

    /// Adds `model`, whose identifier `id` is temporary, to the pending inserts, and to the
    /// fetches' index of them (``PendingChangeIndex``).
    func appendInserted(_ model: any PersistentModel, _ id: PersistentIdentifier) {
        insertedPositions?[id] = insertedOrder.count
        insertedOrder.append(id)
        insertedModels.append(model)
        pending.noteInsert(id)
        if pending.indexesInserts(of: id.entityName), let snapshot = try? model.persistentBackingData.snapshot() {
            pending.noteInsertedValues(id, snapshot.values)
        }
    }

    /// Marks a model for deletion at the next save. Deleting an unsaved model discards it.
    /// Delete rules run when the context saves.
    public func delete<T: PersistentModel>(_ model: T) {
        delete(model as any PersistentModel)
    }

    func delete(_ model: any PersistentModel) {
        applyPendingMerges()
        let data = model.persistentBackingData
        let id = data.persistentModelID
        guard data.isRegistered(in: self), deletedModels[id] == nil else { return }
        if link.recordsUndo { captureDeleteForUndo(model) }
        if id.isTemporary {
            removeInserted(id)
            unlinkAll(model)
            data.isDeleted = true
            data.context = nil
            return
        }
        if changedModels.removeValue(forKey: id) != nil { changedOrder.removeAll { $0 == id } }
        deletedModels[id] = model
        deletedOrder.append(id)
        pending.noteDelete(id)
        changeCount &+= 1
        data.isDeleted = true
        scheduleAutosave()
    }

    /// Clears a model's relationships on both sides.
    func unlinkAll(_ model: any PersistentModel) {
        let data = model.persistentBackingData
        for index in data.entity.relationshipIndices {
            for related in data.resolvedModels(at: index) {
                data.unlinkInverse(of: index, on: related, from: data.persistentModelID)
            }
        }
    }

    /// Discards every unsaved change: inserted models leave the context, changed and
    /// deleted ones go back to their saved values.
    ///
    /// The discarded inserts keep their attribute values but no longer refer to each other
    /// (they still refer to saved models). Stowage's own: related unsaved models hold each
    /// other strongly, and without this a discarded graph would never be freed. A context
    /// that goes away with unsaved inserts lets them go in the same way.
    public func rollback() {
        // The discarded inserts leave the context and let go of each other (see `deinit`).
        for model in insertedModels {
            model.persistentBackingData.context = nil
            model.persistentBackingData.dropUnsavedReferences()
        }
        var refresh: [PersistentIdentifier] = changedOrder
        // The changed and deleted models stay alive until they are refreshed.
        var keep = changedModels
        for (id, model) in deletedModels {
            keep[id] = model
            model.persistentBackingData.isDeleted = false
            registered[id] = model
            refresh.append(id)
        }
        // The models the lists let go are freed when `released` is, outside any access.
        let released = (insertedModels, deletedModels)
        insertedOrder = []
        insertedModels = []
        insertedPositions = nil
        changedOrder = []
        changedModels = [:]
        deletedOrder = []
        deletedModels = [:]
        pendingBatchDeletes = []
        pending.removeAll()
        withExtendedLifetime(released) {}
        // Rollback cannot throw (as in SwiftData): when the records cannot be read back, the
        // models keep their current values.
        guard let snapshots = try? loadSnapshots(refresh) else { return }
        for id in refresh {
            guard let model = keep[id] else { continue }
            if let snapshot = snapshots[id] {
                try? model.persistentBackingData.apply(snapshot)
            } else {
                registered[id] = nil
                model.persistentBackingData.context = nil
            }
        }
    }

    /// Runs `block`, then saves. If `block` throws, its changes are rolled back.
    public func transaction(block: () throws -> Void) throws {
        do {
            try block()
        } catch {
            rollback()
            throw error
        }
        try save()
    }

    /// Brings in the saves other contexts of the container made since this context last
    /// looked: models this context has that another context saved show the saved values,
    /// and models another context deleted leave this context (their `isDeleted` is `true`).
    /// A model with unsaved changes here keeps the values of the properties written here
    /// (the local value wins until this context saves or rolls back; then the last save
    /// wins) and shows the saved values of the others; if its record was deleted, it
    /// leaves the context with its changes: a delete from another context wins.
    ///
    /// The context does this by itself the next time it is used (a property of one of its
    /// models read or written, a fetch, a save, `model(for:)`, `registeredModel(for:)` or
    /// `delete`), so calling this is not needed; it is for code that wants the merge to
    /// happen at a moment of its choosing, such as right after a `didSave` notification of
    /// another context. Stowage records its own changes as they happen, so there is no
    /// other pending work, except for undo: with an ``undoManager``, this ends the undo step
    /// the changes since the last call make (on Linux, where no run loop ends it).
    public func processPendingChanges() {
        applyPendingMerges()
        closeUndoEvent()
    }

    // MARK: Identity map

    /// The model registered for an identifier, if this context has it.
    public func registeredModel<T: PersistentModel>(for id: PersistentIdentifier) -> T? {
        applyPendingMerges()
        return lookUp(id) as? T
    }

    /// The model for an identifier: the registered one, or one loaded from the store.
    ///
    /// SwiftData returns a model even for an identifier with no record, and that model
    /// traps when read. Stowage returns an empty, unregistered model in that case; use
    /// ``existingModel(for:)`` to get an error instead.
    public func model(for id: PersistentIdentifier) -> any PersistentModel {
        if let model = try? existingModel(for: id) { return model }
        let type = entity(of: id)?.modelType
        let data = ModelBackingData(for: type ?? _PlaceholderModel.self)
        data.persistentModelID = id
        return (type ?? _PlaceholderModel.self).init(backingData: data)
    }

    /// The model for an identifier, registered or loaded from the store.
    /// - Throws: ``SwiftDataError/missingModel`` when no record has the identifier.
    public func existingModel(for id: PersistentIdentifier) throws -> any PersistentModel {
        applyPendingMerges()
        if let model = lookUp(id) { return model }
        guard entity(of: id) != nil else {
            throw core.schema.unknownModelType(id.entityName)
        }
        guard !id.isTemporary, let model = resolveModel(for: id) else {
            throw SwiftDataError(.missingModel, "no \(id.entityName) has the identifier \(id)")
        }
        return model
    }

    func resolveModel(for id: PersistentIdentifier) -> (any PersistentModel)? {
        if let model = lookUp(id) { return model }
        if id.isTemporary || (!deletedModels.isEmpty && deletedModels[id] != nil) { return nil }
        // One identifier: straight from the one table-keeping store when there is one, else
        // read in order, without the dictionaries `loadSnapshots` builds.
        let snapshot: DefaultSnapshot?
        if let store = core.onlyTableStore {
            snapshot = try? store.withTable { try $0.snapshot(for: id) }
        } else {
            snapshot = (try? loadSnapshotsInOrder([id]))?.first ?? nil
        }
        guard let snapshot else { return nil }
        return try? materialize(snapshot, knownUnregistered: true)
    }

    /// The stored snapshots of `ids`, in their order (`nil` for a missing record): without
    /// a dictionary when one store that keeps a ``SnapshotTable`` holds them all.
    func loadSnapshotsInOrder(_ ids: [PersistentIdentifier]) throws -> [DefaultSnapshot?] {
        if let store = core.onlyTableStore {
            return try store.withTable { try $0.snapshotsInOrder(for: ids) }
        }
        let found = try loadSnapshots(ids)
        return ids.map { found[$0] }
    }

    /// The stored snapshots of `ids`; missing records are left out.
    /// - Throws: when a store cannot read them (a log store's damaged block): a read that
    ///   fails is an error, never a record that seems to be gone.
    func loadSnapshots(_ ids: [PersistentIdentifier]) throws -> [PersistentIdentifier: DefaultSnapshot] {
        var byStore: [Int: [PersistentIdentifier]] = [:]
        for id in ids where !id.isTemporary {
            if let index = core.storeForEntity[id.entityName] { byStore[index, default: []].append(id) }
        }
        if byStore.count == 1, let (index, group) = byStore.first {
            return try core.stores[index].snapshots(for: group)
        }
        var result: [PersistentIdentifier: DefaultSnapshot] = [:]
        for (index, group) in byStore {
            result.merge(try core.stores[index].snapshots(for: group)) { a, _ in a }
        }
        return result
    }

    /// The registered model for a snapshot, refreshed if it has no unsaved changes, or a
    /// new model registered for it. The entity is found by the identifier's scope
    /// (``entity(of:)`` keeps the last one), not by comparing or hashing its name.
    /// `provisionally` registers a new model outside the registry's table, for a model
    /// that probably goes soon (``ModelRegistry/registerProvisionally(_:data:for:)``).
    func materialize(
        _ snapshot: DefaultSnapshot, knownUnregistered: Bool = false, provisionally: Bool = false
    ) throws -> any PersistentModel {
        let id = snapshot.persistentIdentifier
        if !knownUnregistered, let model = registered[id] {
            if !hasPendingChanges(id) {
                try model.persistentBackingData.apply(snapshot)
            }
            return model
        }
        guard let entity = self.entity(of: id) else {
            throw core.schema.unknownModelType(id.entityName)
        }
        let data = try ModelBackingData(entity: entity, snapshot: snapshot)
        let model = entity.modelType.init(backingData: data)
        data.context = self
        if provisionally {
            data.sharesBatchObservation = true
            registered.registerProvisionally(model, data: data, for: id)
        } else {
            registered.register(model, data: data, for: id)
        }
        return model
    }
}
