import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxBuilder
import SwiftSyntaxMacros

/// `@Model`: turns a class into a persistent model.
///
/// - member: the backing data, the observation registrar, the entity name, the schema
///   metadata and `init(backingData:)`;
/// - memberAttribute: `@Stowage._PersistedProperty` on every persisted stored property;
/// - extension: the `PersistentModel` and `Observable` conformances.
public struct ModelMacro: MemberMacro, MemberAttributeMacro, ExtensionMacro {

    // MARK: member

    public static func expansion(
        of node: AttributeSyntax,
        providingMembersOf declaration: some DeclGroupSyntax,
        conformingTo protocols: [TypeSyntax],
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        guard let classDecl = declaration.as(ClassDeclSyntax.self) else {
            context.diagnose(nonClassDiagnostic(node, declaration))
            return []
        }

        let members = collectPersistedMembers(classDecl.memberBlock.members, in: context)
        let typeName = classDecl.name.trimmed.text
        let entityName = classDecl.name.bareIdentifier

        let metadataBody: String
        if members.isEmpty {
            metadataBody = "    []"
        } else if !members.containsConditional {
            let entries = members.lines { ["    " + metadataEntry(for: $0, root: typeName) + ","] }
            metadataBody = (["    ["] + entries.map { "    " + $0 } + ["    ]"]).joined(separator: "\n")
        } else {
            // `#if` cannot appear inside an array literal, so build the array step by step.
            let appends = members.lines { ["metadata.append(" + metadataEntry(for: $0, root: typeName) + ")"] }
            metadataBody = (["var metadata: [Stowage.Schema.PropertyMetadata] = []"] + appends + ["return metadata"])
                .map { "    " + $0 }
                .joined(separator: "\n")
        }
        let metadata: DeclSyntax = """
            public static var schemaMetadata: [Stowage.Schema.PropertyMetadata] {
            \(raw: metadataBody)
            }
            """

        let storageLines =
            (["self._$backingData = backingData"]
            + members.lines { ["self._\($0.name) = Stowage._StowagePersistedProperty()"] })
            .map { "    " + $0 }
            .joined(separator: "\n")

        return [
            // Both are made when first needed, not with the model: a fetched model's
            // `init(backingData:)` brings its own backing data, and only a model whose
            // properties have been read can have observers (see `PersistedPropertyMacro`).
            """
            @Stowage._StowageIgnored @exclusivity(unchecked) private var _$backingData: Stowage.ModelBackingData? = nil
            """,
            """
            public var persistentBackingData: Stowage.ModelBackingData {
                get {
                    Stowage.ModelBackingData.existing(in: &_$backingData, of: \(raw: typeName).self)
                }
                set {
                    _$backingData = newValue
                }
            }
            """,
            """
            @Stowage._StowageIgnored @exclusivity(unchecked) private var _$observation: Stowage._ModelObservation? = nil
            """,
            """
            private var _$observationRegistrar: Stowage._ModelObservation {
                if let observation = _$observation {
                    return observation
                }
                let observation = _$backingData?._firstObservation() ?? Stowage._ModelObservation()
                _$observation = observation
                return observation
            }
            """,
            """
            public static var _stowageRecyclable: Bool {
                \(raw: recyclable(classDecl) ? "true" : "false")
            }
            """,
            """
            public func _stowageReleaseForRefill(keeping observation: Stowage._ModelObservation?) -> Bool {
                guard Self._stowageRecyclable, isKnownUniquelyReferenced(&_$backingData) else {
                    return false
                }
                if _$observation !== observation {
                    _$observation = nil
                }
                return true
            }
            """,
            """
            public var _stowageObservation: Stowage._ModelObservation? {
                _$observation
            }
            """,
            """
            public static var _stowageEntityName: String {
                \(literal: entityName)
            }
            """,
            metadata,
            """
            public required init(backingData: Stowage.ModelBackingData) {
            \(raw: storageLines)
            }
            """,
        ]
    }

    /// Protocols a recyclable model may name in its inheritance clause: any other name
    /// may be a superclass, whose stored properties the syntax cannot see.
    static let recyclableInheritance: Set<String> = [
        "Identifiable", "Hashable", "Equatable", "Comparable", "Sendable", "CustomStringConvertible",
        "CustomDebugStringConvertible", "PersistentModel", "Observable",
    ]

    /// Whether `enumerate` may refill a model of this class with another record once its
    /// block has let the model go (`PersistentModel._stowageRecyclable`): the class is
    /// `final`, names no superclass, has no `deinit`, and every stored instance property is
    /// persisted, so that the backing data is the whole of a model's state.
    static func recyclable(_ classDecl: ClassDeclSyntax) -> Bool {
        guard classDecl.modifiers.contains(.final) else { return false }
        for inherited in classDecl.inheritanceClause?.inheritedTypes ?? [] {
            guard recyclableInheritance.contains(simpleTypeName(inherited.type)) else { return false }
        }
        func onlyPersistedState(_ members: MemberBlockItemListSyntax) -> Bool {
            members.allSatisfy { item in
                if item.decl.is(DeinitializerDeclSyntax.self) { return false }
                if let ifConfig = item.decl.as(IfConfigDeclSyntax.self) {
                    return ifConfig.clauses.allSatisfy { clause in
                        guard case .decls(let nested)? = clause.elements else { return true }
                        return onlyPersistedState(nested)
                    }
                }
                guard let variable = item.decl.as(VariableDeclSyntax.self) else { return true }
                if variable.modifiers.contains(.static) || variable.modifiers.contains(.class) { return true }
                if case .persisted = classifyMember(variable) { return true }
                return variable.bindings.allSatisfy(isComputed)
            }
        }
        return onlyPersistedState(classDecl.memberBlock.members)
    }

    /// The persisted properties among `members`, keeping `#if` blocks around those
    /// declared inside them; diagnoses the stored properties `@Model` cannot persist.
    static func collectPersistedMembers(
        _ members: MemberBlockItemListSyntax, in context: some MacroExpansionContext
    ) -> [PersistedMember] {
        var result: [PersistedMember] = []
        for member in members {
            if let ifConfig = member.decl.as(IfConfigDeclSyntax.self) {
                let clauses = ifConfig.clauses.map { clause -> (String, [PersistedMember]) in
                    var header = clause.poundKeyword.text
                    if let condition = clause.condition { header += " " + condition.trimmedDescription }
                    guard case .decls(let nested)? = clause.elements else { return (header, []) }
                    return (header, collectPersistedMembers(nested, in: context))
                }
                if clauses.contains(where: { !$0.1.isEmpty }) {
                    result.append(.conditional(clauses))
                }
                continue
            }
            switch classifyMember(member.decl) {
            case .persisted(let property): result.append(.property(property))
            case .untouched: break
            case .unsupported(let diagnostic): context.diagnose(diagnostic)
            }
        }
        return result
    }

    /// One `Stowage.Schema.PropertyMetadata` builder call.
    static func metadataEntry(for property: PersistedProperty, root: String) -> String {
        var arguments = ["\\\(root).\(property.identifier)", "name: \"\(property.name)\""]
        if let defaultValue = property.defaultValueArgument {
            arguments.append("defaultValue: \(defaultValue)")
        }
        let builder: String
        if let relationship = property.relationship {
            builder = "_relationship"
            arguments.append("relationship: Stowage.Schema.Relationship(\(relationship.argumentText))")
        } else {
            builder = "_property"
            if let attribute = property.attribute {
                arguments.append("attribute: Stowage.Schema.Attribute(\(attribute.argumentText))")
            }
        }
        return "Stowage.Schema.PropertyMetadata.\(builder)(\(arguments.joined(separator: ", ")))"
    }

    /// "'@Model' can only be applied to a class", with a Fix-It for structs and actors.
    static func nonClassDiagnostic(_ node: AttributeSyntax, _ declaration: some DeclGroupSyntax) -> Diagnostic {
        Diagnose.wrongKind(node, declaration, .modelOnNonClass, wanted: .class)
    }

    // MARK: memberAttribute

    public static func expansion(
        of node: AttributeSyntax,
        attachedTo declaration: some DeclGroupSyntax,
        providingAttributesFor member: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [AttributeSyntax] {
        guard declaration.is(ClassDeclSyntax.self),
            case .persisted = classifyMember(member),
            let variable = member.as(VariableDeclSyntax.self),
            variable.attributes.attribute(named: "_PersistedProperty") == nil
        else {
            return []
        }
        if let index = persistedIndex(of: member, in: declaration) {
            // A generic class cannot hold the static key paths `root:` asks for.
            if let classDecl = declaration.as(ClassDeclSyntax.self), canDeclareStaticStorage(classDecl, in: context) {
                return ["@_PersistedProperty(index: \(raw: index), root: \(raw: classDecl.name.trimmed.text).self)"]
            }
            return ["@_PersistedProperty(index: \(raw: index))"]
        }
        return ["@_PersistedProperty"]
    }

    /// Whether `classDecl` can declare static stored properties: not when it, or a type it
    /// is declared in, is generic; and, since the syntax cannot tell whether an extended or
    /// enclosing type is generic, not inside an extension, a function or any other context
    /// but a type declaration.
    static func canDeclareStaticStorage(
        _ classDecl: ClassDeclSyntax, in context: some MacroExpansionContext
    ) -> Bool {
        guard classDecl.genericParameterClause == nil else { return false }
        for node in context.lexicalContext {
            let generics: GenericParameterClauseSyntax?
            if let decl = node.as(ClassDeclSyntax.self) {
                generics = decl.genericParameterClause
            } else if let decl = node.as(StructDeclSyntax.self) {
                generics = decl.genericParameterClause
            } else if let decl = node.as(EnumDeclSyntax.self) {
                generics = decl.genericParameterClause
            } else if let decl = node.as(ActorDeclSyntax.self) {
                generics = decl.genericParameterClause
            } else {
                return false
            }
            if generics != nil { return false }
        }
        return true
    }

    /// The position of `member` among the class's persisted properties, which is its
    /// position in the schema metadata and so in the entity. `nil` when a `#if` block
    /// holds persisted properties: which of them exist is decided after expansion.
    static func persistedIndex(of member: some DeclSyntaxProtocol, in declaration: some DeclGroupSyntax) -> Int? {
        guard case .persisted(let target) = classifyMember(member) else { return nil }
        /// Whether a `#if` block holds a persisted property, at any depth.
        func holdsPersisted(_ ifConfig: IfConfigDeclSyntax) -> Bool {
            ifConfig.clauses.contains { clause in
                guard case .decls(let nested)? = clause.elements else { return false }
                return nested.contains { item in
                    if let inner = item.decl.as(IfConfigDeclSyntax.self) { return holdsPersisted(inner) }
                    if case .persisted = classifyMember(item.decl) { return true }
                    return false
                }
            }
        }
        var index = 0
        var found: Int?
        for item in declaration.memberBlock.members {
            if let ifConfig = item.decl.as(IfConfigDeclSyntax.self) {
                if holdsPersisted(ifConfig) { return nil }
                continue
            }
            guard case .persisted(let property) = classifyMember(item.decl) else { continue }
            if property.identifier == target.identifier, found == nil { found = index }
            index += 1
        }
        return found
    }

    // MARK: extension

    public static func expansion(
        of node: AttributeSyntax,
        attachedTo declaration: some DeclGroupSyntax,
        providingExtensionsOf type: some TypeSyntaxProtocol,
        conformingTo protocols: [TypeSyntax],
        in context: some MacroExpansionContext
    ) throws -> [ExtensionDeclSyntax] {
        guard declaration.is(ClassDeclSyntax.self) else { return [] }
        let declared = Set(
            (declaration.inheritanceClause?.inheritedTypes ?? []).map { simpleTypeName($0.type) })
        return
            try protocols
            .filter { !declared.contains(simpleTypeName($0)) }
            .map { proto in
                try ExtensionDeclSyntax("extension \(type.trimmed): \(raw: qualifiedProtocol(proto)) {}")
            }
    }

    /// `Stowage.PersistentModel` for `PersistentModel`, `Observation.Observable` for
    /// `Observable`; anything already qualified stays as written.
    static func qualifiedProtocol(_ type: TypeSyntax) -> String {
        guard let identifier = type.as(IdentifierTypeSyntax.self) else { return type.trimmedDescription }
        switch identifier.name.text {
        case "PersistentModel": return "Stowage.PersistentModel"
        case "Observable": return "Observation.Observable"
        default: return type.trimmedDescription
        }
    }

    static func simpleTypeName(_ type: TypeSyntax) -> String {
        if let member = type.as(MemberTypeSyntax.self) { return member.name.text }
        if let identifier = type.as(IdentifierTypeSyntax.self) { return identifier.name.text }
        return type.trimmedDescription
    }
}
