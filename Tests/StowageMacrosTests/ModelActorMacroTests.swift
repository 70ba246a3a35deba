import Testing

@Suite("@ModelActor expansion")
struct ModelActorMacroTests {
    @Test("An actor gets the executor, the container, init(modelContainer:), its executor and the conformance")
    func internalActor() {
        assertExpansion(
            """
            @ModelActor
            actor DataHandler {
                func count() throws -> Int { try modelContext.fetchCount(FetchDescriptor<Trip>()) }
            }
            """,
            expanded: """
                actor DataHandler {
                    func count() throws -> Int { try modelContext.fetchCount(FetchDescriptor<Trip>()) }

                    nonisolated let modelExecutor: any Stowage.ModelExecutor

                    nonisolated let modelContainer: Stowage.ModelContainer

                    init(modelContainer: Stowage.ModelContainer) {
                        let modelContext = Stowage.ModelContext(modelContainer)
                        self.modelExecutor = Stowage.DefaultSerialModelExecutor(modelContext: modelContext)
                        self.modelContainer = modelContainer
                    }

                    nonisolated var unownedExecutor: UnownedSerialExecutor {
                        modelExecutor._stowageUnownedSerialExecutor
                    }
                }

                extension DataHandler: Stowage.ModelActor {
                }
                """)
    }

    @Test("A public actor's members are public, so they satisfy the public protocol")
    func publicActor() {
        assertExpansion(
            """
            @ModelActor public actor Importer {
            }
            """,
            expanded: """
                public actor Importer {

                    public nonisolated let modelExecutor: any Stowage.ModelExecutor

                    public nonisolated let modelContainer: Stowage.ModelContainer

                    public init(modelContainer: Stowage.ModelContainer) {
                        let modelContext = Stowage.ModelContext(modelContainer)
                        self.modelExecutor = Stowage.DefaultSerialModelExecutor(modelContext: modelContext)
                        self.modelContainer = modelContainer
                    }

                    public nonisolated var unownedExecutor: UnownedSerialExecutor {
                        modelExecutor._stowageUnownedSerialExecutor
                    }
                }

                extension Importer: Stowage.ModelActor {
                }
                """)
    }

    @Test("An actor that already declares the conformance gets no second one")
    func declaredConformance() {
        assertExpansion(
            """
            @ModelActor package actor Stats: ModelActor {
            }
            """,
            expanded: """
                package actor Stats: ModelActor {

                    package nonisolated let modelExecutor: any Stowage.ModelExecutor

                    package nonisolated let modelContainer: Stowage.ModelContainer

                    package init(modelContainer: Stowage.ModelContainer) {
                        let modelContext = Stowage.ModelContext(modelContainer)
                        self.modelExecutor = Stowage.DefaultSerialModelExecutor(modelContext: modelContext)
                        self.modelContainer = modelContainer
                    }

                    package nonisolated var unownedExecutor: UnownedSerialExecutor {
                        modelExecutor._stowageUnownedSerialExecutor
                    }
                }
                """)
    }

    @Test("@ModelActor on a class is an error with a Fix-It to make it an actor")
    func onClass() {
        assertExpansion(
            """
            @ModelActor final class Handler {
            }
            """,
            expanded: """
                final class Handler {
                }
                """,
            diagnostics: [
                DiagnosticSpec(
                    message: "'@ModelActor' can only be applied to an actor", line: 1, column: 1,
                    fixIts: ["Replace 'class' with 'actor'"])
            ])
    }

    @Test("@ModelActor on a struct offers the same Fix-It")
    func onStruct() {
        assertExpansion(
            """
            @ModelActor struct Handler {
            }
            """,
            expanded: """
                struct Handler {
                }
                """,
            diagnostics: [
                DiagnosticSpec(
                    message: "'@ModelActor' can only be applied to an actor", line: 1, column: 1,
                    fixIts: ["Replace 'struct' with 'actor'"])
            ])
    }

    @Test("@ModelActor on an enum is an error, reported once, with no Fix-It")
    func onEnum() {
        assertExpansion(
            """
            @ModelActor enum Handler {
                case idle
            }
            """,
            expanded: """
                enum Handler {
                    case idle
                }
                """,
            diagnostics: [
                DiagnosticSpec(message: "'@ModelActor' can only be applied to an actor", line: 1, column: 1)
            ])
    }
}
