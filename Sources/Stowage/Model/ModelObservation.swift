import Observation

/// A model's observation registrar, which `@Model` makes when one of the model's
/// properties is first read: a model whose properties were never read cannot have
/// observers, so a model that is only inserted, fetched and counted, or written to, never
/// pays for one (two allocations, and a lock made and destroyed). The box keeps the
/// registrar behind a class reference, which a model can test for `nil` without the
/// run-time calls an optional `ObservationRegistrar`, a type of another module, needs.
///
/// Stowage's own: SwiftData's models make their registrar with the model. Observers see
/// the same notifications: a write to a property nobody has read tells no one, as it
/// would tell no one there. The models of one batch of `ModelContext.enumerate` share one
/// registrar (``ModelBackingData/_firstObservation()``), whose observers may also be told
/// of a change to another model of the batch.
///
/// A model, like SwiftData's, is not `Sendable`: the first reads of one model from two
/// threads at once could each make a registrar, and an observer could then miss a change.
public final class _ModelObservation {
    public let registrar = ObservationRegistrar()

    public init() {}

    /// Records a read for the observer being tracked, if any.
    @inline(__always)
    public func access<Subject: Observable, Member>(_ subject: Subject, keyPath: KeyPath<Subject, Member>) {
        registrar.access(subject, keyPath: keyPath)
    }

    /// Makes a write and tells the observers of `keyPath`.
    @inline(__always)
    public func withMutation<Subject: Observable, Member, T>(
        of subject: Subject, keyPath: KeyPath<Subject, Member>, _ mutation: () throws -> T
    ) rethrows -> T {
        try registrar.withMutation(of: subject, keyPath: keyPath, mutation)
    }
}
