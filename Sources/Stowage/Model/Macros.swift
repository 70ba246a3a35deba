// The macros below are implemented by the StowageMacros compiler plug-in. Their
// expansions qualify every runtime name with `Stowage.` and use
// `Observation.ObservationRegistrar`, which is why Stowage re-exports Observation
// (Exports.swift): a file that uses `@Model` then needs only `import Stowage`.

/// Turns a class into a persistent model that a ``ModelContext`` can store.
///
/// ```swift
/// @Model final class Item {
///     @Attribute(.unique) var name: String
///     var isPacked = false
///     @Relationship(deleteRule: .cascade, inverse: \Tag.item) var tags: [Tag] = []
///     @Transient var isSelected = false
///     init(name: String) { self.name = name }
/// }
/// ```
///
/// Every stored instance `var` is persisted unless it is marked ``Transient()``; computed,
/// `static` and `lazy` properties are left alone. Persisted properties must be `var`s
/// without `willSet`/`didSet` observers. The macro adds the backing data,
/// ``PersistentModel/schemaMetadata``, `init(backingData:)` and the conformances to
/// ``PersistentModel`` and `Observable`. It can only be applied to a class.
///
/// Where Stowage differs: a model makes its observation registrar when one of its
/// properties is first read, not with the model (see `_ModelObservation`), and its backing
/// data with its first initial value, or from `init(backingData:)`. Observers see what
/// they would see in SwiftData: a write to a property no one has read tells no one.
@attached(
    member,
    conformances: PersistentModel,
    names: named(_$backingData), named(persistentBackingData), named(schemaMetadata), named(init),
    named(_$observationRegistrar), named(_$observation), named(_stowageEntityName),
    named(_stowageRecyclable), named(_stowageReleaseForRefill), named(_stowageObservation),
    named(_stowageSuperentityType), named(_stowageSettleInitialValues), arbitrary
)
@attached(memberAttribute)
@attached(extension, conformances: PersistentModel, Observable)
public macro Model() = #externalMacro(module: "StowageMacros", type: "ModelMacro")

/// Routes a stored property through the model's backing data. `@Model` attaches it to
/// each persisted property; do not write it yourself.
@attached(accessor, names: named(init), named(get), named(set))
@attached(peer, names: prefixed(_))
public macro _PersistedProperty() = #externalMacro(module: "StowageMacros", type: "PersistedPropertyMacro")

/// `@_PersistedProperty` for a property whose position among the class's persisted
/// properties `@Model` knows: its accessors read and write by that position.
@attached(accessor, names: named(init), named(get), named(set))
@attached(peer, names: prefixed(_))
public macro _PersistedProperty(index: Int) = #externalMacro(module: "StowageMacros", type: "PersistedPropertyMacro")

/// `@_PersistedProperty(index:)` in a class that is not generic, `root`: its accessors hand
/// Observation a key path made once (`_keyPath_` and the property's name, beside it)
/// instead of a key path literal, which is looked up on every read.
@attached(accessor, names: named(init), named(get), named(set))
@attached(peer, names: prefixed(_), prefixed(_keyPath_))
public macro _PersistedProperty(index: Int, root: Any.Type) =
    #externalMacro(module: "StowageMacros", type: "PersistedPropertyMacro")

/// Customizes how a persisted property is stored: uniqueness, external storage,
/// a transformer, or its name in an earlier schema version.
///
/// ```swift
/// @Attribute(.unique) var name: String
/// @Attribute(originalName: "title") var name: String
/// ```
@attached(peer)
public macro Attribute(
    _ options: Schema.Attribute.Option...,
    originalName: String? = nil,
    hashModifier: String? = nil
) = #externalMacro(module: "StowageMacros", type: "AttributeMacro")

/// Describes a relationship to other models: its delete rule, its inverse, and the
/// number of related models it allows.
///
/// ```swift
/// @Relationship(deleteRule: .cascade, inverse: \Tag.item) var tags: [Tag] = []
/// ```
///
/// A property whose type is a model, an optional model or an array of models is a
/// relationship even without this attribute; it then uses the `.nullify` rule and no
/// declared inverse.
@attached(peer)
public macro Relationship(
    _ options: Schema.Relationship.Option...,
    deleteRule: Schema.Relationship.DeleteRule = .nullify,
    minimumModelCount: Int? = 0,
    maximumModelCount: Int? = 0,
    originalName: String? = nil,
    inverse: AnyKeyPath? = nil,
    hashModifier: String? = nil
) = #externalMacro(module: "StowageMacros", type: "RelationshipMacro")

/// Keeps a stored property out of the persistent store. The property must have a
/// default value (an optional `var` defaults to `nil`).
@attached(peer)
public macro Transient() = #externalMacro(module: "StowageMacros", type: "TransientMacro")

/// Marks storage that the macros themselves add, so `@Model` leaves it alone.
@attached(peer)
public macro _StowageIgnored() = #externalMacro(module: "StowageMacros", type: "StowageIgnoredMacro")

/// Declares the model's indexes, one key-path group per index, inside the `@Model`
/// class body.
///
/// ```swift
/// #Index<Item>([\.name], [\.isPacked, \.name])
/// ```
@freestanding(declaration, names: named(_stowageIndexes))
public macro Index<T>(_ indices: [PartialKeyPath<T>]...) =
    #externalMacro(module: "StowageMacros", type: "IndexMacro")

/// Declares groups of properties whose combined values must be unique among the
/// model's instances, inside the `@Model` class body. Inserting a model that matches
/// an existing one on every property of a group updates that model instead.
///
/// ```swift
/// #Unique<Item>([\.name, \.note])
/// ```
@freestanding(declaration, names: named(_stowageUniqueness))
public macro Unique<T>(_ constraints: [PartialKeyPath<T>]...) =
    #externalMacro(module: "StowageMacros", type: "UniqueMacro")

/// Makes an actor a ``ModelActor``: one that works with its own ``ModelContext``, off the
/// main actor.
///
/// ```swift
/// @ModelActor
/// actor Importer {
///     func importTrips(_ names: [String]) throws -> Int {
///         for name in names { modelContext.insert(Trip(name: name)) }
///         try modelContext.save()
///         return names.count
///     }
/// }
/// let count = try await Importer(modelContainer: container).importTrips(["Lisbon"])
/// ```
///
/// The macro adds `modelContainer`, `modelExecutor` and `init(modelContainer:)`, which
/// makes a new context for the container and a ``DefaultSerialModelExecutor`` over it, and
/// the actor's `unownedExecutor`, so that the actor's code runs on that executor. It can
/// only be applied to an actor.
///
/// Where Stowage differs: the executor runs the actor's jobs on a `DispatchQueue` of its
/// own, and `unownedExecutor` is one of the macro's members as well as the protocol's.
@attached(
    member, names: named(modelExecutor), named(modelContainer), named(init), named(unownedExecutor))
@attached(extension, conformances: ModelActor)
public macro ModelActor() = #externalMacro(module: "StowageMacros", type: "ModelActorMacro")
