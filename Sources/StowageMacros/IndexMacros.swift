import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxBuilder
import SwiftSyntaxMacros

/// `#Index<Item>([\.name], [\.isPacked, \.name])`: declares `_stowageIndexes`.
public struct IndexMacro: DeclarationMacro {
    public static func expansion(
        of node: some FreestandingMacroExpansionSyntax,
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        keyPathGroups(node, macro: "Index", member: "_stowageIndexes", in: context)
    }
}

/// `#Unique<Item>([\.name, \.note])`: declares `_stowageUniqueness`.
public struct UniqueMacro: DeclarationMacro {
    public static func expansion(
        of node: some FreestandingMacroExpansionSyntax,
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        keyPathGroups(node, macro: "Unique", member: "_stowageUniqueness", in: context)
    }
}

/// `public static var <member>: [[AnyKeyPath]]` built from the macro's arguments.
func keyPathGroups(
    _ node: some FreestandingMacroExpansionSyntax,
    macro: String,
    member: String,
    in context: some MacroExpansionContext
) -> [DeclSyntax] {
    guard let argument = node.genericArgumentClause?.arguments.first?.argument,
        case .type(let modelType) = argument
    else {
        context.diagnose(Diagnostic(node: node.macroName, message: StowageDiagnostic.missingModelType(macro)))
        return []
    }
    let groups = node.arguments.map { $0.expression.trimmedDescription }.joined(separator: ", ")
    return [
        """
        public static var \(raw: member): [[AnyKeyPath]] {
            Stowage._stowageKeyPathGroups(\(modelType.trimmed).self, [\(raw: groups)])
        }
        """
    ]
}
