import Testing

@Suite("Macro diagnostics")
struct DiagnosticTests {
    @Test("@Model on a struct is an error with a Fix-It to make it a class")
    func modelOnStruct() {
        assertExpansion(
            """
            @Model struct Point {
                var x = 0
            }
            """,
            expanded: """
                struct Point {
                    var x = 0
                }
                """,
            diagnostics: [
                DiagnosticSpec(
                    message: "'@Model' can only be applied to a class", line: 1, column: 1,
                    fixIts: ["Replace 'struct' with 'class'"])
            ])
    }

    @Test("@Model on an actor offers the same Fix-It")
    func modelOnActor() {
        assertExpansion(
            """
            @Model actor Counter {
                var count = 0
            }
            """,
            expanded: """
                actor Counter {
                    var count = 0
                }
                """,
            diagnostics: [
                DiagnosticSpec(
                    message: "'@Model' can only be applied to a class", line: 1, column: 1,
                    fixIts: ["Replace 'actor' with 'class'"])
            ])
    }

    @Test("@Model on an enum is an error, reported once")
    func modelOnEnum() {
        assertExpansion(
            """
            @Model enum Kind {
                case small
            }
            """,
            expanded: """
                enum Kind {
                    case small
                }
                """,
            diagnostics: [
                DiagnosticSpec(message: "'@Model' can only be applied to a class", line: 1, column: 1)
            ])
    }

    @Test("@Model on a protocol is an error, reported once")
    func modelOnProtocol() {
        assertExpansion(
            """
            @Model protocol Shape {
                var sides: Int { get }
            }
            """,
            expanded: """
                protocol Shape {
                    var sides: Int { get }
                }
                """,
            diagnostics: [
                DiagnosticSpec(message: "'@Model' can only be applied to a class", line: 1, column: 1)
            ])
    }

    @Test("A stored 'let' is an error with a Fix-It to make it a 'var'")
    func storedLet() {
        let result = expand(
            """
            @Model final class Item {
                let id: Int = 1
                @Transient let createdBy = "me"
                static let shared = 1
                var name = ""
            }
            """)
        #expect(
            result.diagnostics == [
                DiagnosticSpec(
                    message: "@Model stored properties must be declared with 'var'", line: 2, column: 5,
                    fixIts: ["Replace 'let' with 'var'"])
            ])
        #expect(
            metadataLines(result.source) == [
                #"Stowage.Schema.PropertyMetadata._property(\Item.name, name: "name", defaultValue: ""),"#
            ])
    }

    @Test("@Transient without a default value is an error")
    func transientWithoutDefault() {
        assertExpansion(
            """
            final class Item {
                @Transient var count: Int
                @Transient var note: String?
                @Transient let fixed: Int
                @Transient var ready = false
                @Transient let label = "x"
            }
            """,
            expanded: """
                final class Item {
                    var count: Int
                    var note: String?
                    let fixed: Int
                    var ready = false
                    let label = "x"
                }
                """,
            diagnostics: [
                DiagnosticSpec(message: "@Transient property 'count' must have a default value", line: 2, column: 20),
                DiagnosticSpec(message: "@Transient property 'fixed' must have a default value", line: 4, column: 20),
            ])
    }

    @Test("@Transient without a default value inside @Model is reported at the property")
    func transientInsideModel() {
        let result = expand(
            """
            @Model final class Item {
                var name = ""
                @Transient var count: Int
            }
            """)
        #expect(
            result.diagnostics == [
                DiagnosticSpec(message: "@Transient property 'count' must have a default value", line: 3, column: 20)
            ])
    }

    @Test("willSet/didSet observers, multiple bindings and tuple patterns are errors")
    func unsupportedStoredProperties() {
        let result = expand(
            """
            @Model final class Item {
                var observed: Int = 0 { willSet { } }
                var a = 1, b = 2
                var (c, d) = (1, 2)
                var fine = 0
            }
            """)
        #expect(
            result.diagnostics == [
                DiagnosticSpec(
                    message: "@Model does not support 'willSet'/'didSet' observers on stored property 'observed'",
                    line: 2, column: 27),
                DiagnosticSpec(
                    message: "@Model needs each stored property in its own 'var' declaration", line: 3, column: 9),
                DiagnosticSpec(
                    message: "@Model stored properties must be declared with a simple name", line: 4, column: 9),
            ])
        #expect(
            metadataLines(result.source) == [
                #"Stowage.Schema.PropertyMetadata._property(\Item.fine, name: "fine", defaultValue: 0),"#
            ])
    }

    @Test("#Index and #Unique without a generic argument are errors")
    func missingGenericArgument() {
        assertExpansion(
            #"""
            #Index([\Item.name])
            #Unique([\Item.name])
            """#,
            expanded: "",
            diagnostics: [
                DiagnosticSpec(
                    message: #"'#Index' needs the model type as a generic argument, as in '#Index<Item>([\.name])'"#,
                    line: 1, column: 2),
                DiagnosticSpec(
                    message: #"'#Unique' needs the model type as a generic argument, as in '#Unique<Item>([\.name])'"#,
                    line: 2, column: 2),
            ])
    }
}
