import Foundation

extension Schema {
    /// A relationship between two model classes, as `@Relationship` describes it.
    public struct Relationship: @unchecked Sendable, CustomStringConvertible {
        // @unchecked Sendable: the inverse key path and destination metatype are immutable.

        /// What happens to related models when the owner is deleted.
        public enum DeleteRule: String, Hashable, Codable, Sendable {
            /// Clear the related models' references to the deleted one. The default.
            case nullify
            /// Delete the related models too.
            case cascade
            /// Refuse to delete while related models exist: the save throws.
            case deny
            /// Do nothing; references to the deleted model are left dangling and are
            /// skipped when read.
            case noAction
        }

        /// Relationship options.
        public struct Option: Hashable, Sendable {
            let name: String
            /// The related model is unique for this owner.
            public static let unique = Option(name: "unique")
        }

        /// The options `@Relationship` was given.
        public let options: [Option]
        /// The delete rule.
        public let deleteRule: DeleteRule
        /// The fewest models a to-many relationship may hold when saved; `nil` or 0 for no
        /// lower bound. A save that breaks it throws
        /// ``SwiftDataError/modelValidationFailure``.
        public let minimumModelCount: Int?
        /// The most models a to-many relationship may hold when saved; `nil` or 0 for no
        /// upper bound.
        public let maximumModelCount: Int?
        /// The relationship's name in an earlier schema version.
        public let originalName: String?
        /// The inverse key path as declared, if any.
        public let inverseKeyPath: AnyKeyPath?
        /// A value that forces a new version hash. Accepted.
        public let hashModifier: String?

        /// The destination entity's name.
        public internal(set) var destination: String = ""
        /// Whether the relationship holds at most one model.
        public internal(set) var isToOneRelationship: Bool {
            get { isToOne }
            set { isToOne = newValue }
        }
        var isToOne: Bool = true
        var destinationType: (any PersistentModel.Type)?

        /// Creates a relationship, with the arguments `@Relationship` takes.
        public init(
            _ options: Option..., deleteRule: DeleteRule = .nullify, minimumModelCount: Int? = 0,
            maximumModelCount: Int? = 0, originalName: String? = nil, inverse: AnyKeyPath? = nil,
            hashModifier: String? = nil
        ) {
            self.options = options
            self.deleteRule = deleteRule
            self.minimumModelCount = minimumModelCount
            self.maximumModelCount = maximumModelCount
            self.originalName = originalName
            self.inverseKeyPath = inverse
            self.hashModifier = hashModifier
        }

        /// `to-one` or `to-many`, the destination and the delete rule.
        public var description: String {
            "\(isToOne ? "to-one" : "to-many") \(destination) (\(deleteRule))"
        }
    }
}
