import Foundation
import Synchronization

/// The storage behind one model's stored properties.
///
/// `@Model` gives every model one of these. It holds the property values in schema
/// order, the model's identifier, and the context it is registered in. Relationship
/// values are the related models while they are unsaved, and their identifiers after,
/// so that saved object graphs hold no reference cycles.
///
/// SwiftData's equivalent is the `BackingData` protocol; Stowage has one concrete class.
///
/// The stored properties read on every property access are `@exclusivity(unchecked)`: a
/// model is used from one context at a time, and no method of this class reads one of them
/// while it modifies the same one. The dynamic checks would add to every property read
/// (see `Benchmarks/RESULTS.md`, "Measurements behind the code").
public final class ModelBackingData {
    enum Slot {
        case unset
        case value(Any)
        /// A value as the store holds it: one fetched, or one of a common type written by
        /// the app (`encodeDirectly`), which a read decodes and a save takes as it is.
        case encoded(SnapshotValue)
        case toOne(RelatedReference?)
        case toMany([RelatedReference])
    }

    /// The model class.
    let modelType: any PersistentModel.Type
    @exclusivity(unchecked) private var resolvedEntity: Schema.Entity?
    /// The entity the model belongs to.
    public var entity: Schema.Entity {
        if let resolvedEntity { return resolvedEntity }
        let entity = EntityRegistry.entity(for: modelType)
        resolvedEntity = entity
        return entity
    }
    /// The values in schema order; empty until the first write, which sizes it.
    @exclusivity(unchecked) var slots: [Slot]
    /// The values in the store's form, while `slots` is empty (values mode), for an entity
    /// of attributes of common types (`Schema.Entity.lazyChecks`). A fetched model keeps
    /// the store's array, whose every value was checked to decode, and a read decodes the
    /// one value it needs. A write of a common type encodes into it: the array is smaller
    /// than `slots` (24 bytes a value, not 40) and a save copies it as it is. Any other write
    /// moves the values to `slots`.
    /// Stowage's own optimization: SwiftData has nothing like it to mirror.
    @exclusivity(unchecked) var encodedValues: [SnapshotValue] = []
    /// In values mode, a bit for each property not written yet: a new model in its `init`.
    @exclusivity(unchecked) var unsetValues: UInt64 = 0
    @exclusivity(unchecked) var assignedID: PersistentIdentifier?
    /// The model's identifier: a temporary one, made when first asked for, until a store
    /// assigns a permanent one.
    public internal(set) var persistentModelID: PersistentIdentifier {
        get {
            if let assignedID { return assignedID }
            let id = PersistentIdentifier.temporary(in: entity.temporaryScope)
            assignedID = id
            return id
        }
        set { assignedID = newValue }
    }
    /// The context the model is registered in, through the link that context shares with
    /// all its models: `nil` once the context is gone.
    var context: ModelContext? {
        get { contextLink?.context }
        set { contextLink = newValue?.link }
    }
    @exclusivity(unchecked) var contextLink: ModelContext.Link?
    /// Whether the model is registered in `context`: no weak load.
    func isRegistered(in context: ModelContext) -> Bool { contextLink === context.link }
    var isDeleted = false
    /// Whether `enumerate` made the model, which then shares the observation registrar of
    /// the batch its context is handing out when it is first read (``_firstObservation()``).
    /// Beside `isDeleted`, in the word it pads out.
    var sharesBatchObservation = false
    /// The properties this model's context wrote since the model last matched its record
    /// (inserted or fetched, saved, refreshed or rolled back): bit *i* for the property at
    /// position *i* below 15, bit 15 for all the others together. A merge of another
    /// context's save takes the stored values of the properties not written here
    /// (``ModelContext/processPendingChanges()``). 16 bits in the padding after
    /// `sharesBatchObservation`, so the object does not grow.
    @exclusivity(unchecked) var writtenProperties: UInt16 = 0
    /// Where the next ``setInitialValue(_:forKey:)`` probably writes: the one after the last.
    /// 32 bits beside `isDeleted`, in the word it pads out: the object is then 104 bytes,
    /// a 112-byte allocation where it was 128.
    private var initialValueCursor: Int32 = 0
    /// Relationship slots filled before the model object existed; their inverses are
    /// linked when the model is first used.
    @exclusivity(unchecked) var pendingInverses: [Int] = []

    /// Creates empty storage for a new model of `type`. `@Model` calls this.
    ///
    /// It does no work beyond the allocation: the entity, the slots and the temporary
    /// identifier are all made when first needed.
    public init(for type: any PersistentModel.Type) {
        self.modelType = type
        self.slots = []
        self._awaitsSubclassValues = type._stowageSuperentityType != nil
    }

    /// Whether the model is of a subclass of another model class, and its own properties'
    /// initial values may still wait in the subclass's storage: they were given before
    /// the superclass's initializer made this backing data. The model's first use of its
    /// backing data takes them (``_adoptInitialValues(from:)``). Written by `@Model`.
    public var _awaitsSubclassValues = false

    /// Takes the values a model subclass's initializer gave its own properties, which
    /// `pending` holds, into this backing data. `@Model` calls this.
    public func _adoptInitialValues(from pending: ModelBackingData) {
        let count = entity.properties.count
        var taken: [(Int, Slot)] = []
        for index in 0..<count {
            let slot = pending.slot(index)
            if case .unset = slot { continue }
            taken.append((index, slot))
        }
        guard !taken.isEmpty else { return }
        ensureSlots()
        for (index, slot) in taken { slots[index] = slot }
        pendingInverses.append(contentsOf: pending.pendingInverses)
    }

    /// Takes the model out of its context's registry, which does not keep it alive: the
    /// model is going away with its backing data.
    deinit {
        guard let link = contextLink, let context = link.context else { return }
        if let id = assignedID { context.registered.forget(id, data: ObjectIdentifier(self)) }
        // The related models prefetched for this one go with it, freed once the removal has
        // returned: their own deinits look at the same table.
        if !context.prefetchedByOwner.isEmpty {
            _ = context.prefetchedByOwner.removeValue(forKey: ObjectIdentifier(self))
        }
    }

    /// The observation registrar for a model's first property read. `@Model` calls this.
    ///
    /// A model that `ModelContext.enumerate` made, first read while an enumeration of its
    /// context is handing a batch to its block (its own batch, as a rule, unless the block
    /// kept it for a later one), shares that batch's registrar; any other model gets a
    /// registrar of its own.
    ///
    /// Stowage's own: SwiftData gives every model its own registrar. Making and freeing one
    /// for each enumerated model (two allocations and a lock, made and torn down per row) was
    /// a large part of an enumeration (see `Benchmarks/RESULTS.md`, "Measurements behind the
    /// code"). An observer of an enumerated model is told of every change it would be told of
    /// in SwiftData; it may also be told of a change to the same property of another model of
    /// that batch.
    public func _firstObservation() -> _ModelObservation {
        guard sharesBatchObservation, let link = contextLink, link.handsOutBatch else { return _ModelObservation() }
        if let shared = link.batchObservation { return shared }
        let made = _ModelObservation()
        link.batchObservation = made
        return made
    }

    /// The slot at `index`, `.unset` when nothing was written yet.
    func slot(_ index: Int) -> Slot {
        if index < slots.count { return slots[index] }
        guard index < encodedValues.count, unsetValues & (1 << UInt64(index)) == 0 else { return .unset }
        return .encoded(encodedValues[index])
    }

    /// Sizes the slots before a write; values held encoded move into them as they are.
    func ensureSlots() {
        if !encodedValues.isEmpty {
            let values = encodedValues
            let unset = unsetValues
            encodedValues = []
            unsetValues = 0
            slots = values.enumerated().map { unset & (1 << UInt64($0.offset)) != 0 ? .unset : .encoded($0.element) }
        }
        let count = entity.properties.count
        if slots.count < count { slots.append(contentsOf: repeatElement(.unset, count: count - slots.count)) }
    }

    /// Creates storage from a store's snapshot.
    /// - Throws: ``SwiftDataError`` `.modelValidationFailure` if a value does not decode
    ///   into its property's type.
    init(entity: Schema.Entity, snapshot: DefaultSnapshot) throws {
        self.modelType = entity.modelType
        self.resolvedEntity = entity
        self.slots = []
        self.assignedID = snapshot.persistentIdentifier
        try apply(snapshot)
    }

    /// Whether ``refill(with:)`` may make this backing data hold `snapshot`'s record: it
    /// belongs to a model `enumerate` made, holds an unchanged record of an entity whose
    /// values it keeps as the store's (every slot as fetched, no relationship), and
    /// `snapshot` is a record of the same entity whose values pass its checks.
    func canRefill(with snapshot: DefaultSnapshot) -> Bool {
        guard sharesBatchObservation, !isDeleted, slots.isEmpty, unsetValues == 0, pendingInverses.isEmpty,
            !encodedValues.isEmpty, let assignedID, assignedID.scope === snapshot.persistentIdentifier.scope,
            let checks = resolvedEntity?.lazyChecks
        else { return false }
        return Self.allAccepted(snapshot.values, by: checks)
    }

    /// Makes this backing data hold `snapshot`'s record, as a new one made for it would;
    /// only after ``canRefill(with:)`` said yes.
    func refill(with snapshot: DefaultSnapshot) {
        encodedValues = snapshot.values
        writtenProperties = 0
        assignedID = snapshot.persistentIdentifier
        initialValueCursor = 0
    }

    /// Whether each value passes its property's check, read in place: `zip` copied each
    /// value out of the array, a retain and a release for each string.
    private static func allAccepted(
        _ values: [SnapshotValue], by checks: [PropertyCodec.CaseCheck]
    ) -> Bool {
        values.withUnsafeBufferPointer { values in
            checks.withUnsafeBufferPointer { checks in
                guard values.count == checks.count else { return false }
                for i in 0..<checks.count where !checks[i].accepts(values[i]) { return false }
                return true
            }
        }
    }

    /// Replaces every value with the snapshot's.
    func apply(_ snapshot: DefaultSnapshot) throws {
        let kinds = entity.slotKinds
        guard snapshot.values.count == kinds.count else {
            throw SwiftDataError(
                .modelValidationFailure,
                "\(entity.name): the snapshot has \(snapshot.values.count) values, the schema \(kinds.count)")
        }
        writtenProperties = 0
        if let checks = entity.lazyChecks, Self.allAccepted(snapshot.values, by: checks) {
            encodedValues = snapshot.values
            unsetValues = 0
            slots = []
            return
        }
        encodedValues = []
        unsetValues = 0
        var newSlots: [Slot] = []
        newSlots.reserveCapacity(kinds.count)
        for (index, kind) in kinds.enumerated() {
            let value = snapshot.values[index]
            switch kind {
            case .attribute(let decode, _):
                do {
                    newSlots.append(.value(try decode(value)))
                } catch let error as SwiftDataError {
                    throw SwiftDataError(
                        error.code,
                        "\(entity.name).\(entity.properties[index].name) of \(snapshot.persistentIdentifier): \(error.message)"
                    )
                }
            case .toOne, .toMany:
                guard let ids = Self.identifiers(in: value) else {
                    throw SwiftDataError(
                        .modelValidationFailure,
                        "\(entity.name).\(entity.properties[index].name): expected identifiers, found \(value.kindName)"
                    )
                }
                if case .toOne = kind {
                    newSlots.append(.toOne(ids.first.map { .id($0) }))
                } else {
                    newSlots.append(.toMany(ids.map { .id($0) }))
                }
            }
        }
        slots = newSlots
    }

    /// The identifiers a stored relationship value holds, or `nil` when it holds none.
    static func identifiers(in value: SnapshotValue) -> [PersistentIdentifier]? {
        switch value {
        case .null: []
        case .identifier(let id): [id]
        case .array(let items): items.compactMap { if case .identifier(let id) = $0 { id } else { nil } }
        default: nil
        }
    }

    /// Bit of ``writtenProperties`` for the property at `index`.
    @inline(__always)
    static func writtenBit(_ index: Int) -> UInt16 { index < 15 ? 1 << UInt16(index) : 0x8000 }

    /// Whether this model's context wrote the property at `index` since the model last
    /// matched its record.
    func wasWritten(_ index: Int) -> Bool { writtenProperties & Self.writtenBit(index) != 0 }

    /// Takes the stored values at `indices` from `snapshot`, a newer version of the model's
    /// record, keeping every other value as it is: a merge of another context's save into
    /// a model with unsaved changes. Written bits are left as they are.
    func takeStoredValues(_ snapshot: DefaultSnapshot, at indices: [Int]) {
        ensureSlots()
        let kinds = entity.slotKinds
        for index in indices where index < slots.count && index < snapshot.values.count {
            let value = snapshot.values[index]
            switch kinds[index] {
            case .attribute:
                slots[index] = .encoded(value)
            case .toOne:
                slots[index] = .toOne(Self.identifiers(in: value)?.first.map { .id($0) })
            case .toMany:
                slots[index] = .toMany((Self.identifiers(in: value) ?? []).map { .id($0) })
            }
        }
    }

    /// The model's current values as a snapshot.
    /// - Throws: ``SwiftDataError`` `.unsupportedValue` if a value cannot be encoded.
    func snapshot() throws -> DefaultSnapshot {
        if slots.isEmpty, unsetValues == 0, !encodedValues.isEmpty, encodedValues.count == entity.properties.count {
            // Values mode: the values are already in the store's form, and the snapshot
            // shares the model's array (a later write to the model copies it first). A copy
            // here, made so that a store's snapshots lie together in memory, raised a large
            // insert's peak memory (the models' own arrays were freed among their other
            // objects, where the heap cannot give the room back) and bought no speed beyond
            // the machine's run-to-run spread (see `Benchmarks/RESULTS.md`, "Measurements
            // behind the code").
            return DefaultSnapshot(persistentIdentifier: persistentModelID, values: encodedValues)
        }
        var values: [SnapshotValue] = []
        let kinds = entity.slotKinds
        values.reserveCapacity(kinds.count)
        ensureSlots()
        for (index, slot) in slots.enumerated() {
            switch slot {
            case .unset:
                values.append(.null)
            case .encoded(let value):
                values.append(value)
            case .value(let any):
                guard case .attribute(_, let encode) = kinds[index] else {
                    values.append(.null)
                    continue
                }
                do {
                    values.append(try encode(any))
                } catch let error as SwiftDataError {
                    throw SwiftDataError(
                        error.code, "\(entity.name).\(entity.properties[index].name): \(error.message)")
                }
            case .toOne(let ref):
                values.append(ref.map { .identifier($0.id) } ?? .null)
            case .toMany(let refs):
                values.append(.array(refs.map { .identifier($0.id) }))
            }
        }
        return DefaultSnapshot(persistentIdentifier: persistentModelID, values: values)
    }

    // MARK: Attributes

    func index(of keyPath: AnyKeyPath) -> Int {
        guard let index = entity.index(forKeyPath: keyPath) else {
            preconditionFailure("\(entity.name) has no stored property \(keyPath)")
        }
        return index
    }

    func attributeValue<Value>(_ keyPath: AnyKeyPath, as type: Value.Type, owner: any PersistentModel) -> Value {
        attributeValue(at: index(of: keyPath), as: type, owner: owner)
    }

    /// The attribute at `index`, the position `@Model` worked out from the class's
    /// declaration: the entity's properties are the class's persisted properties in the
    /// order declared (``Schema/Entity``), so no key path is looked up.
    @usableFromInline
    func attributeValue<Value>(at index: Int, as type: Value.Type, owner: any PersistentModel) -> Value {
        bindIfNeeded(owner)
        // No `Value?` on these paths: in generic code each one looks up `Optional<Value>`'s
        // metadata in the runtime's cache.
        if slots.isEmpty, index < encodedValues.count, unsetValues & (1 << UInt64(index)) == 0 {
            return Self.decodeDirectly(encodedValues[index], as: Value.self) {
                storedAttributeValue(index, as: Value.self)
            }
        }
        if index < slots.count, case .encoded(let value) = slots[index] {
            return Self.decodeDirectly(value, as: Value.self) { storedAttributeValue(index, as: Value.self) }
        }
        return storedAttributeValue(index, as: Value.self)
    }

    /// The value at `index` through the slot and the property's conversion.
    @inline(never)
    private func storedAttributeValue<Value>(_ index: Int, as type: Value.Type) -> Value {
        precondition(
            index < entity.properties.count,
            "\(entity.name) has no stored property at position \(index): @Model and the entity disagree")
        switch slot(index) {
        case .value(let any):
            if let value = any as? Value { return value }
        case .encoded(let encoded):
            // Fetched values passed their check, and written ones were encoded from this
            // type: the decode does not fail.
            if case .attribute(let decode, _) = entity.slotKinds[index], let any = try? decode(encoded),
                let value = any as? Value
            {
                return value
            }
        default:
            break
        }
        if let value = entity.properties[index].defaultValue as? Value { return value }
        if let none = (Value.self as? any _OptionalValue.Type)?._none as? Value { return none }
        preconditionFailure("\(entity.name).\(entity.properties[index].name) was read before it was set")
    }

    /// A fetched value of a common leaf type, without boxing it in `Any` or casting it: a
    /// metatype comparison picks the type. Anything else takes `otherwise`, the property's
    /// own conversion. The optional types' metadata is looked up once (`OptionalTypes`),
    /// not on every read.
    @inline(__always)
    static func decodeDirectly<Value>(
        _ value: SnapshotValue, as type: Value.Type, otherwise: () -> Value
    ) -> Value {
        switch value {
        case .string(let v):
            if Value.self == String.self { return unsafeBitCast(v, to: Value.self) }
            if Value.self == OptionalTypes.string { return unsafeBitCast(String?.some(v), to: Value.self) }
        case .double(let v):
            if Value.self == Double.self { return unsafeBitCast(v, to: Value.self) }
            if Value.self == OptionalTypes.double { return unsafeBitCast(Double?.some(v), to: Value.self) }
        case .int(let v):
            if Value.self == Int.self { return unsafeBitCast(Int(v), to: Value.self) }
            if Value.self == OptionalTypes.int { return unsafeBitCast(Int?.some(Int(v)), to: Value.self) }
            if Value.self == Int64.self { return unsafeBitCast(v, to: Value.self) }
            if Value.self == OptionalTypes.int64 { return unsafeBitCast(Int64?.some(v), to: Value.self) }
        case .bool(let v):
            if Value.self == Bool.self { return unsafeBitCast(v, to: Value.self) }
            if Value.self == OptionalTypes.bool { return unsafeBitCast(Bool?.some(v), to: Value.self) }
        case .date(let v):
            if Value.self == Date.self { return unsafeBitCast(v, to: Value.self) }
            if Value.self == OptionalTypes.date { return unsafeBitCast(Date?.some(v), to: Value.self) }
        case .uuid(let v):
            if Value.self == UUID.self { return unsafeBitCast(v, to: Value.self) }
            if Value.self == OptionalTypes.uuid { return unsafeBitCast(UUID?.some(v), to: Value.self) }
        case .data(let v):
            if Value.self == Data.self { return unsafeBitCast(v, to: Value.self) }
            if Value.self == OptionalTypes.data { return unsafeBitCast(Data?.some(v), to: Value.self) }
        default:
            break
        }
        return otherwise()
    }

    /// Writes a value of a common type into the encoded values, in values mode (see
    /// `encodedValues`); `false` when the model is not in values mode or the type is not
    /// a common one, and the caller writes a slot instead.
    @inline(__always)
    private func writeEncoded<Value>(_ value: Value, at index: Int) -> Bool {
        guard slots.isEmpty, entity.lazyChecks != nil, let encoded = Self.encodeDirectly(value) else { return false }
        if encodedValues.isEmpty {
            // A new model: every value unset until its `init` writes it.
            let count = entity.properties.count
            guard count <= 64 else { return false }
            encodedValues = Array(repeating: .null, count: count)
            unsetValues = count == 64 ? .max : (1 << UInt64(count)) - 1
        }
        encodedValues[index] = encoded
        unsetValues &= ~(1 << UInt64(index))
        return true
    }

    /// The slot for a value written to the attribute at `index`: encoded at once when the
    /// property converts fast (no transformer) and the type is a common one, so that a save
    /// takes it without a dynamic cast; otherwise the value itself.
    @inline(__always)
    private func storedSlot<Value>(_ value: Value, at index: Int) -> Slot {
        if entity.fastConversions[index], let encoded = Self.encodeDirectly(value) {
            return .encoded(encoded)
        }
        return .value(value)
    }

    /// A value of a common leaf type as the store holds it, chosen by a metatype comparison
    /// (the inverse of `decodeDirectly`); `nil` for anything else.
    @inline(__always)
    static func encodeDirectly<Value>(_ value: Value) -> SnapshotValue? {
        if Value.self == String.self { return .string(unsafeBitCast(value, to: String.self)) }
        if Value.self == Double.self { return .double(unsafeBitCast(value, to: Double.self)) }
        if Value.self == Int.self { return .int(Int64(unsafeBitCast(value, to: Int.self))) }
        if Value.self == Int64.self { return .int(unsafeBitCast(value, to: Int64.self)) }
        if Value.self == Bool.self { return .bool(unsafeBitCast(value, to: Bool.self)) }
        if Value.self == Date.self { return .date(unsafeBitCast(value, to: Date.self)) }
        if Value.self == UUID.self { return .uuid(unsafeBitCast(value, to: UUID.self)) }
        if Value.self == Data.self { return .data(unsafeBitCast(value, to: Data.self)) }
        if Value.self == OptionalTypes.string {
            return unsafeBitCast(value, to: String?.self).map { .string($0) } ?? .null
        }
        if Value.self == OptionalTypes.double {
            return unsafeBitCast(value, to: Double?.self).map { .double($0) } ?? .null
        }
        if Value.self == OptionalTypes.int {
            return unsafeBitCast(value, to: Int?.self).map { .int(Int64($0)) } ?? .null
        }
        if Value.self == OptionalTypes.int64 { return unsafeBitCast(value, to: Int64?.self).map { .int($0) } ?? .null }
        if Value.self == OptionalTypes.bool { return unsafeBitCast(value, to: Bool?.self).map { .bool($0) } ?? .null }
        if Value.self == OptionalTypes.date { return unsafeBitCast(value, to: Date?.self).map { .date($0) } ?? .null }
        if Value.self == OptionalTypes.uuid { return unsafeBitCast(value, to: UUID?.self).map { .uuid($0) } ?? .null }
        if Value.self == OptionalTypes.data { return unsafeBitCast(value, to: Data?.self).map { .data($0) } ?? .null }
        return nil
    }

    /// `Optional` metatypes, made once: naming `String?.self` in a function looks its
    /// metadata up in the runtime's cache each time.
    enum OptionalTypes {
        static let string: Any.Type = String?.self
        static let double: Any.Type = Double?.self
        static let int: Any.Type = Int?.self
        static let int64: Any.Type = Int64?.self
        static let bool: Any.Type = Bool?.self
        static let date: Any.Type = Date?.self
        static let uuid: Any.Type = UUID?.self
        static let data: Any.Type = Data?.self
    }

    func setAttributeValue<Value>(_ keyPath: AnyKeyPath, _ value: Value, owner: any PersistentModel) {
        setAttributeValue(at: index(of: keyPath), value, owner: owner)
    }

    /// Writes the attribute at `index`, a position from `@Model` as for
    /// ``attributeValue(at:as:owner:)``.
    @usableFromInline
    func setAttributeValue<Value>(at index: Int, _ value: Value, owner: any PersistentModel) {
        bindIfNeeded(owner)
        willChange(owner)
        let bit = Self.writtenBit(index)
        let newlyWritten = bit & ~writtenProperties
        writtenProperties |= bit
        if !writeEncoded(value, at: index) {
            ensureSlots()
            slots[index] = storedSlot(value, at: index)
        }
        context?.modelDidChange(owner, newlyWritten: newlyWritten)
    }

    /// Stores a value from a property's initial value or the model's `init`, before the
    /// model object is complete, making the model's backing data first if it has none yet.
    /// The `@Model` init accessors call this: a model gets its backing data from its first
    /// initial value, or from `init(backingData:)`, and never makes one to throw away.
    public static func setInitialValue<Value>(
        _ value: Value, forKey name: String, in data: inout ModelBackingData?, of type: any PersistentModel.Type
    ) {
        existing(in: &data, of: type).setInitialValue(value, forKey: name)
    }

    /// The backing data `data` holds, made for a model of `type` first if it holds none.
    /// `@Model`'s `persistentBackingData` getter and init accessors call this.
    @inlinable
    public static func existing(in data: inout ModelBackingData?, of type: any PersistentModel.Type)
        -> ModelBackingData
    {
        if let data { return data }
        let made = ModelBackingData(for: type)
        data = made
        return made
    }

    /// Stores a value from a property's initial value or the model's `init`, before the
    /// model object is complete.
    public func setInitialValue<Value>(_ value: Value, forKey name: String) {
        let entity = self.entity
        guard let index = entity.propertyIndex(named: name, guess: Int(initialValueCursor)) else { return }
        initialValueCursor = Int32(truncatingIfNeeded: index + 1)
        if writeEncoded(value, at: index) { return }
        ensureSlots()
        switch entity.slotKinds[index] {
        case .attribute:
            slots[index] = storedSlot(value, at: index)
        case .toOne:
            let models = Self.models(in: value)
            slots[index] = .toOne(models.first.map(RelatedReference.init))
            if !models.isEmpty { pendingInverses.append(index) }
        case .toMany:
            let models = Self.models(in: value)
            slots[index] = .toMany(models.map(RelatedReference.init))
            if !models.isEmpty { pendingInverses.append(index) }
        }
    }

    static func models(in value: Any) -> [any PersistentModel] {
        if let model = value as? any PersistentModel { return [model] }
        if let models = value as? [any PersistentModel] { return models }
        if let optional = value as? any _OptionalValue, let wrapped = optional._wrapped {
            return models(in: wrapped)
        }
        return []
    }

    /// Readies the model for a property read or write: brings in other contexts' saves
    /// that its context has yet to merge (``ModelContext/processPendingChanges()``), then
    /// links the inverses of relationships set before the model object existed.
    /// Brings in the other contexts' saves that the model's context has yet to merge.
    @inline(never)
    private func mergeOtherSaves() {
        contextLink?.context?.mergeOtherSaves()
    }

    func bindIfNeeded(_ owner: any PersistentModel) {
        // Optional chaining, and the merge in a function of its own: binding the link to a
        // name here retained and released it on every property read (the enumerate phase
        // of stowage-bench took a third longer).
        if contextLink?.mergePending.load(ordering: .relaxed) == true { mergeOtherSaves() }
        guard !pendingInverses.isEmpty else { return }
        let pending = pendingInverses
        pendingInverses = []
        for index in pending {
            let models = resolvedModels(at: index)
            for model in models {
                linkInverse(of: index, on: model, to: owner)
            }
        }
    }
}

/// A reference from one model to a related one.
enum RelatedReference {
    /// The related model itself, while it is unsaved.
    case model(any PersistentModel)
    /// The related model's permanent identifier.
    case id(PersistentIdentifier)

    init(_ model: any PersistentModel) {
        let id = model.persistentModelID
        self = id.isTemporary ? .model(model) : .id(id)
    }

    /// Whether the reference holds the model itself (an unsaved one).
    var isModel: Bool {
        if case .model = self { true } else { false }
    }

    var id: PersistentIdentifier {
        switch self {
        case .model(let model): model.persistentModelID
        case .id(let id): id
        }
    }
}
