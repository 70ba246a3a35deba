import Testing

@Suite("#Index and #Unique expansion")
struct FreestandingMacroTests {
    @Test("#Index declares _stowageIndexes from the key-path groups")
    func index() {
        assertExpansion(
            #"""
            #Index<Item>([\.name], [\.isPacked, \.name])
            """#,
            expanded: #"""
                public static var _stowageIndexes: [[AnyKeyPath]] {
                    Stowage._stowageKeyPathGroups(Item.self, [[\.name], [\.isPacked, \.name]])
                }
                """#)
    }

    @Test("#Unique declares _stowageUniqueness from the key-path groups")
    func unique() {
        assertExpansion(
            #"""
            #Unique<Item>([\.name, \.note], [\Item.trip])
            """#,
            expanded: #"""
                public static var _stowageUniqueness: [[AnyKeyPath]] {
                    Stowage._stowageKeyPathGroups(Item.self, [[\.name, \.note], [\Item.trip]])
                }
                """#)
    }

    @Test("A qualified model type is kept as written")
    func qualifiedType() {
        assertExpansion(
            #"""
            #Index<SchemaV1.Item>([\.name])
            """#,
            expanded: #"""
                public static var _stowageIndexes: [[AnyKeyPath]] {
                    Stowage._stowageKeyPathGroups(SchemaV1.Item.self, [[\.name]])
                }
                """#)
    }

    @Test("No groups gives an empty list")
    func noGroups() {
        assertExpansion(
            "#Unique<Item>()",
            expanded: #"""
                public static var _stowageUniqueness: [[AnyKeyPath]] {
                    Stowage._stowageKeyPathGroups(Item.self, [])
                }
                """#)
    }
}
