import SwiftDiagnostics
import SwiftSyntax

extension AttributeSyntax {
    /// The attribute's name without any module qualification or generic arguments:
    /// `Transient` for both `@Transient` and `@Stowage.Transient`.
    var simpleName: String {
        if let identifier = attributeName.as(IdentifierTypeSyntax.self) {
            return identifier.name.text
        }
        if let member = attributeName.as(MemberTypeSyntax.self) {
            return member.name.text
        }
        return attributeName.trimmedDescription
    }

    /// The argument list as written, without surrounding trivia; empty without arguments.
    var argumentText: String {
        guard case .argumentList(let list)? = arguments else { return "" }
        return list.trimmedDescription
    }
}

extension AttributeListSyntax {
    /// The first attribute called `name` (module qualification ignored).
    func attribute(named name: String) -> AttributeSyntax? {
        for element in self {
            if case .attribute(let attribute) = element, attribute.simpleName == name {
                return attribute
            }
        }
        return nil
    }
}

extension DeclModifierListSyntax {
    func contains(_ keyword: Keyword) -> Bool {
        contains { $0.name.tokenKind == .keyword(keyword) }
    }
}

extension TokenSyntax {
    /// An identifier's text without the backticks that escape keywords.
    var bareIdentifier: String {
        var text = trimmed.text
        if text.hasPrefix("`"), text.hasSuffix("`"), text.count >= 2 {
            text = String(text.dropFirst().dropLast())
        }
        return text
    }
}

/// A stored property that `@Model` persists.
struct PersistedProperty {
    /// The name as written, possibly escaped with backticks: use it in code.
    let identifier: String
    /// The name without backticks: use it in strings and derived names.
    let name: String
    /// The declared type, if written.
    let type: TypeSyntax?
    /// The initial value written in the declaration.
    let initializer: ExprSyntax?
    /// `@Attribute(...)`, if present.
    let attribute: AttributeSyntax?
    /// `@Relationship(...)`, if present.
    let relationship: AttributeSyntax?
}

/// What `@Model` does with one member declaration.
enum MemberKind {
    /// A stored `var` the model persists.
    case persisted(PersistedProperty)
    /// Anything `@Model` leaves alone: static, computed, transient, ignored and lazy
    /// properties, and declarations that are not properties.
    case untouched
    /// A stored property `@Model` cannot persist; the diagnostic says why.
    case unsupported(Diagnostic)
}

/// The marker attributes that exclude a property from persistence.
let excludingAttributes = ["Transient", "_StowageIgnored"]

/// Accessor kinds that make a property computed (observers do not).
private let computingAccessors: Set<Keyword> = [
    .get, .set, ._read, ._modify, .unsafeAddress, .unsafeMutableAddress, .`init`,
]

/// Whether `binding` is computed: a getter, or accessors of which one computes (observers
/// alone leave it stored).
func isComputed(_ binding: PatternBindingSyntax) -> Bool {
    guard let block = binding.accessorBlock else { return false }
    guard case .accessors(let accessors) = block.accessors else { return true }
    return accessors.contains { accessor in
        computingAccessors.contains { accessor.accessorSpecifier.tokenKind == .keyword($0) }
    }
}

func classifyMember(_ decl: some DeclSyntaxProtocol) -> MemberKind {
    guard let variable = decl.as(VariableDeclSyntax.self) else { return .untouched }
    if variable.modifiers.contains(.static) || variable.modifiers.contains(.class)
        || variable.modifiers.contains(.lazy)
    {
        return .untouched
    }
    if excludingAttributes.contains(where: { variable.attributes.attribute(named: $0) != nil }) {
        return .untouched
    }

    // A getter body or any get/set-style accessor makes the property computed.
    var observerBlock: AccessorBlockSyntax?
    for binding in variable.bindings {
        guard let block = binding.accessorBlock else { continue }
        if isComputed(binding) { return .untouched }
        observerBlock = block
    }

    if variable.bindingSpecifier.tokenKind == .keyword(.let) {
        return .unsupported(
            Diagnostic(
                node: variable.bindingSpecifier,
                message: StowageDiagnostic.storedLet,
                fixIt: Diagnose.replacing(variable.bindingSpecifier, with: .var)))
    }
    guard variable.bindings.count == 1, let binding = variable.bindings.first else {
        return .unsupported(Diagnostic(node: variable.bindings, message: StowageDiagnostic.multipleBindings))
    }
    guard let pattern = binding.pattern.as(IdentifierPatternSyntax.self) else {
        return .unsupported(Diagnostic(node: binding.pattern, message: StowageDiagnostic.unsupportedPattern))
    }
    if let observerBlock {
        return .unsupported(
            Diagnostic(
                node: observerBlock,
                message: StowageDiagnostic.propertyObservers(pattern.identifier.bareIdentifier)))
    }
    return .persisted(
        PersistedProperty(
            identifier: pattern.identifier.trimmed.text,
            name: pattern.identifier.bareIdentifier,
            type: binding.typeAnnotation?.type.trimmed,
            initializer: binding.initializer?.value.trimmed,
            attribute: variable.attributes.attribute(named: "Attribute"),
            relationship: variable.attributes.attribute(named: "Relationship")))
}

/// A persisted property, or an `#if` block with persisted properties inside.
enum PersistedMember {
    case property(PersistedProperty)
    /// The clauses: the `#if`/`#elseif`/`#else` line and the members inside it.
    case conditional([(header: String, members: [PersistedMember])])
}

extension Array where Element == PersistedMember {
    var containsConditional: Bool {
        contains { if case .conditional = $0 { true } else { false } }
    }

    /// The lines `render` gives for each property, wrapped in the `#if` blocks around it.
    func lines(_ render: (PersistedProperty) -> [String]) -> [String] {
        flatMap { member -> [String] in
            switch member {
            case .property(let property):
                return render(property)
            case .conditional(let clauses):
                return clauses.flatMap { [$0.header] + $0.members.lines(render) } + ["#endif"]
            }
        }
    }
}

extension PersistedProperty {
    /// The initial value as an argument for `defaultValue:`, whose type is `Value?`.
    ///
    /// An implicit member such as `.none` would be looked up in `Optional` there, so an
    /// initial value that uses one is coerced to the declared type:
    /// `var reminder: Reminder = .none` gives `.none as Reminder`.
    var defaultValueArgument: String? {
        guard let initializer else { return nil }
        guard let type, containsImplicitMember(Syntax(initializer)) else {
            return initializer.trimmedDescription
        }
        var typeText = type.trimmedDescription
        if let unwrapped = type.as(ImplicitlyUnwrappedOptionalTypeSyntax.self) {
            typeText = unwrapped.wrappedType.trimmedDescription + "?"
        }
        let isPostfix = initializer.is(MemberAccessExprSyntax.self) || initializer.is(FunctionCallExprSyntax.self)
        let value = isPostfix ? initializer.trimmedDescription : "(\(initializer.trimmedDescription))"
        return "\(value) as \(typeText)"
    }
}

/// Whether `node` uses an implicit member expression (`.name` without a base) outside
/// any closure.
private func containsImplicitMember(_ node: Syntax) -> Bool {
    if let member = node.as(MemberAccessExprSyntax.self), member.base == nil {
        return true
    }
    if node.is(ClosureExprSyntax.self) {
        return false
    }
    return node.children(viewMode: .sourceAccurate).contains { containsImplicitMember($0) }
}
