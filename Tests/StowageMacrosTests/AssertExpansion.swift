import SwiftDiagnostics
import SwiftParser
import SwiftSyntax
import SwiftSyntaxMacroExpansion
import SwiftSyntaxMacros
import Testing

@testable import StowageMacros

/// The Stowage macros under the names a source file uses for them.
let stowageMacros: [String: MacroSpec] = [
    "Model": MacroSpec(type: ModelMacro.self, conformances: ["PersistentModel", "Observable"]),
    "_PersistedProperty": MacroSpec(type: PersistedPropertyMacro.self),
    "Stowage._PersistedProperty": MacroSpec(type: PersistedPropertyMacro.self),
    "Attribute": MacroSpec(type: AttributeMacro.self),
    "Relationship": MacroSpec(type: RelationshipMacro.self),
    "Transient": MacroSpec(type: TransientMacro.self),
    "_StowageIgnored": MacroSpec(type: StowageIgnoredMacro.self),
    "Stowage._StowageIgnored": MacroSpec(type: StowageIgnoredMacro.self),
    "Index": MacroSpec(type: IndexMacro.self),
    "Unique": MacroSpec(type: UniqueMacro.self),
    "ModelActor": MacroSpec(type: ModelActorMacro.self, conformances: ["ModelActor"]),
]

/// The macros as the compiler hands them a subclass of a model class: it already
/// conforms to `PersistentModel` through its superclass, so `@Model` is told of no
/// conformance it is missing but `Observable`'s, which it also inherits.
let subclassMacros: [String: MacroSpec] = stowageMacros.merging([
    "Model": MacroSpec(type: ModelMacro.self, conformances: [])
]) { $1 }

/// A diagnostic a test expects: its message, 1-based position, severity and Fix-It texts.
struct DiagnosticSpec: Equatable, CustomStringConvertible {
    var message: String
    var line: Int
    var column: Int
    var severity: DiagnosticSeverity = .error
    var fixIts: [String] = []

    var description: String {
        let fixIts = self.fixIts.isEmpty ? "" : " fix-its: \(self.fixIts)"
        return "\(line):\(column) \(severity): \(message)\(fixIts)"
    }
}

/// The result of expanding every macro in `source`.
struct Expansion {
    var source: String
    var diagnostics: [DiagnosticSpec]
}

/// A macro expansion context that records each diagnostic with its line and column in
/// the original source.
///
/// The test macro system hands some macros detached copies of nodes, whose positions
/// count from the start of the copy. Such positions are mapped back by finding the
/// copy's text in the source (test sources keep them unique).
final class RecordingContext: MacroExpansionContext {
    final class Log {
        var diagnostics: [DiagnosticSpec] = []
    }

    let base: BasicMacroExpansionContext
    let log: Log
    let file: SourceFileSyntax

    init(base: BasicMacroExpansionContext, log: Log, file: SourceFileSyntax) {
        self.base = base
        self.log = log
        self.file = file
    }

    var lexicalContext: [Syntax] { base.lexicalContext }

    func makeUniqueName(_ name: String) -> TokenSyntax { base.makeUniqueName(name) }

    func location(
        of node: some SyntaxProtocol, at position: PositionInSyntaxNode, filePathMode: SourceLocationFilePathMode
    ) -> AbstractSourceLocation? {
        base.location(of: node, at: position, filePathMode: filePathMode)
    }

    func diagnose(_ diagnostic: Diagnostic) {
        let (line, column) = lineAndColumn(of: diagnostic)
        log.diagnostics.append(
            DiagnosticSpec(
                message: diagnostic.message,
                line: line,
                column: column,
                severity: diagnostic.diagMessage.severity,
                fixIts: diagnostic.fixIts.map(\.message.message)))
        base.diagnose(diagnostic)
    }

    private func lineAndColumn(of diagnostic: Diagnostic) -> (Int, Int) {
        let root = diagnostic.node.root
        var offset = diagnostic.position.utf8Offset
        if root.description != file.description {
            let source = Array(file.description.utf8)
            let copy = Array(root.trimmedDescription.utf8)
            guard let start = firstIndex(of: copy, in: source) else { return (0, 0) }
            offset += start - root.positionAfterSkippingLeadingTrivia.utf8Offset
        }
        let converter = SourceLocationConverter(fileName: "test.swift", tree: file)
        let location = converter.location(for: AbsolutePosition(utf8Offset: offset))
        return (location.line, location.column)
    }

    private func firstIndex(of needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard !needle.isEmpty, needle.count <= haystack.count else { return nil }
        for start in 0...(haystack.count - needle.count) where haystack[start] == needle[0] {
            if Array(haystack[start..<(start + needle.count)]) == needle { return start }
        }
        return nil
    }
}

/// Expands `source` with `macros`, the way the compiler would, and returns the expanded
/// source and the diagnostics the macros emitted.
func expand(_ source: String, macros: [String: MacroSpec] = stowageMacros) -> Expansion {
    let file = Parser.parse(source: source)
    let shared = BasicMacroExpansionContext(
        sourceFiles: [file: .init(moduleName: "TestModule", fullFilePath: "test.swift")])
    let log = RecordingContext.Log()
    let expanded = file.expand(
        macroSpecs: macros,
        contextGenerator: { node in
            RecordingContext(
                base: BasicMacroExpansionContext(sharingWith: shared, lexicalContext: node.allMacroLexicalContexts()),
                log: log,
                file: file)
        },
        indentationWidth: .spaces(4))
    return Expansion(source: expanded.description, diagnostics: log.diagnostics)
}

/// Checks that expanding `source` gives `expanded` (compared line by line, trailing
/// whitespace ignored) and exactly `diagnostics`.
func assertExpansion(
    _ source: String,
    expanded: String,
    diagnostics: [DiagnosticSpec] = [],
    macros: [String: MacroSpec] = stowageMacros,
    sourceLocation: Testing.SourceLocation = #_sourceLocation
) {
    let result = expand(source, macros: macros)
    let actual = normalized(result.source)
    let expected = normalized(expanded)
    if actual != expected {
        Issue.record(
            "Expanded source differs.\n--- expected\n\(expected)\n--- actual\n\(actual)\n--- first difference\n\(firstDifference(expected, actual))",
            sourceLocation: sourceLocation)
    }
    if result.diagnostics != diagnostics {
        Issue.record(
            "Diagnostics differ.\nexpected:\n\(diagnostics.map(\.description).joined(separator: "\n"))\nactual:\n\(result.diagnostics.map(\.description).joined(separator: "\n"))",
            sourceLocation: sourceLocation)
    }
}

private func normalized(_ text: String) -> String {
    text.split(separator: "\n", omittingEmptySubsequences: false)
        .map { line in
            var line = Substring(line)
            while line.last == " " || line.last == "\t" { line = line.dropLast() }
            return String(line)
        }
        .joined(separator: "\n")
        .trimmingCharacters(in: "\n")
}

private func firstDifference(_ expected: String, _ actual: String) -> String {
    let expectedLines = expected.split(separator: "\n", omittingEmptySubsequences: false)
    let actualLines = actual.split(separator: "\n", omittingEmptySubsequences: false)
    for index in 0..<max(expectedLines.count, actualLines.count) {
        let left = index < expectedLines.count ? String(expectedLines[index]) : "<end>"
        let right = index < actualLines.count ? String(actualLines[index]) : "<end>"
        if left != right {
            return "line \(index + 1):\n  expected: \(left)\n  actual:   \(right)"
        }
    }
    return "none"
}

extension String {
    fileprivate func trimmingCharacters(in character: Character) -> String {
        var text = Substring(self)
        while text.first == character { text = text.dropFirst() }
        while text.last == character { text = text.dropLast() }
        return String(text)
    }
}
