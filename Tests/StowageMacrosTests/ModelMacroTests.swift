import Foundation
import Testing

@Suite("@Model expansion")
struct ModelMacroTests {
    @Test("The Item example expands to accessors, storage, metadata and conformances")
    func itemExample() {
        assertExpansion(
            #"""
            @Model final class Item {
                @Attribute(.unique) var name: String
                var isPacked = false
                var note: String? = nil
                @Relationship(deleteRule: .cascade, inverse: \Tag.item) var tags: [Tag] = []
                var trip: Trip?
                @Transient var isSelected = false
                var computed: Int { 3 }          // computed: untouched
                static var categories = ["a"]   // static: untouched
                #Index<Item>([\.name], [\.isPacked, \.name])
                #Unique<Item>([\.name, \.note])
                init(name: String) { self.name = name }
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
                            _$observationRegistrar.access(self, keyPath: Item._keyPath_name.keyPath)
                            return self._getValue(forKey: \.name, at: 0)
                        }
                        set {
                            if let observation = _$observation {
                                observation.withMutation(of: self, keyPath: Item._keyPath_name.keyPath) {
                                    self._setValue(forKey: \.name, at: 0, to: newValue)
                                }
                            } else {
                                self._setValue(forKey: \.name, at: 0, to: newValue)
                            }
                        }
                    }

                    @Stowage._StowageIgnored private var _name: Stowage._StowagePersistedProperty

                    private static let _keyPath_name = Stowage._StowageKeyPath(\Item.name)
                    var isPacked {
                        @storageRestrictions(accesses: _$backingData, initializes: _isPacked)
                        init(initialValue) {
                            Stowage.ModelBackingData.setInitialValue(initialValue, forKey: "isPacked", in: &_$backingData, of: Self.self)
                            _isPacked = Stowage._StowagePersistedProperty()
                        }
                        get {
                            _$observationRegistrar.access(self, keyPath: Item._keyPath_isPacked.keyPath)
                            return self._getValue(forKey: \.isPacked, at: 1)
                        }
                        set {
                            if let observation = _$observation {
                                observation.withMutation(of: self, keyPath: Item._keyPath_isPacked.keyPath) {
                                    self._setValue(forKey: \.isPacked, at: 1, to: newValue)
                                }
                            } else {
                                self._setValue(forKey: \.isPacked, at: 1, to: newValue)
                            }
                        }
                    }

                    @Stowage._StowageIgnored private var _isPacked: Stowage._StowagePersistedProperty

                    private static let _keyPath_isPacked = Stowage._StowageKeyPath(\Item.isPacked)
                    var note: String? {
                        @storageRestrictions(accesses: _$backingData, initializes: _note)
                        init(initialValue) {
                            Stowage.ModelBackingData.setInitialValue(initialValue, forKey: "note", in: &_$backingData, of: Self.self)
                            _note = Stowage._StowagePersistedProperty()
                        }
                        get {
                            _$observationRegistrar.access(self, keyPath: Item._keyPath_note.keyPath)
                            return self._getValue(forKey: \.note, at: 2)
                        }
                        set {
                            if let observation = _$observation {
                                observation.withMutation(of: self, keyPath: Item._keyPath_note.keyPath) {
                                    self._setValue(forKey: \.note, at: 2, to: newValue)
                                }
                            } else {
                                self._setValue(forKey: \.note, at: 2, to: newValue)
                            }
                        }
                    }

                    @Stowage._StowageIgnored private var _note: Stowage._StowagePersistedProperty

                    private static let _keyPath_note = Stowage._StowageKeyPath(\Item.note)
                    var tags: [Tag] {
                        @storageRestrictions(accesses: _$backingData, initializes: _tags)
                        init(initialValue) {
                            Stowage.ModelBackingData.setInitialValue(initialValue, forKey: "tags", in: &_$backingData, of: Self.self)
                            _tags = Stowage._StowagePersistedProperty()
                        }
                        get {
                            _$observationRegistrar.access(self, keyPath: Item._keyPath_tags.keyPath)
                            return self._getValue(forKey: \.tags, at: 3)
                        }
                        set {
                            if let observation = _$observation {
                                observation.withMutation(of: self, keyPath: Item._keyPath_tags.keyPath) {
                                    self._setValue(forKey: \.tags, at: 3, to: newValue)
                                }
                            } else {
                                self._setValue(forKey: \.tags, at: 3, to: newValue)
                            }
                        }
                    }

                    @Stowage._StowageIgnored private var _tags: Stowage._StowagePersistedProperty

                    private static let _keyPath_tags = Stowage._StowageKeyPath(\Item.tags)
                    var trip: Trip? {
                        @storageRestrictions(accesses: _$backingData, initializes: _trip)
                        init(initialValue) {
                            Stowage.ModelBackingData.setInitialValue(initialValue, forKey: "trip", in: &_$backingData, of: Self.self)
                            _trip = Stowage._StowagePersistedProperty()
                        }
                        get {
                            _$observationRegistrar.access(self, keyPath: Item._keyPath_trip.keyPath)
                            return self._getValue(forKey: \.trip, at: 4)
                        }
                        set {
                            if let observation = _$observation {
                                observation.withMutation(of: self, keyPath: Item._keyPath_trip.keyPath) {
                                    self._setValue(forKey: \.trip, at: 4, to: newValue)
                                }
                            } else {
                                self._setValue(forKey: \.trip, at: 4, to: newValue)
                            }
                        }
                    }

                    @Stowage._StowageIgnored private var _trip: Stowage._StowagePersistedProperty

                    private static let _keyPath_trip = Stowage._StowageKeyPath(\Item.trip)
                    var isSelected = false
                    var computed: Int { 3 }          // computed: untouched
                    static var categories = ["a"]   // static: untouched
                    public static var _stowageIndexes: [[AnyKeyPath]] {
                        Stowage._stowageKeyPathGroups(Item.self, [[\.name], [\.isPacked, \.name]])
                    }
                    public static var _stowageUniqueness: [[AnyKeyPath]] {
                        Stowage._stowageKeyPathGroups(Item.self, [[\.name, \.note]])
                    }
                    init(name: String) { self.name = name }

                    @Stowage._StowageIgnored @exclusivity(unchecked) private var _$backingData: Stowage.ModelBackingData? = nil

                    public var persistentBackingData: Stowage.ModelBackingData {
                        get {
                            Stowage.ModelBackingData.existing(in: &_$backingData, of: Item.self)
                        }
                        set {
                            _$backingData = newValue
                        }
                    }

                    @Stowage._StowageIgnored @exclusivity(unchecked) private var _$observation: Stowage._ModelObservation? = nil

                    private var _$observationRegistrar: Stowage._ModelObservation {
                        if let observation = _$observation {
                            return observation
                        }
                        let observation = _$backingData?._firstObservation() ?? Stowage._ModelObservation()
                        _$observation = observation
                        return observation
                    }

                    public static var _stowageRecyclable: Bool {
                        false
                    }

                    public func _stowageReleaseForRefill(keeping observation: Stowage._ModelObservation?) -> Bool {
                        guard Self._stowageRecyclable, isKnownUniquelyReferenced(&_$backingData) else {
                            return false
                        }
                        if _$observation !== observation {
                            _$observation = nil
                        }
                        return true
                    }

                    public var _stowageObservation: Stowage._ModelObservation? {
                        _$observation
                    }

                    public static var _stowageEntityName: String {
                        "Item"
                    }

                    public static var schemaMetadata: [Stowage.Schema.PropertyMetadata] {
                        [
                            Stowage.Schema.PropertyMetadata._property(\Item.name, name: "name", attribute: Stowage.Schema.Attribute(.unique)),
                            Stowage.Schema.PropertyMetadata._property(\Item.isPacked, name: "isPacked", defaultValue: false),
                            Stowage.Schema.PropertyMetadata._property(\Item.note, name: "note", defaultValue: nil),
                            Stowage.Schema.PropertyMetadata._relationship(\Item.tags, name: "tags", defaultValue: [], relationship: Stowage.Schema.Relationship(deleteRule: .cascade, inverse: \Tag.item)),
                            Stowage.Schema.PropertyMetadata._property(\Item.trip, name: "trip"),
                        ]
                    }

                    public required init(backingData: Stowage.ModelBackingData) {
                        self._$backingData = backingData
                        self._name = Stowage._StowagePersistedProperty()
                        self._isPacked = Stowage._StowagePersistedProperty()
                        self._note = Stowage._StowagePersistedProperty()
                        self._tags = Stowage._StowagePersistedProperty()
                        self._trip = Stowage._StowagePersistedProperty()
                    }
                }

                extension Item: Stowage.PersistentModel {
                }

                extension Item: Observation.Observable {
                }
                """#)
    }

    /// A class's accessors hand Observation a key path made once, beside the property; a
    /// generic class cannot hold a static property, so its accessors keep the literal.
    @Test("Key paths for Observation are made once, except in a generic class")
    func observationKeyPaths() {
        let plain = expand(
            """
            @Model final class Trip {
                var name: String
                init(name: String) { self.name = name }
            }
            """
        ).source
        #expect(plain.contains(#"private static let _keyPath_name = Stowage._StowageKeyPath(\Trip.name)"#))
        #expect(plain.contains("access(self, keyPath: Trip._keyPath_name.keyPath)"))
        #expect(plain.contains("withMutation(of: self, keyPath: Trip._keyPath_name.keyPath)"))
        #expect(!plain.contains(#"keyPath: \.name"#))

        let generic = expand(
            """
            @Model final class Box<Content> {
                var name: String
                init(name: String) { self.name = name }
            }
            """
        ).source
        #expect(!generic.contains("_keyPath_"))
        #expect(generic.contains(#"access(self, keyPath: \.name)"#))
        #expect(generic.contains(#"withMutation(of: self, keyPath: \.name)"#))

        // Nor in a class declared in a generic type, or in an extension, which may be of one.
        for outer in ["struct Holder<Content>", "extension Holder"] {
            let nested = expand(
                """
                \(outer) {
                    @Model final class Inner {
                        var name: String
                        init(name: String) { self.name = name }
                    }
                }
                """
            ).source
            #expect(!nested.contains("_keyPath_"), "\(outer)")
            #expect(nested.contains(#"access(self, keyPath: \.name)"#), "\(outer)")
        }
        let inPlainEnum = expand(
            """
            enum Schema1 {
                @Model final class Inner {
                    var name: String
                    init(name: String) { self.name = name }
                }
            }
            """
        ).source
        #expect(inPlainEnum.contains("access(self, keyPath: Inner._keyPath_name.keyPath)"))
    }

    @Test("A class nested in an enum keeps its own name for the entity and key paths")
    func nestedInEnum() {
        assertExpansion(
            #"""
            enum SchemaV1 {
                @Model
                final class Item {
                    var name: String
                    init(name: String) { self.name = name }
                }
            }
            """#,
            expanded: #"""
                enum SchemaV1 {
                    final class Item {
                        var name: String {
                            @storageRestrictions(accesses: _$backingData, initializes: _name)
                            init(initialValue) {
                                Stowage.ModelBackingData.setInitialValue(initialValue, forKey: "name", in: &_$backingData, of: Self.self)
                                _name = Stowage._StowagePersistedProperty()
                            }
                            get {
                                _$observationRegistrar.access(self, keyPath: Item._keyPath_name.keyPath)
                                return self._getValue(forKey: \.name, at: 0)
                            }
                            set {
                                if let observation = _$observation {
                                    observation.withMutation(of: self, keyPath: Item._keyPath_name.keyPath) {
                                        self._setValue(forKey: \.name, at: 0, to: newValue)
                                    }
                                } else {
                                    self._setValue(forKey: \.name, at: 0, to: newValue)
                                }
                            }
                        }

                        @Stowage._StowageIgnored private var _name: Stowage._StowagePersistedProperty

                        private static let _keyPath_name = Stowage._StowageKeyPath(\Item.name)
                        init(name: String) { self.name = name }

                        @Stowage._StowageIgnored @exclusivity(unchecked) private var _$backingData: Stowage.ModelBackingData? = nil

                        public var persistentBackingData: Stowage.ModelBackingData {
                            get {
                                Stowage.ModelBackingData.existing(in: &_$backingData, of: Item.self)
                            }
                            set {
                                _$backingData = newValue
                            }
                        }

                        @Stowage._StowageIgnored @exclusivity(unchecked) private var _$observation: Stowage._ModelObservation? = nil

                        private var _$observationRegistrar: Stowage._ModelObservation {
                            if let observation = _$observation {
                                return observation
                            }
                            let observation = _$backingData?._firstObservation() ?? Stowage._ModelObservation()
                            _$observation = observation
                            return observation
                        }

                        public static var _stowageRecyclable: Bool {
                            true
                        }

                        public func _stowageReleaseForRefill(keeping observation: Stowage._ModelObservation?) -> Bool {
                            guard Self._stowageRecyclable, isKnownUniquelyReferenced(&_$backingData) else {
                                return false
                            }
                            if _$observation !== observation {
                                _$observation = nil
                            }
                            return true
                        }

                        public var _stowageObservation: Stowage._ModelObservation? {
                            _$observation
                        }

                        public static var _stowageEntityName: String {
                            "Item"
                        }

                        public static var schemaMetadata: [Stowage.Schema.PropertyMetadata] {
                            [
                                Stowage.Schema.PropertyMetadata._property(\Item.name, name: "name"),
                            ]
                        }

                        public required init(backingData: Stowage.ModelBackingData) {
                            self._$backingData = backingData
                            self._name = Stowage._StowagePersistedProperty()
                        }
                    }
                }

                extension SchemaV1.Item: Stowage.PersistentModel {
                }

                extension SchemaV1.Item: Observation.Observable {
                }
                """#)
    }

    @Test("A class with no persisted properties gets empty metadata")
    func noPersistedProperties() {
        assertExpansion(
            #"""
            @Model final class Settings {
                @Transient var isDirty = false
                var computed: Int { 3 }
                init() {}
            }
            """#,
            expanded: #"""
                final class Settings {
                    var isDirty = false
                    var computed: Int { 3 }
                    init() {}

                    @Stowage._StowageIgnored @exclusivity(unchecked) private var _$backingData: Stowage.ModelBackingData? = nil

                    public var persistentBackingData: Stowage.ModelBackingData {
                        get {
                            Stowage.ModelBackingData.existing(in: &_$backingData, of: Settings.self)
                        }
                        set {
                            _$backingData = newValue
                        }
                    }

                    @Stowage._StowageIgnored @exclusivity(unchecked) private var _$observation: Stowage._ModelObservation? = nil

                    private var _$observationRegistrar: Stowage._ModelObservation {
                        if let observation = _$observation {
                            return observation
                        }
                        let observation = _$backingData?._firstObservation() ?? Stowage._ModelObservation()
                        _$observation = observation
                        return observation
                    }

                    public static var _stowageRecyclable: Bool {
                        false
                    }

                    public func _stowageReleaseForRefill(keeping observation: Stowage._ModelObservation?) -> Bool {
                        guard Self._stowageRecyclable, isKnownUniquelyReferenced(&_$backingData) else {
                            return false
                        }
                        if _$observation !== observation {
                            _$observation = nil
                        }
                        return true
                    }

                    public var _stowageObservation: Stowage._ModelObservation? {
                        _$observation
                    }

                    public static var _stowageEntityName: String {
                        "Settings"
                    }

                    public static var schemaMetadata: [Stowage.Schema.PropertyMetadata] {
                        []
                    }

                    public required init(backingData: Stowage.ModelBackingData) {
                        self._$backingData = backingData
                    }
                }

                extension Settings: Stowage.PersistentModel {
                }

                extension Settings: Observation.Observable {
                }
                """#)
    }

    @Test("@Attribute and @Relationship arguments are copied verbatim into the metadata")
    func attributeAndRelationshipArguments() {
        let result = expand(
            #"""
            @Model final class Photo {
                @Attribute(.externalStorage, .unique, originalName: "data", hashModifier: "v2") var data: Data
                @Attribute var plain: String = "x"
                @Attribute() var empty: Int
                @Attribute(.transformable(by: ColorTransformer.self)) var color: Color
                @Relationship(.unique, deleteRule: .deny, minimumModelCount: 1, maximumModelCount: 3, originalName: "albums", inverse: \Album.photos, hashModifier: "h") var albums: [Album] = []
                @Relationship var owner: Person?
                @Stowage.Relationship(deleteRule: .cascade) var parts: [Part]? = nil
            }
            """#)
        #expect(result.diagnostics.isEmpty)
        #expect(
            metadataLines(result.source) == [
                #"Stowage.Schema.PropertyMetadata._property(\Photo.data, name: "data", attribute: Stowage.Schema.Attribute(.externalStorage, .unique, originalName: "data", hashModifier: "v2")),"#,
                #"Stowage.Schema.PropertyMetadata._property(\Photo.plain, name: "plain", defaultValue: "x", attribute: Stowage.Schema.Attribute()),"#,
                #"Stowage.Schema.PropertyMetadata._property(\Photo.empty, name: "empty", attribute: Stowage.Schema.Attribute()),"#,
                #"Stowage.Schema.PropertyMetadata._property(\Photo.color, name: "color", attribute: Stowage.Schema.Attribute(.transformable(by: ColorTransformer.self))),"#,
                #"Stowage.Schema.PropertyMetadata._relationship(\Photo.albums, name: "albums", defaultValue: [], relationship: Stowage.Schema.Relationship(.unique, deleteRule: .deny, minimumModelCount: 1, maximumModelCount: 3, originalName: "albums", inverse: \Album.photos, hashModifier: "h")),"#,
                #"Stowage.Schema.PropertyMetadata._relationship(\Photo.owner, name: "owner", relationship: Stowage.Schema.Relationship()),"#,
                #"Stowage.Schema.PropertyMetadata._relationship(\Photo.parts, name: "parts", defaultValue: nil, relationship: Stowage.Schema.Relationship(deleteRule: .cascade)),"#,
            ])
    }

    @Test("Default values are passed as written, implicit members coerced to the declared type")
    func defaultValues() {
        let result = expand(
            #"""
            @Model final class Entry {
                var `default`: Bool = true
                var created: Date = .now
                var kind = Kind.small
                var scores: [Int] = [1, 2, 3]
                var title = "Untitled"
                var ratio: Double = 0.5
                var lookup: [String: Int] = [:]
                var reminder: Reminder = .none
                var status: Status = .make(1).next
                var maybe: Status? = .some(.idle)
                var legacy: Status! = flag ? .idle : .busy
                var inferred = Status.idle
                var wrapped: Box = Box(.idle)
                var required: Int
            }
            """#)
        #expect(result.diagnostics.isEmpty)
        #expect(
            metadataLines(result.source) == [
                #"Stowage.Schema.PropertyMetadata._property(\Entry.`default`, name: "default", defaultValue: true),"#,
                #"Stowage.Schema.PropertyMetadata._property(\Entry.created, name: "created", defaultValue: .now as Date),"#,
                #"Stowage.Schema.PropertyMetadata._property(\Entry.kind, name: "kind", defaultValue: Kind.small),"#,
                #"Stowage.Schema.PropertyMetadata._property(\Entry.scores, name: "scores", defaultValue: [1, 2, 3]),"#,
                #"Stowage.Schema.PropertyMetadata._property(\Entry.title, name: "title", defaultValue: "Untitled"),"#,
                #"Stowage.Schema.PropertyMetadata._property(\Entry.ratio, name: "ratio", defaultValue: 0.5),"#,
                #"Stowage.Schema.PropertyMetadata._property(\Entry.lookup, name: "lookup", defaultValue: [:]),"#,
                #"Stowage.Schema.PropertyMetadata._property(\Entry.reminder, name: "reminder", defaultValue: .none as Reminder),"#,
                #"Stowage.Schema.PropertyMetadata._property(\Entry.status, name: "status", defaultValue: .make(1).next as Status),"#,
                #"Stowage.Schema.PropertyMetadata._property(\Entry.maybe, name: "maybe", defaultValue: .some(.idle) as Status?),"#,
                #"Stowage.Schema.PropertyMetadata._property(\Entry.legacy, name: "legacy", defaultValue: (flag ? .idle : .busy) as Status?),"#,
                #"Stowage.Schema.PropertyMetadata._property(\Entry.inferred, name: "inferred", defaultValue: Status.idle),"#,
                #"Stowage.Schema.PropertyMetadata._property(\Entry.wrapped, name: "wrapped", defaultValue: Box(.idle) as Box),"#,
                #"Stowage.Schema.PropertyMetadata._property(\Entry.required, name: "required"),"#,
            ])
        #expect(result.source.contains("self._default = Stowage._StowagePersistedProperty()"))
        #expect(
            result.source.contains("@Stowage._StowageIgnored private var _default: Stowage._StowagePersistedProperty"))
        #expect(result.source.contains(#"self._getValue(forKey: \.`default`, at: 0)"#))
    }

    @Test("Static, class, lazy, computed, transient and ignored properties are left alone")
    func untouchedMembers() {
        let result = expand(
            #"""
            @Model final class Box {
                var kept = 0
                static var shared = Box()
                class var kind: String { "box" }
                lazy var cache = 0
                var both: Int { get { 1 } set { } }
                var getter: Int { get { 1 } }
                @Transient var scratch = 0
                @_StowageIgnored var ignored = 0
                func method() {}
                struct Nested { var x = 0 }
            }
            """#)
        #expect(result.diagnostics.isEmpty)
        #expect(
            metadataLines(result.source) == [
                #"Stowage.Schema.PropertyMetadata._property(\Box.kept, name: "kept", defaultValue: 0),"#
            ])
        #expect(result.source.contains("static var shared = Box()"))
        #expect(result.source.contains("lazy var cache = 0"))
        #expect(result.source.contains("var scratch = 0"))
        #expect(result.source.contains("var ignored = 0"))
        #expect(result.source.contains("struct Nested { var x = 0"))
        #expect(!result.source.contains("_x"))
        #expect(!result.source.contains("_scratch"))
        #expect(!result.source.contains("_cache"))
    }

    @Test("Conformances the class already declares are not added again")
    func existingConformance() {
        let result = expand(
            #"""
            @Model final class Item: Stowage.PersistentModel {
                var name = ""
            }
            """#)
        #expect(!result.source.contains("extension Item: Stowage.PersistentModel"))
        #expect(result.source.contains("extension Item: Observation.Observable {\n}"))
    }

    @Test("A non-final class can be inherited from: class members, metadata generic over the key paths' root")
    func nonFinalClass() {
        let result = expand(
            #"""
            @Model public class Note {
                public var body = ""
            }
            """#)
        #expect(result.diagnostics.isEmpty)
        #expect(result.source.contains("public required init(backingData: Stowage.ModelBackingData) {"))
        #expect(result.source.contains("public class var _stowageEntityName: String {"))
        #expect(
            result.source.contains("public class var _stowageSuperentityType: (any Stowage.PersistentModel.Type)? {"))
        #expect(result.source.contains("_stowageMetadata_Note(Note.self)"))
        #expect(
            result.source.contains(
                "public static func _stowageMetadata_Note<Root: Note>(_ root: Root.Type) -> [Stowage.Schema.PropertyMetadata] {"
            ))
        // A subclass's accessors use the registrar, so it is not private.
        #expect(result.source.contains("    var _$observationRegistrar: Stowage._ModelObservation {"))
        #expect(!result.source.contains("private var _$observationRegistrar"))
        #expect(
            metadataLines(result.source) == [
                #"Stowage.Schema.PropertyMetadata._property(\Root.body, name: "body", defaultValue: ""),"#
            ])
        // Its properties still go by position: a subclass's properties come after them.
        #expect(result.source.contains("self._getValue(forKey: \\.body, at: 0)"))
    }

    @Test(
        "A subclass of a model class overrides the class members, lists the inherited metadata first, and shares the backing data"
    )
    func subclass() {
        // The compiler leaves `PersistentModel` out of the conformances a subclass of a
        // model class is missing; the test says so by naming none.
        let result = expand(
            #"""
            @Model class BusinessTrip: Trip {
                var company: String
                init(name: String, company: String) {
                    self.company = company
                    super.init(name: name)
                }
            }
            """#, macros: subclassMacros)
        #expect(result.diagnostics.isEmpty)
        #expect(result.source.contains("public override class var _stowageEntityName: String {"))
        #expect(result.source.contains("Trip.self"))
        #expect(
            result.source.contains(
                "public override func _stowageSettleInitialValues(into data: Stowage.ModelBackingData) {"))
        #expect(result.source.contains("Trip._stowageMetadata_Trip(root) + ["))
        #expect(result.source.contains("super.init(backingData: backingData)"))
        #expect(!result.source.contains("public var persistentBackingData"))
        #expect(!result.source.contains("self._$backingData = backingData"))
        // Its own properties' positions follow the superclass's, which the syntax cannot see.
        #expect(result.source.contains("self.getValue(forKey: \\.company)"))
        #expect(!result.source.contains("_getValue(forKey: \\.company, at:"))
    }

    @Test("A subclass that declares no designated initializer inherits init(backingData:) with the others")
    func subclassWithoutInitializer() {
        let result = expand(
            #"""
            @Model class PersonalTrip: Trip {
                var companion: String?
            }
            """#, macros: subclassMacros)
        #expect(result.diagnostics.isEmpty)
        #expect(!result.source.contains("init(backingData:"))
    }

    @Test("#Index and #Unique in a subclass are errors: the base's cover the subclasses")
    func indexInSubclass() {
        let result = expand(
            #"""
            @Model class BusinessTrip: Trip {
                #Index<BusinessTrip>([\.company])
                var company: String = ""
            }
            """#, macros: subclassMacros)
        #expect(
            result.diagnostics.map(\.message).contains { $0.contains("'#Index' in a model subclass is not supported") })
    }
}

/// The entries of the `schemaMetadata` array in an expansion, trimmed.
func metadataLines(_ source: String) -> [String] {
    source.split(separator: "\n")
        .map { $0.drop(while: { $0 == " " }) }
        .filter { $0.hasPrefix("Stowage.Schema.PropertyMetadata.") }
        .map(String.init)
}

@Suite("@Model with #if blocks")
struct ConditionalMemberTests {
    @Test("Persisted properties inside #if get matching #if blocks in the metadata and init")
    func conditionalMembers() {
        let result = expand(
            #"""
            @Model final class Item {
                var name = ""
                #if os(Linux)
                var linuxNote: String
                #elseif DEBUG
                var debugNote = ""
                #else
                @Transient var other = 0
                #endif
                #if false
                func unrelated() {}
                #endif
            }
            """#)
        #expect(result.diagnostics.isEmpty)
        #expect(
            result.source.contains(
                #"""
                    public static var schemaMetadata: [Stowage.Schema.PropertyMetadata] {
                        var metadata: [Stowage.Schema.PropertyMetadata] = []
                        metadata.append(Stowage.Schema.PropertyMetadata._property(\Item.name, name: "name", defaultValue: ""))
                        #if os(Linux)
                        metadata.append(Stowage.Schema.PropertyMetadata._property(\Item.linuxNote, name: "linuxNote"))
                        #elseif DEBUG
                        metadata.append(Stowage.Schema.PropertyMetadata._property(\Item.debugNote, name: "debugNote", defaultValue: ""))
                        #else
                        #endif
                        return metadata
                    }
                """#))
        #expect(
            result.source.contains(
                #"""
                    public required init(backingData: Stowage.ModelBackingData) {
                        self._$backingData = backingData
                        self._name = Stowage._StowagePersistedProperty()
                        #if os(Linux)
                        self._linuxNote = Stowage._StowagePersistedProperty()
                        #elseif DEBUG
                        self._debugNote = Stowage._StowagePersistedProperty()
                        #else
                        #endif
                    }
                """#))
        // Which properties exist is decided after expansion: no property goes by position.
        #expect(result.source.contains(#"return self.getValue(forKey: \.name)"#))
        #expect(!result.source.contains("_getValue"))
    }

    @Test("Positions count persisted properties only, and a #if without any leaves them")
    func positionsSkipOtherMembers() {
        let result = expand(
            #"""
            @Model final class Item {
                @Transient var selected = false
                var first = ""
                var computed: Int { 1 }
                static var shared = 0
                #if false
                func unrelated() {}
                #endif
                @Attribute(.unique) var second: Int
                @Relationship var parent: Item?
            }
            """#)
        #expect(result.diagnostics.isEmpty)
        #expect(result.source.contains(#"return self._getValue(forKey: \.first, at: 0)"#))
        #expect(result.source.contains(#"self._setValue(forKey: \.second, at: 1, to: newValue)"#))
        #expect(result.source.contains(#"return self._getValue(forKey: \.parent, at: 2)"#))
        #expect(!result.source.contains(#"forKey: \.selected"#))
    }

    /// What `_stowageRecyclable` says for a class declared with `body` after `@Model`.
    func recyclable(_ declaration: String) -> Bool? {
        let source = expand("@Model " + declaration).source
        guard let range = source.range(of: "_stowageRecyclable: Bool {") else { return nil }
        let rest = source[range.upperBound...].drop { $0.isWhitespace }
        if rest.hasPrefix("true") { return true }
        if rest.hasPrefix("false") { return false }
        return nil
    }

    @Test("Only a final class whose whole state is persisted lets enumerate refill its models")
    func recyclableClasses() {
        // Computed and static properties, #Index, initializers and methods hold no state.
        #expect(
            recyclable(
                #"""
                final class Reading {
                    var sensor: String
                    var value: Double
                    var doubled: Double { value * 2 }
                    static var unit = "K"
                    #Index<Reading>([\.sensor])
                    init(sensor: String, value: Double) { self.sensor = sensor; self.value = value }
                    func describe() -> String { sensor }
                    #if DEBUG
                    var debugName: String { sensor }
                    #endif
                }
                """#) == true)
        #expect(recyclable("final class Reading: Identifiable, Hashable { var sensor: String }") == true)
        // A subclass could add stored properties, and so could a superclass.
        #expect(recyclable("class Reading { var sensor: String }") == false)
        #expect(recyclable("final class Reading: Instrument { var sensor: String }") == false)
        // State the backing data does not hold, or a deinit the refill would skip.
        #expect(recyclable("final class Reading { var sensor: String; @Transient var isSelected = false }") == false)
        #expect(recyclable("final class Reading { var sensor: String; lazy var label = sensor }") == false)
        #expect(recyclable("final class Reading { var sensor: String; deinit { print(sensor) } }") == false)
        #expect(
            recyclable(
                """
                final class Reading {
                    var sensor: String
                    #if DEBUG
                    @Transient var trace: [String] = []
                    #endif
                }
                """) == false)
    }
}
