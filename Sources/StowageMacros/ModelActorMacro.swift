import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxBuilder
import SwiftSyntaxMacros

/// `@ModelActor`: makes an actor a model actor.
///
/// - member: `modelExecutor`, `modelContainer`, `init(modelContainer:)`, which makes a
///   context for the container and a `DefaultSerialModelExecutor` over it, and
///   `unownedExecutor`, so that the actor runs on that executor;
/// - extension: the `ModelActor` conformance.
///
/// The members take the actor's access level when it is `public` or `package`, so that a
/// public actor's members satisfy the public protocol.
public struct ModelActorMacro: MemberMacro, ExtensionMacro {

    // MARK: member

    public static func expansion(
        of node: AttributeSyntax,
        providingMembersOf declaration: some DeclGroupSyntax,
        conformingTo protocols: [TypeSyntax],
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        guard let actorDecl = declaration.as(ActorDeclSyntax.self) else {
            context.diagnose(nonActorDiagnostic(node, declaration))
            return []
        }
        let access = accessPrefix(actorDecl.modifiers)
        return [
            "\(raw: access)nonisolated let modelExecutor: any Stowage.ModelExecutor",
            "\(raw: access)nonisolated let modelContainer: Stowage.ModelContainer",
            """
            \(raw: access)init(modelContainer: Stowage.ModelContainer) {
                let modelContext = Stowage.ModelContext(modelContainer)
                self.modelExecutor = Stowage.DefaultSerialModelExecutor(modelContext: modelContext)
                self.modelContainer = modelContainer
            }
            """,
            """
            \(raw: access)nonisolated var unownedExecutor: UnownedSerialExecutor {
                modelExecutor._stowageUnownedSerialExecutor
            }
            """,
        ]
    }

    /// `public ` or `package ` when the actor is declared so; nothing otherwise (the
    /// members are then as visible as the actor).
    static func accessPrefix(_ modifiers: DeclModifierListSyntax) -> String {
        for modifier in modifiers {
            switch modifier.name.tokenKind {
            case .keyword(.public), .keyword(.open): return "public "
            case .keyword(.package): return "package "
            default: continue
            }
        }
        return ""
    }

    static func nonActorDiagnostic(_ node: AttributeSyntax, _ declaration: some DeclGroupSyntax) -> Diagnostic {
        Diagnose.wrongKind(node, declaration, .modelActorOnNonActor, wanted: .actor)
    }

    // MARK: extension

    public static func expansion(
        of node: AttributeSyntax,
        attachedTo declaration: some DeclGroupSyntax,
        providingExtensionsOf type: some TypeSyntaxProtocol,
        conformingTo protocols: [TypeSyntax],
        in context: some MacroExpansionContext
    ) throws -> [ExtensionDeclSyntax] {
        guard declaration.is(ActorDeclSyntax.self) else { return [] }
        let declared = Set(
            (declaration.inheritanceClause?.inheritedTypes ?? []).map { ModelMacro.simpleTypeName($0.type) })
        return
            try protocols
            .filter { !declared.contains(ModelMacro.simpleTypeName($0)) }
            .map { proto in
                let name =
                    proto.as(IdentifierTypeSyntax.self)?.name.text == "ModelActor"
                    ? "Stowage.ModelActor" : proto.trimmedDescription
                return try ExtensionDeclSyntax("extension \(type.trimmed): \(raw: name) {}")
            }
    }
}
