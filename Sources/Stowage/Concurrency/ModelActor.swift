/// An actor whose code uses its own model context, one job at a time.
///
/// Write `@ModelActor` before an actor to conform it: the macro adds ``modelContainer``,
/// ``modelExecutor`` (a ``DefaultSerialModelExecutor`` over a new context of the
/// container) and `init(modelContainer:)`, and the actor runs on that executor.
///
/// ```swift
/// @ModelActor
/// actor Importer {
///     func importTrips(_ names: [String]) throws {
///         for name in names { modelContext.insert(Trip(name: name)) }
///         try modelContext.save()
///     }
/// }
/// let importer = Importer(modelContainer: container)
/// try await importer.importTrips(["Lisbon", "Porto"])
/// ```
///
/// Models and contexts stay on the actor that made them; pass ``PersistentIdentifier``s
/// between actors and look them up again with ``subscript(_:as:)`` or
/// ``ModelContext/model(for:)``. A model actor's context does not save by itself: call
/// `modelContext.save()`.
public protocol ModelActor: Actor {
    /// The container whose stores the actor's context reads and writes.
    nonisolated var modelContainer: ModelContainer { get }

    /// The executor that runs the actor's code and owns its context.
    ///
    /// Use ``modelContext`` to reach the context, not this executor.
    nonisolated var modelExecutor: any ModelExecutor { get }
}

extension ModelActor {
    /// The actor's executor: its ``modelExecutor``, which must be serial.
    public nonisolated var unownedExecutor: UnownedSerialExecutor {
        modelExecutor._stowageUnownedSerialExecutor
    }

    /// The context of the actor, which only the actor's code uses.
    public var modelContext: ModelContext {
        modelExecutor.modelContext
    }

    /// The model with identifier `id`, as a `T`: the one the actor's context has
    /// registered, or else the one its stores hold; `nil` when neither has it, or it is
    /// not a `T`.
    ///
    /// ```swift
    /// guard let trip = self[tripID, as: Trip.self] else { return }
    /// ```
    public subscript<T: PersistentModel>(id: PersistentIdentifier, as as: T.Type) -> T? {
        let context = modelContext
        if let registered: T = context.registeredModel(for: id) { return registered }
        return (try? context.existingModel(for: id)) as? T
    }
}
