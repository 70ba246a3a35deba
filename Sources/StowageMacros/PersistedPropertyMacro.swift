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
                _$observationRegistrar.access(self, keyPath: \\.\(raw: identifier))
                return self.getValue(forKey: \\.\(raw: identifier))
            }
            """,
            """
            set {
                if let observation = _$observation {
                    observation.withMutation(of: self, keyPath: \\.\(raw: identifier)) {
                        self.setValue(forKey: \\.\(raw: identifier), to: newValue)
                    }
                } else {
                    self.setValue(forKey: \\.\(raw: identifier), to: newValue)
                }
            }
            """,
        ]
    }

    public static func expansion(
        of node: AttributeSyntax,
        providingPeersOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        guard let (_, name) = propertyName(declaration) else { return [] }
        return ["@Stowage._StowageIgnored private var _\(raw: name): Stowage._StowagePersistedProperty"]
    }
}
