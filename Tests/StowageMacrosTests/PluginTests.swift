import SwiftSyntaxMacros
import Testing

@testable import StowageMacros

@Suite("Plug-in provider")
struct PluginTests {
    @Test(
        "Every macro type the declarations name resolves",
        arguments: [
            "ModelMacro", "PersistedPropertyMacro", "AttributeMacro", "RelationshipMacro",
            "TransientMacro", "StowageIgnoredMacro", "IndexMacro", "UniqueMacro", "ModelActorMacro",
        ])
    func resolves(typeName: String) throws {
        let macro = try StowagePluginProvider().resolveMacro(moduleName: "StowageMacros", typeName: typeName)
        #expect(String(describing: macro) == typeName)
    }

    @Test("An unknown macro type is an error")
    func unknownType() {
        #expect(throws: (any Error).self) {
            try StowagePluginProvider().resolveMacro(moduleName: "StowageMacros", typeName: "NoSuchMacro")
        }
    }

    @Test("The plug-in cannot load other plug-in libraries")
    func noLibraries() {
        #expect(throws: (any Error).self) {
            try StowagePluginProvider().loadPluginLibrary(libraryPath: "/nowhere", moduleName: "Other")
        }
        #expect(StowagePluginProvider().features.isEmpty)
    }
}
