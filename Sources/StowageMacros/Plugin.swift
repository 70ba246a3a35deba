@_spi(PluginMessage) import SwiftCompilerPluginMessageHandling
import SwiftSyntaxMacros

/// The macro type the `#externalMacro` declarations in module `Stowage` name `typeName`.
func stowageMacroType(named typeName: String) -> (any Macro.Type)? {
    switch typeName {
    case "ModelMacro": ModelMacro.self
    case "PersistedPropertyMacro": PersistedPropertyMacro.self
    case "AttributeMacro": AttributeMacro.self
    case "RelationshipMacro": RelationshipMacro.self
    case "TransientMacro": TransientMacro.self
    case "StowageIgnoredMacro": StowageIgnoredMacro.self
    case "IndexMacro": IndexMacro.self
    case "UniqueMacro": UniqueMacro.self
    case "ModelActorMacro": ModelActorMacro.self
    default: nil
    }
}

/// Hands the compiler the macro types it asks for.
struct StowagePluginProvider: PluginProvider {
    struct UnknownMacroError: Error, CustomStringConvertible {
        let moduleName: String
        let typeName: String
        var description: String { "StowageMacros has no macro '\(moduleName).\(typeName)'" }
    }

    struct PluginLibrariesUnsupported: Error, CustomStringConvertible {
        var description: String { "StowageMacros cannot load plug-in libraries" }
    }

    func resolveMacro(moduleName: String, typeName: String) throws -> any Macro.Type {
        guard let macro = stowageMacroType(named: typeName) else {
            throw UnknownMacroError(moduleName: moduleName, typeName: typeName)
        }
        return macro
    }

    func loadPluginLibrary(libraryPath: String, moduleName: String) throws {
        throw PluginLibrariesUnsupported()
    }

    var features: [PluginFeature] { [] }
}

/// The executable the compiler launches; it talks the plug-in protocol over stdin/stdout.
@main
struct StowageMacrosPlugin {
    static func main() throws {
        let connection = try StandardIOMessageConnection()
        let listener = CompilerPluginMessageListener(connection: connection, provider: StowagePluginProvider())
        try listener.main()
    }
}
