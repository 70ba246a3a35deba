import SwiftDiagnostics
import SwiftSyntax

/// An error or warning a Stowage macro reports.
struct StowageDiagnostic: DiagnosticMessage {
    let message: String
    let diagnosticID: MessageID
    let severity: DiagnosticSeverity

    init(_ id: String, _ message: String, severity: DiagnosticSeverity = .error) {
        self.message = message
        self.diagnosticID = MessageID(domain: "StowageMacros", id: id)
        self.severity = severity
    }

    static let modelOnNonClass = StowageDiagnostic(
        "modelOnNonClass", "'@Model' can only be applied to a class")

    static let modelActorOnNonActor = StowageDiagnostic(
        "modelActorOnNonActor", "'@ModelActor' can only be applied to an actor")

    static let storedLet = StowageDiagnostic(
        "storedLet", "@Model stored properties must be declared with 'var'")

    static func propertyObservers(_ name: String) -> StowageDiagnostic {
        StowageDiagnostic(
            "propertyObservers",
            "@Model does not support 'willSet'/'didSet' observers on stored property '\(name)'")
    }

    static let multipleBindings = StowageDiagnostic(
        "multipleBindings", "@Model needs each stored property in its own 'var' declaration")

    static let unsupportedPattern = StowageDiagnostic(
        "unsupportedPattern", "@Model stored properties must be declared with a simple name")

    static func transientWithoutDefault(_ name: String) -> StowageDiagnostic {
        StowageDiagnostic(
            "transientWithoutDefault", "@Transient property '\(name)' must have a default value")
    }

    static func keyPathGroupsInSubclass(_ macro: String) -> StowageDiagnostic {
        StowageDiagnostic(
            "keyPathGroupsInSubclass",
            "'#\(macro)' in a model subclass is not supported: declare it on the base model class, "
                + "where it covers every subclass")
    }

    static func missingModelType(_ macro: String) -> StowageDiagnostic {
        StowageDiagnostic(
            "missingModelType",
            "'#\(macro)' needs the model type as a generic argument, as in '#\(macro)<Item>([\\.name])'")
    }
}

/// The text of a Fix-It a Stowage macro offers.
struct StowageFixIt: FixItMessage {
    let message: String
    let fixItID: MessageID

    init(_ id: String, _ message: String) {
        self.message = message
        self.fixItID = MessageID(domain: "StowageMacros", id: id)
    }

    static func replaceKeyword(_ old: String, with new: String) -> StowageFixIt {
        StowageFixIt("replace-\(old)-with-\(new)", "Replace '\(old)' with '\(new)'")
    }
}

/// Namespace-free helpers shared by the macros.
enum Diagnose {
    /// A Fix-It that swaps one keyword token for another, keeping its trivia.
    static func replacing(_ token: TokenSyntax, with keyword: Keyword) -> FixIt {
        let replacement = TokenSyntax.keyword(
            keyword, leadingTrivia: token.leadingTrivia, trailingTrivia: token.trailingTrivia)
        return FixIt.replace(
            message: StowageFixIt.replaceKeyword(token.text, with: replacement.text),
            oldNode: token, newNode: replacement)
    }

    /// A macro applied to the wrong kind of declaration: `message` on the attribute, with a
    /// Fix-It that makes a class, struct or actor the `wanted` kind (an enum has none: its
    /// cases would not survive the change).
    static func wrongKind(
        _ node: AttributeSyntax, _ declaration: some DeclGroupSyntax, _ message: StowageDiagnostic,
        wanted: Keyword
    ) -> Diagnostic {
        let keyword: TokenSyntax? =
            declaration.as(ClassDeclSyntax.self)?.classKeyword
            ?? declaration.as(StructDeclSyntax.self)?.structKeyword
            ?? declaration.as(ActorDeclSyntax.self)?.actorKeyword
        let fixIts = keyword.flatMap { $0.tokenKind == .keyword(wanted) ? nil : [replacing($0, with: wanted)] } ?? []
        return Diagnostic(node: node, message: message, fixIts: fixIts)
    }
}
