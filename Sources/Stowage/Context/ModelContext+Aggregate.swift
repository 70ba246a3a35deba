import Foundation

// Sums over a fetch, without models: Stowage's own. SwiftData has no aggregates; an app
// fetches the models and adds their values up. These read the matching records and add
// the attribute's stored values, so no model is made. A `ResultsObserver` keeps such a sum
// current across saves (`ResultsObserver.sum(of:)`).

extension ModelContext {
    /// The sum of the integer attribute `keyPath` over the models `descriptor` selects
    /// (its window included; unsaved changes too when it includes pending changes), read
    /// from their records without making models. Stowage's own. Integer sums wrap past
    /// `Int64`.
    /// - Throws: ``SwiftDataError`` `.unsupportedValue` when `keyPath` is not a stored
    ///   attribute, and the errors of ``fetch(_:)``.
    public func fetchSum<T: PersistentModel, Value: BinaryInteger>(
        _ descriptor: FetchDescriptor<T>, of keyPath: KeyPath<T, Value>
    ) throws -> Value {
        Value(truncatingIfNeeded: try sum(descriptor, keyPath).integer)
    }

    /// The sum of the floating-point attribute `keyPath` over the models `descriptor`
    /// selects, read from their records without making models. Stowage's own.
    public func fetchSum<T: PersistentModel, Value: BinaryFloatingPoint>(
        _ descriptor: FetchDescriptor<T>, of keyPath: KeyPath<T, Value>
    ) throws -> Value {
        let accumulator = try sum(descriptor, keyPath)
        return Value(accumulator.double + accumulator.compensation)
    }

    /// The sum of the `Decimal` attribute `keyPath` over the models `descriptor` selects,
    /// exactly. Stowage's own.
    public func fetchSum<T: PersistentModel>(_ descriptor: FetchDescriptor<T>, of keyPath: KeyPath<T, Decimal>) throws
        -> Decimal
    {
        try sum(descriptor, keyPath).decimal
    }

    private func sum<T: PersistentModel>(_ descriptor: FetchDescriptor<T>, _ keyPath: AnyKeyPath) throws
        -> SumAccumulator
    {
        let (entity, _) = try route(T.self)
        guard let property = entity.property(for: keyPath), !property.isRelationship else {
            throw SwiftDataError(
                .unsupportedValue, "\(keyPath) is not a stored attribute of \(T.self): it cannot be summed")
        }
        var accumulator = SumAccumulator()
        for snapshot in try fetchSnapshots(descriptor) { accumulator.add(snapshot.values[property.index]) }
        return accumulator
    }
}
