/// A context's identity map: the one model object of each identifier it has handed out.
///
/// An entry does not keep its model alive. A model with unsaved changes is kept by the
/// context's lists of inserted, changed and deleted models; any other model lives as long
/// as the app holds it, and when it goes its backing data takes its entry out
/// (``ModelBackingData``'s `deinit`). So a context that fetched or saved a million models
/// holds none of them once the app lets them go, as Core Data's contexts do by default
/// (`retainsRegisteredObjects` is `false`), and a save frees what it wrote, as SwiftData's
/// advice to save during a large import expects.
///
/// An entry is an `unowned` reference: it counts in the object's own header, with no
/// side table and no allocation, and the object's memory stays until the entry is gone.
/// Entries are taken out as their models go, so a look-up never meets a released model.
/// That holds while a model's backing data goes with its model, which is all `@Model`
/// does with it: code that keeps a model's `persistentBackingData` after letting the model
/// go, and then asks the context for that model, stops with Swift's error for an unowned
/// reference to a released object.
struct ModelRegistry {
    struct Entry {
        unowned let model: any PersistentModel
        /// The backing data that will take the entry out: the model's at registration.
        let data: ObjectIdentifier
    }

    private(set) var entries: [PersistentIdentifier: Entry]
    /// Counts the models registered, never the ones taken out, so that `enumerate` can
    /// tell whether its block registered anything.
    private(set) var registrations = 0

    init() { entries = [:] }

    init(minimumCapacity: Int) { entries = Dictionary(minimumCapacity: minimumCapacity) }

    var count: Int { entries.count }
    var isEmpty: Bool { entries.isEmpty }

    subscript(id: PersistentIdentifier) -> (any PersistentModel)? {
        get { entries[id]?.model }
        set {
            if let newValue {
                registrations &+= 1
                entries[id] = Entry(model: newValue, data: ObjectIdentifier(newValue.persistentBackingData))
            } else {
                entries[id] = nil
            }
        }
    }

    /// Registers `model`, whose backing data is `data`, in place of any model registered
    /// for `id`: as the subscript does, without asking the model for its backing data
    /// through the protocol.
    mutating func register(_ model: any PersistentModel, data: ModelBackingData, for id: PersistentIdentifier) {
        registrations &+= 1
        entries[id] = Entry(model: model, data: ObjectIdentifier(data))
    }

    /// Registers `model` and returns the model that was registered for `id` before, if any.
    mutating func updateValue(_ model: any PersistentModel, forKey id: PersistentIdentifier) -> (
        any PersistentModel
    )? {
        registrations &+= 1
        return entries.updateValue(
            Entry(model: model, data: ObjectIdentifier(model.persistentBackingData)), forKey: id)?.model
    }

    @discardableResult
    mutating func removeValue(forKey id: PersistentIdentifier) -> (any PersistentModel)? {
        entries.removeValue(forKey: id)?.model
    }

    /// Takes out the entry of a model that is going away, if it is still that model's:
    /// its object is being destroyed, so the entry is compared by backing data, never read.
    mutating func forget(_ id: PersistentIdentifier, data: ObjectIdentifier) {
        guard let index = entries.index(forKey: id), entries.values[index].data == data else { return }
        entries.remove(at: index)
    }
}
