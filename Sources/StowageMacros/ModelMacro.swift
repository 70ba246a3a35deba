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
        let shape = Shape(classDecl, conformingTo: protocols)
        if case .subclass = shape {
            for item in classDecl.memberBlock.members {
                guard let expansion = item.decl.as(MacroExpansionDeclSyntax.self) else { continue }
                let name = expansion.macroName.text
                if name == "Index" || name == "Unique" {
                    context.diagnose(
                        Diagnostic(node: expansion.macroName, message: StowageDiagnostic.keyPathGroupsInSubclass(name)))
                }
            }
        }

        let storageLines =
            (shape.isSubclass ? [] : ["self._$backingData = backingData"])
            + members.lines { ["self._\($0.name) = Stowage._StowagePersistedProperty()"] }
        switch shape {
        case .finalRoot:
            return finalRootMembers(
                classDecl, members: members, typeName: typeName, entityName: entityName,
                storageLines: storageLines)
        case .openRoot:
            return openRootMembers(
                members: members, typeName: typeName, entityName: entityName, storageLines: storageLines)
        case .subclass(let superclass):
            return subclassMembers(
                classDecl, members: members, typeName: typeName, entityName: entityName, superclass: superclass,
                storageLines: storageLines)
        }
    }

    /// Where a model class sits among model classes, which decides what `@Model` writes.
    enum Shape {
        /// A `final` class, or a generic one, with no model superclass: static members,
        /// private storage, properties read by position.
        case finalRoot
        /// A class that a model class may inherit from (SwiftData's model inheritance):
        /// its per-class members are `class` members a subclass overrides, and the
        /// observation registrar is visible to a subclass's accessors.
        case openRoot
        /// A model class whose superclass is a model class.
        case subclass(superclass: TypeSyntax)

        var isSubclass: Bool {
            if case .subclass = self { return true }
            return false
        }

        /// The compiler says whether the class already conforms to `PersistentModel`
        /// (`conformingTo` leaves it out): then its superclass is a model class, named first
        /// in the inheritance clause. A class that names `PersistentModel` itself is a root.
        init(_ classDecl: ClassDeclSyntax, conformingTo protocols: [TypeSyntax]) {
            let first = classDecl.inheritanceClause?.inheritedTypes.first?.type
            let inheritsConformance = !protocols.contains { simpleTypeName($0) == "PersistentModel" }
            if inheritsConformance, let first, !recyclableInheritance.contains(simpleTypeName(first)) {
                self = .subclass(superclass: first.trimmed)
            } else if classDecl.modifiers.contains(.final) || classDecl.genericParameterClause != nil {
                self = .finalRoot
            } else {
                self = .openRoot
            }
        }
    }

    /// The body of a metadata getter or generic metadata function over `root`.
    static func metadataBody(_ members: [PersistedMember], root: String, prefix: String? = nil) -> String {
        if members.isEmpty {
            return "    " + (prefix ?? "[]")
        }
        if !members.containsConditional {
            let entries = members.lines { ["        " + metadataEntry(for: $0, root: root) + ","] }
            let opening = prefix.map { "    \($0) + [" } ?? "    ["
            return ([opening] + entries + ["    ]"]).joined(separator: "\n")
        }
        // `#if` cannot appear inside an array literal, so build the array step by step.
        let appends = members.lines { ["metadata.append(" + metadataEntry(for: $0, root: root) + ")"] }
        return (["var metadata: [Stowage.Schema.PropertyMetadata] = \(prefix ?? "[]")"] + appends + ["return metadata"])
            .map { "    " + $0 }
            .joined(separator: "\n")
    }

    static func initializer(_ storageLines: [String], callingSuper: Bool) -> DeclSyntax {
        let lines = storageLines + (callingSuper ? ["super.init(backingData: backingData)"] : [])
        return """
            public required init(backingData: Stowage.ModelBackingData) {
            \(raw: lines.map { "    " + $0 }.joined(separator: "\n"))
            }
            """
    }

    /// The members of a class no model class can inherit from: as before inheritance.
    static func finalRootMembers(
        _ classDecl: ClassDeclSyntax, members: [PersistedMember], typeName: String, entityName: String,
        storageLines: [String]
    ) -> [DeclSyntax] {
        let metadata: DeclSyntax = """
            public static var schemaMetadata: [Stowage.Schema.PropertyMetadata] {
            \(raw: metadataBody(members, root: typeName))
            }
            """
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
            observationRegistrar(access: "private"),
            """
            public static var _stowageRecyclable: Bool {
                \(raw: recyclable(classDecl) ? "true" : "false")
            }
            """,
            releaseForRefill,
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
            initializer(storageLines, callingSuper: false),
        ]
    }

    static func observationRegistrar(access: String) -> DeclSyntax {
        """
        \(raw: access) var _$observationRegistrar: Stowage._ModelObservation {
            if let observation = _$observation {
                return observation
            }
            let observation = _$backingData?._firstObservation() ?? Stowage._ModelObservation()
            _$observation = observation
            return observation
        }
        """
    }

    static let releaseForRefill: DeclSyntax = """
        public func _stowageReleaseForRefill(keeping observation: Stowage._ModelObservation?) -> Bool {
            guard Self._stowageRecyclable, isKnownUniquelyReferenced(&_$backingData) else {
                return false
            }
            if _$observation !== observation {
                _$observation = nil
            }
            return true
        }
        """

    /// The name of the generic metadata function of the class called `name`.
    static func metadataFunction(_ name: String) -> String { "_stowageMetadata_" + name }

    /// The members of a model class other model classes may inherit from. The schema
    /// metadata comes from a function generic over the class a key path starts from, so
    /// that a subclass lists the inherited properties under key paths of its own (`\Sub.name`
    /// is not `\Base.name`); the per-class members are `class` members a subclass overrides;
    /// and the observation registrar is visible to a subclass's accessors.
    static func openRootMembers(
        members: [PersistedMember], typeName: String, entityName: String, storageLines: [String]
    ) -> [DeclSyntax] {
        [
            """
            @Stowage._StowageIgnored @exclusivity(unchecked) private var _$backingData: Stowage.ModelBackingData? = nil
            """,
            // A subclass's own initial values wait in its own storage until the base class's
            // initializer has made the object; the first use of the backing data takes them.
            """
            public var persistentBackingData: Stowage.ModelBackingData {
                get {
                    let data = Stowage.ModelBackingData.existing(in: &_$backingData, of: type(of: self))
                    if data._awaitsSubclassValues {
                        _stowageSettleInitialValues(into: data)
                    }
                    return data
                }
                set {
                    _$backingData = newValue
                }
            }
            """,
            """
            @Stowage._StowageIgnored @exclusivity(unchecked) var _$observation: Stowage._ModelObservation? = nil
            """,
            observationRegistrar(access: ""),
            """
            public static var _stowageRecyclable: Bool {
                false
            }
            """,
            releaseForRefill,
            """
            public var _stowageObservation: Stowage._ModelObservation? {
                _$observation
            }
            """,
            """
            public class var _stowageEntityName: String {
                \(literal: entityName)
            }
            """,
            """
            public class var _stowageSuperentityType: (any Stowage.PersistentModel.Type)? {
                nil
            }
            """,
            """
            public func _stowageSettleInitialValues(into data: Stowage.ModelBackingData) {
                data._awaitsSubclassValues = false
            }
            """,
            """
            public class var schemaMetadata: [Stowage.Schema.PropertyMetadata] {
                \(raw: metadataFunction(entityName))(\(raw: typeName).self)
            }
            """,
            """
            public static func \(raw: metadataFunction(entityName))<Root: \(raw: typeName)>(_ root: Root.Type) -> [Stowage.Schema.PropertyMetadata] {
            \(raw: metadataBody(members, root: "Root"))
            }
            """,
            initializer(storageLines, callingSuper: false),
        ]
    }

    /// The members of a model class whose superclass is a model class: it shares the
    /// superclass's backing data and observation registrar, lists the inherited
    /// properties before its own, and names its superclass for the schema.
    static func subclassMembers(
        _ classDecl: ClassDeclSyntax, members: [PersistedMember], typeName: String, entityName: String,
        superclass: TypeSyntax,
        storageLines: [String]
    ) -> [DeclSyntax] {
        let superName = simpleTypeName(superclass)
        let inherited = "\(superclass.trimmedDescription).\(metadataFunction(superName))(root)"
        return [
            // The initial values the subclass's own properties are given before
            // `super.init`, when the superclass's storage does not exist yet.
            """
            @Stowage._StowageIgnored @exclusivity(unchecked) private var _$backingData: Stowage.ModelBackingData? = nil
            """,
            """
            public override class var _stowageEntityName: String {
                \(literal: entityName)
            }
            """,
            """
            public override class var _stowageSuperentityType: (any Stowage.PersistentModel.Type)? {
                \(raw: superclass.trimmedDescription).self
            }
            """,
            """
            public override func _stowageSettleInitialValues(into data: Stowage.ModelBackingData) {
                if let pending = _$backingData {
                    _$backingData = nil
                    data._adoptInitialValues(from: pending)
                }
                super._stowageSettleInitialValues(into: data)
            }
            """,
            """
            public override class var schemaMetadata: [Stowage.Schema.PropertyMetadata] {
                \(raw: metadataFunction(entityName))(\(raw: typeName).self)
            }
            """,
            """
            public static func \(raw: metadataFunction(entityName))<Root: \(raw: typeName)>(_ root: Root.Type) -> [Stowage.Schema.PropertyMetadata] {
            \(raw: metadataBody(members, root: "Root", prefix: inherited))
            }
            """,
        ] + (declaresDesignatedInitializer(classDecl) ? [initializer(storageLines, callingSuper: true)] : [])
    }

    /// Whether the class declares a designated initializer. One that declares none
    /// inherits its superclass's, `init(backingData:)` among them, as any Swift subclass
    /// whose stored properties all have initial values does: so `@Model` writes
    /// `init(backingData:)` only for a class that loses the inherited ones.
    static func declaresDesignatedInitializer(_ classDecl: ClassDeclSyntax) -> Bool {
        func declares(_ members: MemberBlockItemListSyntax) -> Bool {
            members.contains { item in
                if let ifConfig = item.decl.as(IfConfigDeclSyntax.self) {
                    return ifConfig.clauses.contains { clause in
                        guard case .decls(let nested)? = clause.elements else { return false }
                        return declares(nested)
                    }
                }
                guard let initializer = item.decl.as(InitializerDeclSyntax.self) else { return false }
                return !initializer.modifiers.contains { $0.name.tokenKind == .keyword(.convenience) }
            }
        }
        return declares(classDecl.memberBlock.members)
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
        if mayHaveModelSuperclass(declaration) {
            // Its position follows the superclass's properties, which the syntax cannot see.
            return ["@_PersistedProperty"]
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

    /// Whether the class's first inherited type may be a model superclass: it is not one
    /// of the protocols a model commonly names. (This role is not told the conformances.)
    static func mayHaveModelSuperclass(_ declaration: some DeclGroupSyntax) -> Bool {
        guard let first = declaration.inheritanceClause?.inheritedTypes.first?.type else { return false }
        return !recyclableInheritance.contains(simpleTypeName(first))
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
