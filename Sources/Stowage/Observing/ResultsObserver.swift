import Foundation
import Observation
import Synchronization

/// Keeps the models that match a fetch descriptor current as the container's contexts save,
/// optionally grouped into sections.
///
/// The observer fetches once when it is made, then follows every save of its container:
/// saves of its own context, of the container's other contexts, and of `@ModelActor`s on
/// the same container. Inserts and updates that bring a model into the predicate add it at
/// its place in the order; updates that take it out, and deletes, remove it; a change to a
/// sort key moves it. It is `Observable`: code that reads ``results`` or ``sections`` in
/// `withObservationTracking` is told of each change.
///
/// Each save costs the observer time in proportion to what the save changed, not to the
/// size of the result: it reads the saved records again, tests them against the predicate
/// and finds their place by binary search in an order it keeps in chunks (a result of 100k
/// models and a one-row save move a few hundred entries, not 100k). Two kinds of descriptor
/// are fetched again whole after a save that touches their entity: one with a
/// `fetchLimit` or `fetchOffset`, and one whose predicate reads other models through
/// relationships (a save of those models can change which models match).
///
/// Where Stowage differs from SwiftData, or says what SwiftData leaves unsaid:
/// - The results are what the stores hold: unsaved changes of the context appear once they
///   are saved. A model the context has unsaved changes to is returned with them, at the
///   place its saved values give it.
/// - The observer is updated on the thread that saved, before that save returns, under a
///   lock of its own, so that reading it from its own thread is safe while another
///   context saves; observers of ``results`` are told on the saving thread.
///   The `isolation` argument of the initializers is accepted for SwiftData's signature.
/// - Models with equal sort keys are ordered by ``PersistentIdentifier``; the
///   ``sortBy`` descriptors do not list it.
/// - ``results`` and ``sections`` are read-only; SwiftData declares setters for them.
/// - A descriptor that cannot be fetched makes the initializer throw; one set later through
///   ``fetchDescriptor``, ``filterBy`` or ``sortBy`` leaves the results empty and the reason
///   in ``fetchError`` (Stowage's own), until a descriptor that can be fetched is set.
public final class ResultsObserver<Element: PersistentModel, SectionTitle: Hashable>: Observable {
    /// The context the observer fetches from, and whose models ``results`` returns.
    public let modelContext: ModelContext
    /// The key path whose value groups the results into sections, or `nil` when unsectioned.
    public let sectionBy: PartialKeyPath<Element>?

    private let container: ModelContainer
    private let registrar = ObservationRegistrar()
    private let state: LockedState<State>
    private let queue = SaveEventQueue()
    private let title: (@Sendable (SnapshotValue) -> SectionTitle)?
    /// The sort descriptor the section key adds in front of the app's.
    private let sectionSort: SortDescriptor<Element>?
    private var link: Link?

    /// The observer's working state, under its lock.
    private struct State {
        var descriptor: FetchDescriptor<Element>
        /// Taken out while a save is applied (see ``apply(_:)``), so that the applier holds
        /// the only reference and changes its tables in place.
        var tracked: TrackedResults?
        /// The order ``results`` reads, for the sections.
        var entries: OrderedEntries
        var results: FetchResultsCollection<Element>
        /// The properties whose sums are kept (``sum(of:)``), and the sums.
        var aggregated: [Int] = []
        var sums: [SumAccumulator] = []
        /// Made from ``results`` when first read after a change.
        var sections: SectionedResults<Element, SectionTitle>?
        var error: (any Error)?
    }

    /// Hands the container's saves to the observer, which it holds weakly.
    private final class Link: SaveObserving, @unchecked Sendable {
        // `@unchecked`: the observer is reached only through `receive`, which takes its
        // own lock.
        weak var observer: ResultsObserver?
        init(_ observer: ResultsObserver) { self.observer = observer }
        func containerDidSave(_ event: SaveEvent) { observer?.receive(event) }
    }

    init(
        descriptor: FetchDescriptor<Element>, sectionBy: PartialKeyPath<Element>?,
        sectionSort: SortDescriptor<Element>?, title: (@Sendable (SnapshotValue) -> SectionTitle)?,
        modelContext: ModelContext
    ) throws {
        self.modelContext = modelContext
        self.container = modelContext.container
        self.sectionBy = sectionBy
        self.sectionSort = sectionSort
        self.title = title
        let effective = Self.effective(descriptor, sectionSort)
        let tracked = try TrackedResults(effective, fetchedBy: modelContext)
        let results = FetchResultsCollection<Element>(
            context: modelContext, entries: tracked.entries, batchSize: Self.batchSize)
        self.state = LockedState(
            State(descriptor: descriptor, tracked: tracked, entries: tracked.entries, results: results))
        let link = Link(self)
        self.link = link
        container.core.observers.add(link)
    }

    deinit {
        if let link { container.core.observers.remove(ObjectIdentifier(link)) }
    }

    /// How many models ``results`` loads at a time as it is read.
    static var batchSize: Int { 256 }

    // MARK: Reading

    /// The models that match the fetch descriptor, in its order: a collection that loads
    /// models as they are read.
    public var results: FetchResultsCollection<Element> {
        registrar.access(self, keyPath: \.results)
        return state.withLock { $0.results }
    }

    /// The results grouped into sections by ``sectionBy``, in the order of the results, or
    /// `nil` for an observer made without a section key path (`SectionTitle` is `Never`).
    /// Every section holds at least one model: a section whose last model leaves is gone.
    public var sections: SectionedResults<Element, SectionTitle>? {
        registrar.access(self, keyPath: \.sections)
        guard let title else { return nil }
        return state.withLock { state in
            if let sections = state.sections { return sections }
            let made = SectionedResults<Element, SectionTitle>(
                results: state.results, entries: state.entries, title: title)
            state.sections = made
            return made
        }
    }

    /// Why the last descriptor set could not be fetched, or `nil` when it was. Stowage's own.
    public var fetchError: (any Error)? {
        registrar.access(self, keyPath: \.results)
        return state.withLock { $0.error }
    }

    // MARK: Changing what is observed

    /// The descriptor the observer fetches with. Setting it fetches again, before the setter
    /// returns. A section key is kept in front of its sort descriptors.
    public var fetchDescriptor: FetchDescriptor<Element> {
        get { state.withLock { $0.descriptor } }
        set { refetch(with: newValue) }
    }

    /// The predicate of ``fetchDescriptor``; setting it fetches again. `nil` observes every
    /// model of the type.
    public var filterBy: Predicate<Element>? {
        get { fetchDescriptor.predicate }
        set {
            var descriptor = fetchDescriptor
            descriptor.predicate = newValue
            refetch(with: descriptor)
        }
    }

    /// The sort descriptors of ``fetchDescriptor``, without the section key's; setting them
    /// fetches again, with the section key in front.
    public var sortBy: [SortDescriptor<Element>] {
        get { fetchDescriptor.sortBy }
        set {
            var descriptor = fetchDescriptor
            descriptor.sortBy = newValue
            refetch(with: descriptor)
        }
    }

    /// The descriptor as fetched: the section key's sort descriptor first when the app's
    /// do not start with it.
    private static func effective(_ descriptor: FetchDescriptor<Element>, _ sectionSort: SortDescriptor<Element>?)
        -> FetchDescriptor<Element>
    {
        var effective = descriptor
        effective.includePendingChanges = false
        if let sectionSort, effective.sortBy.first?.keyPath != sectionSort.keyPath {
            effective.sortBy.insert(sectionSort, at: 0)
        }
        return effective
    }

    private func refetch(with descriptor: FetchDescriptor<Element>) {
        state.withLock { $0.descriptor = descriptor }
        receive(SaveEvent(resetsAll: true))
    }

    // MARK: Following saves

    private func receive(_ event: SaveEvent) {
        queue.post(event) { events in apply(events) }
    }

    /// Brings the results up to date with `events`: computed on a copy of the state (one
    /// caller at a time, see ``SaveEventQueue``), then put in place between the observation
    /// registrar's `willSet` and `didSet`, so that code told of the change reads the new
    /// results after it.
    private func apply(_ events: [SaveEvent]) {
        // Taken, not copied: a copy would share the member table with the state, and the
        // first change would copy the whole table, a cost in proportion to the result.
        let (descriptor, aggregated) = state.withLock { ($0.descriptor, $0.aggregated) }
        guard
            var tracked = state.withLock({ state in
                defer { state.tracked = nil }
                return state.tracked
            })
        else { return }
        var error: (any Error)?
        var changes = TrackedResults.Changes()
        do {
            if events.contains(where: \.resetsAll) || tracked.aggregated != aggregated
                || tracked.refetchesWhole(after: events)
            {
                let context = ModelContext(container)
                tracked = try TrackedResults(
                    Self.effective(descriptor, sectionSort), aggregated: aggregated, fetchedBy: context)
                changes = TrackedResults.Changes(results: true, sums: true)
            } else {
                changes = try tracked.apply(events, core: container.core)
            }
        } catch let failure {
            error = failure
            tracked = tracked.emptied()
            changes = TrackedResults.Changes(results: true, sums: true)
        }
        guard changes.any else {
            state.withLock { $0.tracked = tracked }
            return
        }
        let previous = state.withLock { $0.results }
        let results =
            changes.results
            ? FetchResultsCollection<Element>(
                context: modelContext, entries: tracked.entries, batchSize: Self.batchSize, previous: previous)
            : nil
        if changes.results {
            registrar.willSet(self, keyPath: \.results)
            registrar.willSet(self, keyPath: \.sections)
        }
        if changes.sums { registrar.willSet(self, keyPath: \.sumsChanged) }
        state.withLock { state in
            if let results {
                state.entries = tracked.entries
                state.results = results
                state.sections = nil
                state.error = error
            }
            state.sums = tracked.sums
            state.tracked = tracked
        }
        if changes.sums { registrar.didSet(self, keyPath: \.sumsChanged) }
        if changes.results {
            registrar.didSet(self, keyPath: \.sections)
            registrar.didSet(self, keyPath: \.results)
        }
    }

    // MARK: Aggregates (Stowage's own)

    /// Observation's name for the sums: ``sum(of:)`` registers reads of it, and a save that
    /// changes a sum tells its observers.
    private var sumsChanged: Int { 0 }

    /// The sum of the integer attribute `keyPath` over the results, kept current by every
    /// save without loading models: Stowage's own (SwiftData has no aggregates).
    ///
    /// The first call for a key path reads the values of every result once (their records,
    /// not models); after it, each save adds and takes away the values of the records it
    /// changed. Reading it in `withObservationTracking` hears of each change to the sum.
    /// Integer sums wrap past `Int64`.
    /// - Throws: ``SwiftDataError`` `.unsupportedValue` when `keyPath` is not a stored
    ///   attribute, or what reading the records throws.
    public func sum<Value: BinaryInteger>(of keyPath: KeyPath<Element, Value>) throws -> Value {
        Value(truncatingIfNeeded: try accumulator(for: keyPath).integer)
    }

    /// The sum of the floating-point attribute `keyPath` over the results, kept current
    /// by every save without loading models: Stowage's own. Values are added and taken away
    /// with a compensation term, so the sum can differ from adding the current values
    /// afresh in its last digits.
    /// - Throws: as the integer `sum(of:)`.
    public func sum<Value: BinaryFloatingPoint>(of keyPath: KeyPath<Element, Value>) throws -> Value {
        let accumulator = try accumulator(for: keyPath)
        return Value(accumulator.double + accumulator.compensation)
    }

    /// The sum of the `Decimal` attribute `keyPath` over the results, exactly: Stowage's own.
    public func sum(of keyPath: KeyPath<Element, Decimal>) throws -> Decimal {
        try accumulator(for: keyPath).decimal
    }

    /// The running sum of the attribute `keyPath` names, which the first call starts (by
    /// fetching the results again, with the attribute's values).
    private func accumulator(for keyPath: AnyKeyPath) throws -> SumAccumulator {
        registrar.access(self, keyPath: \.sumsChanged)
        guard let entity = container.schema.entity(forModelType: Element.self),
            let property = entity.property(for: keyPath), !property.isRelationship
        else {
            throw SwiftDataError(
                .unsupportedValue, "\(keyPath) is not a stored attribute of \(Element.self): it cannot be summed")
        }
        let slot = state.withLock { state -> Int? in
            if let slot = state.aggregated.firstIndex(of: property.index) { return slot }
            state.aggregated.append(property.index)
            return nil
        }
        if slot == nil { receive(SaveEvent(resetsAll: true)) }
        return try state.withLock { state in
            if let error = state.error { throw error }
            guard let slot = state.aggregated.firstIndex(of: property.index), slot < state.sums.count else {
                // Another thread is applying a save: the sum is not made yet.
                throw SwiftDataError(.unsupportedValue, "the sum of \(property.name) is being computed; ask again")
            }
            return state.sums[slot]
        }
    }
}

// MARK: - Initializers, as SwiftData declares them

extension ResultsObserver where SectionTitle == Never {
    /// Observes the models `fetchDescriptor` selects in `modelContext`, unsectioned.
    /// - Throws: the errors of ``ModelContext/fetch(_:)`` when the first fetch fails.
    public convenience init(
        fetchDescriptor: FetchDescriptor<Element> = FetchDescriptor<Element>(), modelContext: ModelContext,
        isolation: isolated (any Actor)? = #isolation
    ) throws {
        try self.init(
            descriptor: fetchDescriptor, sectionBy: nil, sectionSort: nil, title: nil, modelContext: modelContext)
    }

    /// Observes the models `fetchDescriptor` selects through a new context of
    /// `modelContainer`, unsectioned.
    public convenience init(
        fetchDescriptor: FetchDescriptor<Element> = FetchDescriptor<Element>(), modelContainer: ModelContainer,
        isolation: isolated (any Actor)? = #isolation
    ) throws {
        try self.init(
            descriptor: fetchDescriptor, sectionBy: nil, sectionSort: nil, title: nil,
            modelContext: ModelContext(modelContainer))
    }

    /// Observes the models that match `filterBy`, in the order of `sortBy`, in `modelContext`.
    public convenience init(
        filterBy: Predicate<Element>? = nil, sortBy: [SortDescriptor<Element>]? = nil, modelContext: ModelContext,
        isolation: isolated (any Actor)? = #isolation
    ) throws {
        try self.init(
            descriptor: FetchDescriptor(predicate: filterBy, sortBy: sortBy ?? []), sectionBy: nil, sectionSort: nil,
            title: nil, modelContext: modelContext)
    }

    /// Observes the models that match `filterBy`, in the order of `sortBy`, through a new
    /// context of `modelContainer`.
    public convenience init(
        filterBy: Predicate<Element>? = nil, sortBy: [SortDescriptor<Element>]? = nil,
        modelContainer: ModelContainer, isolation: isolated (any Actor)? = #isolation
    ) throws {
        try self.init(
            descriptor: FetchDescriptor(predicate: filterBy, sortBy: sortBy ?? []), sectionBy: nil, sectionSort: nil,
            title: nil, modelContext: ModelContext(modelContainer))
    }
}

extension ResultsObserver where SectionTitle == String {
    /// Observes the models `fetchDescriptor` selects in `modelContext`, in sections by the
    /// value of `sectionBy`, which must be a stored attribute. The section key sorts first.
    public convenience init(
        fetchDescriptor: FetchDescriptor<Element> = FetchDescriptor<Element>(), sectionBy: KeyPath<Element, String>,
        modelContext: ModelContext, isolation: isolated (any Actor)? = #isolation
    ) throws {
        try self.init(
            descriptor: fetchDescriptor, sectionBy: sectionBy, sectionSort: Self.sectionSort(sectionBy),
            title: resultsSectionTitle, modelContext: modelContext)
    }

    /// Observes the models `fetchDescriptor` selects in `modelContext`, in sections by the
    /// value of `sectionBy`; models whose value is `nil` are in the section titled `""`.
    public convenience init(
        fetchDescriptor: FetchDescriptor<Element> = FetchDescriptor<Element>(), sectionBy: KeyPath<Element, String?>,
        modelContext: ModelContext, isolation: isolated (any Actor)? = #isolation
    ) throws {
        try self.init(
            descriptor: fetchDescriptor, sectionBy: sectionBy, sectionSort: Self.sectionSort(sectionBy),
            title: resultsSectionTitle, modelContext: modelContext)
    }

    /// Observes through a new context of `modelContainer`, in sections by `sectionBy`.
    public convenience init(
        fetchDescriptor: FetchDescriptor<Element> = FetchDescriptor<Element>(), sectionBy: KeyPath<Element, String>,
        modelContainer: ModelContainer, isolation: isolated (any Actor)? = #isolation
    ) throws {
        try self.init(
            descriptor: fetchDescriptor, sectionBy: sectionBy, sectionSort: Self.sectionSort(sectionBy),
            title: resultsSectionTitle, modelContext: ModelContext(modelContainer))
    }

    /// Observes through a new context of `modelContainer`, in sections by `sectionBy`;
    /// models whose value is `nil` are in the section titled `""`.
    public convenience init(
        fetchDescriptor: FetchDescriptor<Element> = FetchDescriptor<Element>(), sectionBy: KeyPath<Element, String?>,
        modelContainer: ModelContainer, isolation: isolated (any Actor)? = #isolation
    ) throws {
        try self.init(
            descriptor: fetchDescriptor, sectionBy: sectionBy, sectionSort: Self.sectionSort(sectionBy),
            title: resultsSectionTitle, modelContext: ModelContext(modelContainer))
    }

    /// Observes the models that match `filterBy` in `modelContext`, in sections by
    /// `sectionBy`, then in the order of `sortBy`.
    public convenience init(
        filterBy: Predicate<Element>? = nil, sortBy: [SortDescriptor<Element>]? = nil,
        sectionBy: KeyPath<Element, String>, modelContext: ModelContext, isolation: isolated (any Actor)? = #isolation
    ) throws {
        try self.init(
            descriptor: FetchDescriptor(predicate: filterBy, sortBy: sortBy ?? []), sectionBy: sectionBy,
            sectionSort: Self.sectionSort(sectionBy), title: resultsSectionTitle, modelContext: modelContext)
    }

    /// Observes the models that match `filterBy` in `modelContext`, in sections by
    /// `sectionBy` (`nil` values in the section titled `""`), then in the order of `sortBy`.
    public convenience init(
        filterBy: Predicate<Element>? = nil, sortBy: [SortDescriptor<Element>]? = nil,
        sectionBy: KeyPath<Element, String?>, modelContext: ModelContext, isolation: isolated (any Actor)? = #isolation
    ) throws {
        try self.init(
            descriptor: FetchDescriptor(predicate: filterBy, sortBy: sortBy ?? []), sectionBy: sectionBy,
            sectionSort: Self.sectionSort(sectionBy), title: resultsSectionTitle, modelContext: modelContext)
    }

    /// Observes through a new context of `modelContainer` the models that match `filterBy`,
    /// in sections by `sectionBy`, then in the order of `sortBy`.
    public convenience init(
        filterBy: Predicate<Element>? = nil, sortBy: [SortDescriptor<Element>]? = nil,
        sectionBy: KeyPath<Element, String>, modelContainer: ModelContainer,
        isolation: isolated (any Actor)? = #isolation
    ) throws {
        try self.init(
            descriptor: FetchDescriptor(predicate: filterBy, sortBy: sortBy ?? []), sectionBy: sectionBy,
            sectionSort: Self.sectionSort(sectionBy), title: resultsSectionTitle,
            modelContext: ModelContext(modelContainer))
    }

    /// Observes through a new context of `modelContainer` the models that match `filterBy`,
    /// in sections by `sectionBy` (`nil` values in the section titled `""`), then in the
    /// order of `sortBy`.
    public convenience init(
        filterBy: Predicate<Element>? = nil, sortBy: [SortDescriptor<Element>]? = nil,
        sectionBy: KeyPath<Element, String?>, modelContainer: ModelContainer,
        isolation: isolated (any Actor)? = #isolation
    ) throws {
        try self.init(
            descriptor: FetchDescriptor(predicate: filterBy, sortBy: sortBy ?? []), sectionBy: sectionBy,
            sectionSort: Self.sectionSort(sectionBy), title: resultsSectionTitle,
            modelContext: ModelContext(modelContainer))
    }

    /// The sort descriptor of the section key, ascending.
    private static func sectionSort(_ keyPath: KeyPath<Element, String>) -> SortDescriptor<Element> {
        SortDescriptor(sendable(keyPath))
    }

    private static func sectionSort(_ keyPath: KeyPath<Element, String?>) -> SortDescriptor<Element> {
        SortDescriptor(sendable(keyPath))
    }

    /// `keyPath` as `Sendable`, as `SortDescriptor` takes it. A key path is an immutable
    /// value, safe to share between threads; SwiftData's initializers take it without the
    /// `Sendable` its sort descriptors ask for, and `Sendable` is a marker protocol with no
    /// runtime form, so the conversion only tells the compiler.
    private static func sendable<Value>(_ keyPath: KeyPath<Element, Value>) -> any KeyPath<Element, Value> & Sendable {
        unsafeBitCast(keyPath, to: (any KeyPath<Element, Value> & Sendable).self)
    }
}

/// A section's title from the section key's stored value: `""` for `nil`.
@Sendable func resultsSectionTitle(_ value: SnapshotValue) -> String {
    if case .string(let string) = value { return string }
    return ""
}
