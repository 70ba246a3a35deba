import Foundation

extension Schema {
    /// The options `@Attribute` gives a stored property.
    public struct Attribute: Sendable, CustomStringConvertible {
        /// One attribute option.
        public struct Option: Hashable, Sendable, CustomStringConvertible {
            enum Kind: Hashable, Sendable {
                case unique, externalStorage, preserveValueOnDeletion, ephemeral, spotlight
                case allowsCloudEncryption
                case transformable(ObjectIdentifier, String)
            }
            let kind: Kind
            let transformer: ValueTransformer.Type?

            init(_ kind: Kind, transformer: ValueTransformer.Type? = nil) {
                self.kind = kind
                self.transformer = transformer
            }

            /// Whether two options are the same option (for `.transformable(by:)`, with the
            /// same transformer).
            public static func == (a: Option, b: Option) -> Bool { a.kind == b.kind }
            /// Hashes what ``==(_:_:)`` compares.
            public func hash(into hasher: inout Hasher) { hasher.combine(kind) }

            /// The value is unique across all models of the entity: saving a duplicate
            /// updates the existing model (an upsert), as in SwiftData. Stowage can be told
            /// to throw instead; see ``ModelContext/uniquenessPolicy``.
            public static let unique = Option(.unique)
            /// Large data kept beside the store. Accepted; stored inline by the in-memory store.
            public static let externalStorage = Option(.externalStorage)
            /// The value stays readable in history after the model is deleted.
            public static let preserveValueOnDeletion = Option(.preserveValueOnDeletion)
            /// The value is tracked for changes but not persisted. Accepted.
            public static let ephemeral = Option(.ephemeral)
            /// Indexed by Spotlight on Apple platforms. Accepted and ignored on Linux.
            public static let spotlight = Option(.spotlight)
            /// Encrypted in CloudKit on Apple platforms. Accepted and ignored.
            public static let allowsCloudEncryption = Option(.allowsCloudEncryption)
            /// The value is stored as the `Data` that `transformer` turns it into.
            public static func transformable(by transformer: ValueTransformer.Type) -> Option {
                Option(
                    .transformable(ObjectIdentifier(transformer), String(describing: transformer)),
                    transformer: transformer)
            }

            /// The option as Swift spells it: `.unique`, `.transformable(by: T)`, ….
            public var description: String {
                switch kind {
                case .unique: ".unique"
                case .externalStorage: ".externalStorage"
                case .preserveValueOnDeletion: ".preserveValueOnDeletion"
                case .ephemeral: ".ephemeral"
                case .spotlight: ".spotlight"
                case .allowsCloudEncryption: ".allowsCloudEncryption"
                case .transformable(_, let name): ".transformable(by: \(name))"
                }
            }
        }

        /// The options.
        public let options: Set<Option>
        /// The property's name in an earlier schema version.
        public let originalName: String?
        /// A value that forces a new version hash. Accepted.
        public let hashModifier: String?

        /// Creates attribute options, with the arguments `@Attribute` takes.
        public init(_ options: Option..., originalName: String? = nil, hashModifier: String? = nil) {
            self.options = Set(options)
            self.originalName = originalName
            self.hashModifier = hashModifier
        }

        /// Whether the attribute is unique.
        public var isUnique: Bool { options.contains(.unique) }

        var transformerType: ValueTransformer.Type? { options.lazy.compactMap(\.transformer).first }

        /// The options, sorted, then `originalName` if there is one.
        public var description: String {
            var parts = options.map(\.description).sorted()
            if let originalName { parts.append("originalName: \(originalName)") }
            return parts.joined(separator: ", ")
        }
    }
}

/// Turns a value that is not Codable into `Data` and back, for
/// `@Attribute(.transformable(by:))`.
///
/// Foundation on Linux has no `ValueTransformer`, so Stowage supplies this one with the
/// same shape: subclass it and override the two transform methods.
open class ValueTransformer {
    /// A transformer; `@Attribute(.transformable(by:))` makes one with this initializer.
    public required init() {}
    /// Turns a property value into the `Data` to store.
    open func transformedValue(_ value: Any?) -> Any? { value }
    /// Turns stored `Data` back into a property value.
    open func reverseTransformedValue(_ value: Any?) -> Any? { value }
    /// Whether ``reverseTransformedValue(_:)`` is supported.
    open class func allowsReverseTransformation() -> Bool { true }
}
