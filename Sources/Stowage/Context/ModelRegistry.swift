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
///
/// The table is a compact hash map of its own: the identifiers and entries in two dense
/// arrays, and an open-addressing table of 4-byte positions into them. It takes much less
/// memory than a `Dictionary` of 40-byte buckets at most three quarters full; and growing it
/// copies the dense arrays and rebuilds the positions, where a dictionary held its old and
/// new buckets at once (see `Benchmarks/RESULTS.md`, "Measurements behind the code").
struct ModelRegistry {
    struct Entry {
        unowned let model: any PersistentModel
        /// The backing data that will take the entry out: the model's at registration.
        let data: ObjectIdentifier
    }

    /// The registered identifiers and their entries, at the same positions, in no order:
    /// a removal moves the last one into the gap.
    private var ids: [PersistentIdentifier] = []
    private var entries: [Entry] = []
    /// Linear probing over positions: a slot holds a position in `ids` plus one, or 0 when
    /// empty. Its count is a power of two, at least twice the entries.
    private var slots: [UInt32] = []
    /// Counts the models registered, never the ones taken out, so that `enumerate` can
    /// tell whether its block registered anything.
    private(set) var registrations = 0
    /// One model registered outside the table: the one `enumerate` hands its block. Most
    /// such models go when the block returns, and their backing data's `deinit` then only
    /// clears this, instead of taking out of the table an entry put in for it a moment
    /// before. Any other change to the registry, or the next provisional model, puts it in
    /// the table first; look-ups see it where it is.
    private var provisional: (id: PersistentIdentifier, entry: Entry)?

    init() {}

    init(minimumCapacity: Int) {
        ids.reserveCapacity(minimumCapacity)
        entries.reserveCapacity(minimumCapacity)
        slots = Array(repeating: 0, count: Self.slotCount(for: minimumCapacity))
    }

    var count: Int { ids.count + (provisional == nil ? 0 : 1) }
    /// Every registered identifier, in no order.
    var identifiers: [PersistentIdentifier] { provisional.map { ids + [$0.id] } ?? ids }
    var isEmpty: Bool { ids.isEmpty && provisional == nil }

    subscript(id: PersistentIdentifier) -> (any PersistentModel)? {
        get {
            if let provisional, provisional.id == id { return provisional.entry.model }
            return find(id).map { entries[$0.position].model }
        }
        set {
            if let newValue {
                register(newValue, data: newValue.persistentBackingData, for: id)
            } else {
                removeValue(forKey: id)
            }
        }
    }

    /// Registers `model`, whose backing data is `data`, in place of any model registered
    /// for `id`: as the subscript does, without asking the model for its backing data
    /// through the protocol.
    mutating func register(_ model: any PersistentModel, data: ModelBackingData, for id: PersistentIdentifier) {
        _ = set(Entry(model: model, data: ObjectIdentifier(data)), for: id)
    }

    /// Registers `model` and returns the model that was registered for `id` before, if any.
    mutating func updateValue(_ model: any PersistentModel, forKey id: PersistentIdentifier) -> (
        any PersistentModel
    )? {
        set(Entry(model: model, data: ObjectIdentifier(model.persistentBackingData)), for: id)?.model
    }

    /// Registers `model`, which `id` has no entry for, outside the table (`provisional`),
    /// putting the model registered so before it in the table.
    mutating func registerProvisionally(
        _ model: any PersistentModel, data: ModelBackingData, for id: PersistentIdentifier
    ) {
        settleProvisional()
        registrations &+= 1
        provisional = (id, Entry(model: model, data: ObjectIdentifier(data)))
    }

    /// Takes out the provisional entry, if any: `enumerate` keeps its model aside, where
    /// nothing may find it, to hold another record.
    mutating func removeProvisional() { provisional = nil }

    /// Whether the provisional entry is the one of the backing data `data`.
    func isProvisional(_ data: ObjectIdentifier) -> Bool { provisional?.entry.data == data }

    /// Puts the provisional entry, if any, in the table, as a registration already counted.
    private mutating func settleProvisional() {
        guard let (id, entry) = provisional else { return }
        provisional = nil
        _ = set(entry, for: id)
        registrations &-= 1
    }

    @discardableResult
    mutating func removeValue(forKey id: PersistentIdentifier) -> (any PersistentModel)? {
        settleProvisional()
        guard let found = find(id) else { return nil }
        let model = entries[found.position].model
        remove(found)
        return model
    }

    /// Takes out the entry of a model that is going away, if it is still that model's:
    /// its object is being destroyed, so the entry is compared by backing data, never read.
    mutating func forget(_ id: PersistentIdentifier, data: ObjectIdentifier) {
        if let provisional, provisional.entry.data == data {
            self.provisional = nil
            return
        }
        guard let found = find(id), entries[found.position].data == data else { return }
        remove(found)
    }

    // MARK: The table

    /// The fewest slots that keep `count` entries at most half full.
    private static func slotCount(for count: Int) -> Int {
        var slots = 16
        while slots < count * 2 { slots *= 2 }
        return slots
    }

    /// The slot where a search for `id` starts, in a table of `mask + 1` slots.
    ///
    /// Static, and given the mask: as a method it took `self`, and each call from a
    /// mutating method copied the whole registry (its arrays retained and released).
    private static func home(_ id: PersistentIdentifier, _ mask: Int) -> Int {
        id._rawHashValue(seed: 0) & mask
    }

    /// Where `id` is: its slot, and its position in the dense arrays.
    private func find(_ id: PersistentIdentifier) -> (slot: Int, position: Int)? {
        guard !slots.isEmpty else { return nil }
        let mask = slots.count - 1
        var slot = Self.home(id, mask)
        while true {
            let stored = Int(slots[slot])
            if stored == 0 { return nil }
            if ids[stored - 1] == id { return (slot, stored - 1) }
            slot = (slot + 1) & mask
        }
    }

    /// Puts `entry` in for `id`, and returns the entry it replaced.
    private mutating func set(_ entry: Entry, for id: PersistentIdentifier) -> Entry? {
        settleProvisional()
        registrations &+= 1
        if (ids.count + 1) * 2 > slots.count { grow() }
        let mask = slots.count - 1
        var slot = Self.home(id, mask)
        while true {
            let stored = Int(slots[slot])
            if stored == 0 { break }
            if ids[stored - 1] == id {
                let replaced = entries[stored - 1]
                entries[stored - 1] = entry
                return replaced
            }
            slot = (slot + 1) & mask
        }
        ids.append(id)
        entries.append(entry)
        slots[slot] = UInt32(ids.count)
        return nil
    }

    /// Doubles the slots and puts every position in again.
    private mutating func grow() {
        slots = Array(repeating: 0, count: Self.slotCount(for: ids.count + 1))
        let mask = slots.count - 1
        for position in ids.indices {
            var slot = Self.home(ids[position], mask)
            while slots[slot] != 0 { slot = (slot + 1) & mask }
            slots[slot] = UInt32(position + 1)
        }
    }

    /// Takes out what `find` found: its slot, closing the gap so that every search still
    /// reaches its entry (backward-shift deletion), and its place in the dense arrays,
    /// filled by the last entry.
    private mutating func remove(_ found: (slot: Int, position: Int)) {
        let mask = slots.count - 1
        var gap = found.slot
        slots[gap] = 0
        var next = (gap + 1) & mask
        while slots[next] != 0 {
            let start = Self.home(ids[Int(slots[next]) - 1], mask)
            // The entry at `next` may move back into the gap unless its search starts
            // after the gap and at or before `next` (cyclically).
            let stays = gap <= next ? (gap < start && start <= next) : (gap < start || start <= next)
            if !stays {
                slots[gap] = slots[next]
                slots[next] = 0
                gap = next
            }
            next = (next + 1) & mask
        }
        let last = ids.count - 1
        if found.position != last {
            // The last entry moves into the gap: its slot points there now.
            var slot = Self.home(ids[last], mask)
            while Int(slots[slot]) != last + 1 { slot = (slot + 1) & mask }
            slots[slot] = UInt32(found.position + 1)
            ids[found.position] = ids[last]
            entries[found.position] = entries[last]
        }
        ids.removeLast()
        entries.removeLast()
    }
}
