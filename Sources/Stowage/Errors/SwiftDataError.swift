import Foundation

/// An error from the model layer: a context, a container, a fetch or a save.
///
/// As in SwiftData, compare errors with the static values:
/// `catch SwiftDataError.unsupportedPredicate { … }`. Equality looks at the ``code``
/// only; the ``message`` names what went wrong.
public struct SwiftDataError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of failure this is.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's name, as its static property spells it.
        public let rawValue: String
        /// A code named `rawValue`.
        public init(_ rawValue: String) { self.rawValue = rawValue }
        /// The code's name.
        public var description: String { rawValue }

        /// The code of ``SwiftDataError/unsupportedPredicate``.
        public static let unsupportedPredicate = Code("unsupportedPredicate")
        /// The code of ``SwiftDataError/unsupportedSortDescriptor``.
        public static let unsupportedSortDescriptor = Code("unsupportedSortDescriptor")
        /// The code of ``SwiftDataError/unsupportedValue``.
        public static let unsupportedValue = Code("unsupportedValue")
        /// The code of ``SwiftDataError/modelValidationFailure``.
        public static let modelValidationFailure = Code("modelValidationFailure")
        /// The code of ``SwiftDataError/uniqueConstraintViolation``.
        public static let uniqueConstraintViolation = Code("uniqueConstraintViolation")
        /// The code of ``SwiftDataError/deleteRuleDenied``.
        public static let deleteRuleDenied = Code("deleteRuleDenied")
        /// The code of ``SwiftDataError/unknownModelType``.
        public static let unknownModelType = Code("unknownModelType")
        /// The code of ``SwiftDataError/configurationSchemaMismatch``.
        public static let configurationSchemaMismatch = Code("configurationSchemaMismatch")
        /// The code of ``SwiftDataError/includePendingChangesWithBatchSize``.
        public static let includePendingChangesWithBatchSize = Code("includePendingChangesWithBatchSize")
        /// The code of ``SwiftDataError/escapingMutationsInEnumeration``.
        public static let escapingMutationsInEnumeration = Code("escapingMutationsInEnumeration")
        /// The code of ``SwiftDataError/loadIssueModelContainer``.
        public static let loadIssueModelContainer = Code("loadIssueModelContainer")
        /// The code of ``SwiftDataError/missingModel``.
        public static let missingModel = Code("missingModel")
    }

    /// The kind of failure.
    public let code: Code
    /// What failed, naming the entity, property or expression involved.
    public let message: String
    /// The error underneath, if one caused this.
    public let underlying: (any Error & Sendable)?

    /// An error of kind `code` that says, in `message`, what failed, with the error that
    /// caused it, if any.
    public init(_ code: Code, _ message: String, underlying: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.underlying = underlying
    }

    /// Whether two errors are of the same kind; their messages are not compared.
    public static func == (lhs: SwiftDataError, rhs: SwiftDataError) -> Bool { lhs.code == rhs.code }

    /// Lets `catch SwiftDataError.unsupportedPredicate` match any error of that code.
    public static func ~= (pattern: SwiftDataError, value: any Error) -> Bool {
        (value as? SwiftDataError)?.code == pattern.code
    }

    /// The code and the message: `SwiftDataError.unsupportedPredicate: …`.
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
        /// The code's name, as its static property spells it.
        public let rawValue: String
        /// A code named `rawValue`.
        public init(_ rawValue: String) { self.rawValue = rawValue }
        /// The code's name.
        public var description: String { rawValue }

        /// The code of ``DataStoreError/unsupportedFeature``.
        public static let unsupportedFeature = Code("unsupportedFeature")
        /// The code of ``DataStoreError/storeLocked``.
        public static let storeLocked = Code("storeLocked")
        /// The code of ``DataStoreError/wrongFormat``.
        public static let wrongFormat = Code("wrongFormat")
        /// The code of ``DataStoreError/corruptStore``.
        public static let corruptStore = Code("corruptStore")
        /// The code of ``DataStoreError/schemaMismatch``.
        public static let schemaMismatch = Code("schemaMismatch")
        /// The code of ``DataStoreError/ioFailure``.
        public static let ioFailure = Code("ioFailure")
        /// The code of ``DataStoreError/storeUnusable``.
        public static let storeUnusable = Code("storeUnusable")
        /// The code of ``DataStoreError/unknownEntity``.
        public static let unknownEntity = Code("unknownEntity")
        /// The code of ``DataStoreError/migrationFailed``.
        public static let migrationFailed = Code("migrationFailed")
        /// The code of ``DataStoreError/preferInMemoryFilter``.
        public static let preferInMemoryFilter = Code("preferInMemoryFilter")
        /// The code of ``DataStoreError/preferInMemorySort``.
        public static let preferInMemorySort = Code("preferInMemorySort")
        /// The code of ``DataStoreError/invalidPredicate``.
        public static let invalidPredicate = Code("invalidPredicate")
    }

    /// The kind of failure.
    public let code: Code
    /// What failed, naming the file, offset, entity or operation involved.
    public let message: String
    /// The error underneath, if one caused this.
    public let underlying: (any Error & Sendable)?

    /// An error of kind `code` that says, in `message`, what failed, with the error that
    /// caused it, if any.
    public init(_ code: Code, _ message: String, underlying: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.underlying = underlying
    }

    /// Whether two errors are of the same kind; their messages are not compared.
    public static func == (lhs: DataStoreError, rhs: DataStoreError) -> Bool { lhs.code == rhs.code }
    /// Lets `catch DataStoreError.corruptStore` match any error of that code.
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
