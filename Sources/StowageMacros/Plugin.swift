// Temporary stub; replaced by the real plug-in.
@_spi(PluginMessage) import SwiftCompilerPluginMessageHandling
import SwiftSyntaxMacros

struct StowagePluginProvider: PluginProvider {
    func resolveMacro(moduleName: String, typeName: String) throws -> any Macro.Type {
        struct Unknown: Error {}
        throw Unknown()
    }
    func loadPluginLibrary(libraryPath: String, moduleName: String) throws {}
    var features: [PluginFeature] { [] }
}

@main
struct StowagePlugin {
    static func main() throws {
        let connection = try StandardIOMessageConnection()
        let listener = CompilerPluginMessageListener(connection: connection, provider: StowagePluginProvider())
        try listener.main()
    }
}
