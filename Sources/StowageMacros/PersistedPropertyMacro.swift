import SwiftSyntax
import SwiftSyntaxBuilder
import SwiftSyntaxMacros

/// `@_PersistedProperty`, which `@Model` attaches to each persisted stored property:
/// routes the property through the model's backing data and observation registrar, and
/// adds the `_name` placeholder the init accessor initializes.
public struct PersistedPropertyMacro: AccessorMacro, PeerMacro {
    /// The name of a single-binding stored `var` without accessors.
    static func propertyName(_ declaration: some DeclSyntaxProtocol) -> (identifier: String, name: String)? {
        guard let variable = declaration.as(VariableDeclSyntax.self),
            variable.bindingSpecifier.tokenKind == .keyword(.var),
            variable.bindings.count == 1,
            let binding = variable.bindings.first,
            binding.accessorBlock == nil,
            let pattern = binding.pattern.as(IdentifierPatternSyntax.self)
        else {
            return nil
        }
        return (pattern.identifier.trimmed.text, pattern.identifier.bareIdentifier)
    }

    public static func expansion(
        of node: AttributeSyntax,
        providingAccessorsOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [AccessorDeclSyntax] {
        guard let (identifier, name) = propertyName(declaration) else { return [] }
        // With the property's position (from `@Model`), reads and writes go by position.
        let read: String
        let write: String
        if let index = index(node) {
            read = "self._getValue(forKey: \\.\(identifier), at: \(index))"
            write = "self._setValue(forKey: \\.\(identifier), at: \(index), to: newValue)"
        } else {
            read = "self.getValue(forKey: \\.\(identifier))"
            write = "self.setValue(forKey: \\.\(identifier), to: newValue)"
        }
        // The key path Observation is handed: made once beside the property when `@Model`
        // names the class (`root:`), else a literal, which is made on every read.
        let keyPath = root(node).map { "\($0)._keyPath_\(name).keyPath" } ?? "\\.\(identifier)"
        return [
            """
            @storageRestrictions(accesses: _$backingData, initializes: _\(raw: name))
            init(initialValue) {
                Stowage.ModelBackingData.setInitialValue(initialValue, forKey: \(literal: name), in: &_$backingData, of: Self.self)
                _\(raw: name) = Stowage._StowagePersistedProperty()
            }
            """,
            """
            get {
                _$observationRegistrar.access(self, keyPath: \(raw: keyPath))
                return \(raw: read)
            }
            """,
            """
            set {
                if let observation = _$observation {
                    observation.withMutation(of: self, keyPath: \(raw: keyPath)) {
                        \(raw: write)
                    }
                } else {
                    \(raw: write)
                }
            }
            """,
        ]
    }

    /// The `index:` argument of `@_PersistedProperty(index:)`, when it is an integer literal.
    static func index(_ node: AttributeSyntax) -> Int? {
        guard case .argumentList(let arguments) = node.arguments,
            let argument = arguments.first(where: { $0.label?.text == "index" }),
            let literal = argument.expression.as(IntegerLiteralExprSyntax.self)
        else { return nil }
        return Int(literal.literal.text)
    }

    /// The class named by the `root:` argument (`root: Trip.self`), when `@Model` gives one.
    static func root(_ node: AttributeSyntax) -> String? {
        guard case .argumentList(let arguments) = node.arguments,
            let argument = arguments.first(where: { $0.label?.text == "root" }),
            let access = argument.expression.as(MemberAccessExprSyntax.self),
            access.declName.baseName.tokenKind == .keyword(.self),
            let base = access.base
        else { return nil }
        return base.trimmedDescription
    }

    public static func expansion(
        of node: AttributeSyntax,
        providingPeersOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        guard let (identifier, name) = propertyName(declaration) else { return [] }
        var peers: [DeclSyntax] = [
            "@Stowage._StowageIgnored private var _\(raw: name): Stowage._StowagePersistedProperty"
        ]
        if let root = root(node) {
            // Made once: a key path literal in the accessors was looked up on every read
            // (`swift_getKeyPath`), most of a read that does nothing else (see
            // `Benchmarks/RESULTS.md`, "Measurements behind the code"). Key paths
            // are immutable, so sharing one across threads is safe; the box says so without
            // `nonisolated(unsafe)`, which Swift 6 calls unnecessary for the key paths it
            // already takes to be `Sendable`.
            peers.append(
                "private static let _keyPath_\(raw: name) = Stowage._StowageKeyPath(\\\(raw: root).\(raw: identifier))"
            )
        }
        return peers
    }
}
