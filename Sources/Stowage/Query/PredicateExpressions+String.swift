import Foundation

// String searches Foundation on Linux lacks: `localizedStandardContains(_:)` and
// `caseInsensitiveCompare(_:)`. The `#Predicate` macro emits calls to the `build_`
// functions below, so predicates written for Apple platforms compile and run here.

extension PredicateExpressions {
    /// `base.localizedStandardContains(other)`: case- and diacritic-insensitive search.
    ///
    /// Foundation declares this node only on Apple platforms; Stowage supplies it on Linux.
    public struct StowageLocalizedStandardContains<Root: PredicateExpression, Other: PredicateExpression>:
        PredicateExpression
    where Root.Output: StringProtocol, Other.Output: StringProtocol {
        /// The node evaluates to whether `root` contains `other`.
        public typealias Output = Bool
        /// The string searched in.
        public let root: Root
        /// The string searched for.
        public let other: Other

        /// The search of `other` in `root`.
        public init(root: Root, other: Other) {
            self.root = root
            self.other = other
        }

        /// Whether `root` contains `other`, ignoring case and diacritics.
        public func evaluate(_ bindings: PredicateBindings) throws -> Bool {
            StringSearch.localizedStandardContains(
                String(try root.evaluate(bindings)), String(try other.evaluate(bindings)))
        }
    }

    /// `base.caseInsensitiveCompare(other)`.
    ///
    /// Foundation declares this node only on Apple platforms; Stowage supplies it on Linux.
    public struct StowageCaseInsensitiveCompare<Root: PredicateExpression, Other: PredicateExpression>:
        PredicateExpression
    where Root.Output: StringProtocol, Other.Output: StringProtocol {
        /// The node evaluates to the order of `root` and `other`, ignoring case.
        public typealias Output = ComparisonResult
        /// The string compared.
        public let root: Root
        /// The string it is compared with.
        public let other: Other

        /// The comparison of `root` with `other`.
        public init(root: Root, other: Other) {
            self.root = root
            self.other = other
        }

        /// The order of `root` and `other`, ignoring case.
        public func evaluate(_ bindings: PredicateBindings) throws -> ComparisonResult {
            StringSearch.caseInsensitiveCompare(
                String(try root.evaluate(bindings)), String(try other.evaluate(bindings)))
        }
    }

    /// Called by `#Predicate` for `localizedStandardContains(_:)`.
    public static func build_localizedStandardContains<Root, Other>(_ root: Root, _ other: Other)
        -> StowageLocalizedStandardContains<Root, Other>
    {
        StowageLocalizedStandardContains(root: root, other: other)
    }

    /// Called by `#Predicate` for `caseInsensitiveCompare(_:)`.
    public static func build_caseInsensitiveCompare<Root, Other>(_ root: Root, _ other: Other)
        -> StowageCaseInsensitiveCompare<Root, Other>
    {
        StowageCaseInsensitiveCompare(root: root, other: other)
    }
}

extension PredicateExpressions.StowageLocalizedStandardContains: StandardPredicateExpression
where Root: StandardPredicateExpression, Other: StandardPredicateExpression {}

extension PredicateExpressions.StowageCaseInsensitiveCompare: StandardPredicateExpression
where Root: StandardPredicateExpression, Other: StandardPredicateExpression {}

extension PredicateExpressions.StowageLocalizedStandardContains: Codable where Root: Codable, Other: Codable {}
extension PredicateExpressions.StowageCaseInsensitiveCompare: Codable where Root: Codable, Other: Codable {}
extension PredicateExpressions.StowageLocalizedStandardContains: Sendable where Root: Sendable, Other: Sendable {}
extension PredicateExpressions.StowageCaseInsensitiveCompare: Sendable where Root: Sendable, Other: Sendable {}

extension PredicateExpressions.StowageLocalizedStandardContains: QueryCompilable {
    func compile(into compiler: inout PredicateCompiler) throws -> (QueryExpression, PredicateCompiler.Kind) {
        (.function(.localizedStandardContains, try compiler.compile(root).0, try compiler.compile(other).0), .value)
    }
}

extension PredicateExpressions.StowageCaseInsensitiveCompare: QueryCompilable {
    func compile(into compiler: inout PredicateCompiler) throws -> (QueryExpression, PredicateCompiler.Kind) {
        (.function(.caseInsensitiveCompare, try compiler.compile(root).0, try compiler.compile(other).0), .value)
    }
}
