import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxMacros

/// `@Attribute(...)`: expands to nothing; `@Model` copies its arguments into the schema.
public struct AttributeMacro: PeerMacro {
    public static func expansion(
        of node: AttributeSyntax,
        providingPeersOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        []
    }
}

/// `@Relationship(...)`: expands to nothing; `@Model` copies its arguments into the schema.
public struct RelationshipMacro: PeerMacro {
    public static func expansion(
        of node: AttributeSyntax,
        providingPeersOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        []
    }
}

/// `@_StowageIgnored`: expands to nothing; `@Model` skips the property.
public struct StowageIgnoredMacro: PeerMacro {
    public static func expansion(
        of node: AttributeSyntax,
        providingPeersOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        []
    }
}

/// `@Transient`: expands to nothing; `@Model` skips the property. The property must have
/// a default value, because `init(backingData:)` cannot know one.
public struct TransientMacro: PeerMacro {
    public static func expansion(
        of node: AttributeSyntax,
        providingPeersOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        guard let variable = declaration.as(VariableDeclSyntax.self) else { return [] }
        let isVar = variable.bindingSpecifier.tokenKind == .keyword(.var)
        for binding in variable.bindings where binding.initializer == nil && binding.accessorBlock == nil {
            // A `var` of optional type starts out as nil, which is a default value.
            if isVar, let type = binding.typeAnnotation?.type,
                type.is(OptionalTypeSyntax.self) || type.is(ImplicitlyUnwrappedOptionalTypeSyntax.self)
            {
                continue
            }
            let name =
                binding.pattern.as(IdentifierPatternSyntax.self)?.identifier.bareIdentifier
                ?? binding.pattern.trimmedDescription
            context.diagnose(
                Diagnostic(node: binding.pattern, message: StowageDiagnostic.transientWithoutDefault(name)))
        }
        return []
    }
}
