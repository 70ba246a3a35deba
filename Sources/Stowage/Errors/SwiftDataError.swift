import Foundation

/// An error from the model layer: a context, a container, a fetch or a save.
///
/// As in SwiftData, compare errors with the static values:
/// `catch SwiftDataError.unsupportedPredicate { … }`. Equality looks at the ``code``
/// only; the ``message`` names what went wrong.
public struct SwiftDataError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of failure this is.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        public static let unsupportedPredicate = Code("unsupportedPredicate")
        public static let unsupportedSortDescriptor = Code("unsupportedSortDescriptor")
        public static let unsupportedValue = Code("unsupportedValue")
        public static let modelValidationFailure = Code("modelValidationFailure")
        public static let uniqueConstraintViolation = Code("uniqueConstraintViolation")
        public static let deleteRuleDenied = Code("deleteRuleDenied")
        public static let unknownModelType = Code("unknownModelType")
        public static let configurationSchemaMismatch = Code("configurationSchemaMismatch")
        public static let includePendingChangesWithBatchSize = Code("includePendingChangesWithBatchSize")
        public static let escapingMutationsInEnumeration = Code("escapingMutationsInEnumeration")
        public static let loadIssueModelContainer = Code("loadIssueModelContainer")
        public static let missingModel = Code("missingModel")
    }

    /// The kind of failure.
    public let code: Code
    /// What failed, naming the entity, property or expression involved.
    public let message: String
    /// The error underneath, if one caused this.
    public let underlying: (any Error & Sendable)?

    public init(_ code: Code, _ message: String, underlying: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.underlying = underlying
    }

    public static func == (lhs: SwiftDataError, rhs: SwiftDataError) -> Bool { lhs.code == rhs.code }

    /// Lets `catch SwiftDataError.unsupportedPredicate` match any error of that code.
    public static func ~= (pattern: SwiftDataError, value: any Error) -> Bool {
        (value as? SwiftDataError)?.code == pattern.code
    }

    public var description: String { "SwiftDataError.\(code): \(message)" }

    /// A predicate uses an expression Stowage cannot evaluate; the message names it.
    public static let unsupportedPredicate = SwiftDataError(.unsupportedPredicate, "")
    /// A sort descriptor names something that is not a stored property.
    public static let unsupportedSortDescriptor = SwiftDataError(.unsupportedSortDescriptor, "")
    /// A value cannot be converted to or from its stored form.
    public static let unsupportedValue = SwiftDataError(.unsupportedValue, "")
    /// Stored data does not fit the model.
    public static let modelValidationFailure = SwiftDataError(.modelValidationFailure, "")
    /// A save would store two models with the same unique values, and the context's
    /// ``ModelContext/uniquenessPolicy`` is `.fail`. Stowage's addition.
    public static let uniqueConstraintViolation = SwiftDataError(.uniqueConstraintViolation, "")
    /// A save would delete a model whose `.deny` relationship still holds models.
    public static let deleteRuleDenied = SwiftDataError(.deleteRuleDenied, "")
    /// The model type is not in the container's schema.
    public static let unknownModelType = SwiftDataError(.unknownModelType, "")
    /// A configuration's schema does not match the container's or the store's.
    public static let configurationSchemaMismatch = SwiftDataError(.configurationSchemaMismatch, "")
    /// `fetch(_:batchSize:)` was asked to include pending changes while there are some.
    public static let includePendingChangesWithBatchSize = SwiftDataError(.includePendingChangesWithBatchSize, "")
    /// An enumeration block left unsaved changes while `allowEscapingMutations` was false.
    public static let escapingMutationsInEnumeration = SwiftDataError(.escapingMutationsInEnumeration, "")
    /// The container could not load its stores.
    public static let loadIssueModelContainer = SwiftDataError(.loadIssueModelContainer, "")
    /// No model exists for an identifier.
    public static let missingModel = SwiftDataError(.missingModel, "")
}

/// An error from a ``DataStore``: the file, the lock, the format, the disk.
public struct DataStoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of failure this is.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        public static let unsupportedFeature = Code("unsupportedFeature")
        public static let storeLocked = Code("storeLocked")
        public static let wrongFormat = Code("wrongFormat")
        public static let corruptStore = Code("corruptStore")
        public static let schemaMismatch = Code("schemaMismatch")
        public static let ioFailure = Code("ioFailure")
        public static let storeUnusable = Code("storeUnusable")
        public static let unknownEntity = Code("unknownEntity")
        public static let migrationFailed = Code("migrationFailed")
        public static let preferInMemoryFilter = Code("preferInMemoryFilter")
        public static let preferInMemorySort = Code("preferInMemorySort")
        public static let invalidPredicate = Code("invalidPredicate")
    }

    public let code: Code
    public let message: String
    public let underlying: (any Error & Sendable)?

    public init(_ code: Code, _ message: String, underlying: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.underlying = underlying
    }

    public static func == (lhs: DataStoreError, rhs: DataStoreError) -> Bool { lhs.code == rhs.code }
    public static func ~= (pattern: DataStoreError, value: any Error) -> Bool {
        (value as? DataStoreError)?.code == pattern.code
    }
    /// The code and message, then the underlying error's own words when the message does not
    /// already hold them: "writing a commit record … failed; nothing was saved (pwrite
    /// failed: No space left on device (errno 28))".
    public var description: String {
        let text = "DataStoreError.\(code): \(message)"
        guard let underlying else { return text }
        let cause = (underlying as? DataStoreError)?.message ?? String(describing: underlying)
        return cause.isEmpty || message.contains(cause) ? text : "\(text) (\(cause))"
    }

    /// The store does not support what was asked.
    public static let unsupportedFeature = DataStoreError(.unsupportedFeature, "")
    /// Another process holds the store's lock.
    public static let storeLocked = DataStoreError(.storeLocked, "")
    /// The file is not a store of this kind.
    public static let wrongFormat = DataStoreError(.wrongFormat, "")
    /// The file is damaged.
    public static let corruptStore = DataStoreError(.corruptStore, "")
    /// The file's schema does not match the container's.
    public static let schemaMismatch = DataStoreError(.schemaMismatch, "")
    /// A read, write or sync failed.
    public static let ioFailure = DataStoreError(.ioFailure, "")
    /// An earlier failure made the store refuse further writes.
    public static let storeUnusable = DataStoreError(.storeUnusable, "")
    /// A request named an entity the store's schema lacks.
    public static let unknownEntity = DataStoreError(.unknownEntity, "")
    /// A migration plan's stage failed: its code threw, or its conversion was refused. The
    /// store is left as it was, at its old version. Stowage's own code: SwiftData reports
    /// a failed migration as a failure to load the container.
    public static let migrationFailed = DataStoreError(.migrationFailed, "")
    /// Thrown by a store's `fetch` to have the context evaluate the predicate: the context
    /// fetches again without it (and without the window) and filters what comes back.
    public static let preferInMemoryFilter = DataStoreError(.preferInMemoryFilter, "")
    /// Thrown by a store's `fetch` to have the context sort: the context fetches again
    /// without the sort (and without the window), then sorts and cuts what comes back.
    public static let preferInMemorySort = DataStoreError(.preferInMemorySort, "")
    /// The store cannot evaluate the request's predicate.
    public static let invalidPredicate = DataStoreError(.invalidPredicate, "")
}
