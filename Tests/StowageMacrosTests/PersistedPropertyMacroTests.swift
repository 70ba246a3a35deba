import Testing

@Suite("@_PersistedProperty expansion")
struct PersistedPropertyMacroTests {
    @Test("Adds init/get/set accessors and the placeholder peer")
    func accessorsAndPeer() {
        assertExpansion(
            #"""
            final class Item {
                @_PersistedProperty var name: String
            }
            """#,
            expanded: #"""
                final class Item {
                    var name: String {
                        @storageRestrictions(accesses: _$backingData, initializes: _name)
                        init(initialValue) {
                            Stowage.ModelBackingData.setInitialValue(initialValue, forKey: "name", in: &_$backingData, of: Self.self)
                            _name = Stowage._StowagePersistedProperty()
                        }
                        get {
                            _$observationRegistrar.access(self, keyPath: \.name)
                            return self.getValue(forKey: \.name)
                        }
                        set {
                            if let observation = _$observation {
                                observation.withMutation(of: self, keyPath: \.name) {
                                    self.setValue(forKey: \.name, to: newValue)
                                }
                            } else {
                                self.setValue(forKey: \.name, to: newValue)
                            }
                        }
                    }

                    @Stowage._StowageIgnored private var _name: Stowage._StowagePersistedProperty
                }
                """#)
    }

    @Test("A keyword name stays escaped in key paths and bare in the key and peer name")
    func escapedName() {
        let result = expand(
            #"""
            final class Item {
                @_PersistedProperty var `default`: Int
            }
            """#)
        #expect(result.source.contains(#"initializes: _default)"#))
        #expect(
            result.source.contains(
                #"setInitialValue(initialValue, forKey: "default", in: &_$backingData, of: Self.self)"#))
        #expect(result.source.contains(#"return self.getValue(forKey: \.`default`)"#))
        #expect(result.source.contains("private var _default: Stowage._StowagePersistedProperty"))
    }

    @Test("Declarations it cannot handle are left as they are")
    func unsupportedDeclarations() {
        let result = expand(
            #"""
            final class Item {
                @_PersistedProperty let fixed = 1
                @_PersistedProperty var computed: Int { 1 }
                @_PersistedProperty func method() {}
            }
            """#)
        #expect(result.diagnostics.isEmpty)
        #expect(!result.source.contains("storageRestrictions"))
        #expect(!result.source.contains("_StowagePersistedProperty"))
    }
}
