import Foundation

/// One transaction as a store keeps its history: what ``DefaultHistoryTransaction`` is
/// made from. Changes name entities and properties, so that they read the same whatever
/// layout the store holds them in.
package struct HistoryEntry: Sendable, Equatable {
    package var transactionID: Int64
    /// Milliseconds since 1970.
    package var timestamp: Int64
    package var author: String?
    package var changes: [Change]
    /// The program and process that saved it.
    package var writer = HistoryWriter.unknown

    package init(
        transactionID: Int64, timestamp: Int64, author: String?, changes: [Change],
        writer: HistoryWriter = .unknown
    ) {
        self.transactionID = transactionID
        self.timestamp = timestamp
        self.author = author
        self.changes = changes
        self.writer = writer
    }

    package struct Change: Sendable, Equatable {
        package enum Kind: UInt8, Sendable {
            case insert = 0
            case update = 1
            case delete = 2
        }
        package var kind: Kind
        package var entity: String
        package var key: Int64
        /// An update's changed properties, in schema order.
        package var updated: [String] = []
        /// A delete's `.preserveValueOnDeletion` values.
        package var tombstone: [String: SnapshotValue] = [:]

        package init(
            kind: Kind, entity: String, key: Int64, updated: [String] = [], tombstone: [String: SnapshotValue] = [:]
        ) {
            self.kind = kind
            self.entity = entity
            self.key = key
            self.updated = updated
            self.tombstone = tombstone
        }
    }
}

/// The program and the process that saved a transaction: Linux's equivalents of SwiftData's
/// bundle and process identifiers (`DefaultHistoryTransaction`).
package struct HistoryWriter: Sendable, Equatable {
    /// The executable's name, as `ProcessInfo.processName` gives it; empty when unknown.
    package var program: String
    /// The process identifier (`getpid()`); 0 when unknown.
    package var process: Int64

    package init(program: String, process: Int64) {
        self.program = program
        self.process = process
    }

    /// Who saved what a store of format before history recorded: nobody known.
    package static let unknown = HistoryWriter(program: "", process: 0)

    /// This process.
    package static let current = HistoryWriter(
        program: ProcessInfo.processInfo.processName, process: Int64(ProcessInfo.processInfo.processIdentifier))

    /// This process, or the test configuration's fixed writer (sample files).
    static func current(or fixed: (program: String, process: Int64)?) -> HistoryWriter {
        fixed.map { HistoryWriter(program: $0.program, process: $0.process) } ?? .current
    }
}

/// The values each update of a save changed, by position, kept flat: one array of update
/// positions and one of changed positions, instead of an array per update (a save of
/// thousands of updates made as many allocations, which the benchmark's update phase showed).
struct ChangedPositions: Sendable {
    /// The updates, by position among the save's writes, ascending.
    private(set) var writes: [Int] = []
    /// Where each update's changed positions start in `positions`.
    private var starts: [Int] = []
    private var positions: [Int] = []

    var count: Int { writes.count }

    /// Starts the next update's list: `write` is above every write added so far.
    mutating func addUpdate(_ write: Int) {
        writes.append(write)
        starts.append(positions.count)
    }

    /// Room for `updates` updates, and for a changed position or two each.
    mutating func reserveCapacity(_ updates: Int, positions perUpdate: Int) {
        writes.reserveCapacity(updates)
        starts.reserveCapacity(updates)
        positions.reserveCapacity(updates * Swift.min(perUpdate, 2))
    }

    /// Adds a changed position to the last update's list (ascending).
    mutating func addChanged(_ position: Int) { positions.append(position) }

    /// Adds to the last update's list the positions where `new` differs from `old`.
    /// A value the update did not write is the very same value (the model copied the
    /// record's array), so equal bytes settle most without copying either value: copying
    /// them retained their strings, and those retains were most of this in a profile.
    mutating func addChanged(from old: [SnapshotValue], to new: [SnapshotValue]) {
        old.withUnsafeBufferPointer { old in
            new.withUnsafeBufferPointer { new in
                guard let a = old.baseAddress, let b = new.baseAddress else {
                    positions.append(contentsOf: new.indices)
                    return
                }
                for index in new.indices {
                    if index < old.count, Self.sameBytes(a + index, b + index) || old[index].isStored(as: new[index]) {
                        continue
                    }
                    positions.append(index)
                }
            }
        }
    }

    /// Whether two values' bytes are the same, read word by word (a call to `memcmp` per
    /// value cost more than the comparison). Bytes a case leaves unused may differ between
    /// equal values; then the caller compares the values themselves.
    @inline(__always)
    private static func sameBytes(_ a: UnsafePointer<SnapshotValue>, _ b: UnsafePointer<SnapshotValue>) -> Bool {
        let size = MemoryLayout<SnapshotValue>.size
        let x = UnsafeRawPointer(a)
        let y = UnsafeRawPointer(b)
        var offset = 0
        while offset + 8 <= size {
            guard
                x.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                    == y.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            else { return false }
            offset += 8
        }
        while offset < size {
            guard x.load(fromByteOffset: offset, as: UInt8.self) == y.load(fromByteOffset: offset, as: UInt8.self)
            else { return false }
            offset += 1
        }
        return true
    }

    /// The changed positions of the `i`th update.
    func positions(at i: Int) -> ArraySlice<Int> {
        positions[starts[i]..<(i + 1 < starts.count ? starts[i + 1] : positions.count)]
    }

    /// The changed positions of the update at `write`, if it is one.
    subscript(write: Int) -> ArraySlice<Int>? {
        var low = 0
        var high = writes.count
        while low < high {
            let middle = (low + high) / 2
            if writes[middle] < write { low = middle + 1 } else { high = middle }
        }
        return low < writes.count && writes[low] == write ? positions(at: low) : nil
    }
}

/// The history of a save's updates, gathered by ``SnapshotTable/prepare(_:)`` as it meets
/// them: it has the stored record in hand then, and comparing there saves a second look-up
/// and the copies it made (a twentieth of the memory store's update phase in a profile).
struct UpdateHistory {
    /// The updates compared as they came, in ascending write position.
    private(set) var compared = ChangedPositions()
    /// Updates left for ``SnapshotTable/history(of:updates:)``: of records written earlier in
    /// the same save, or held by location until the save reads them back.
    private(set) var deferred: [Int] = []

    /// Compares the update at `write` (above every one added) with the record it replaces.
    mutating func add(_ write: Int, old: [SnapshotValue], new: [SnapshotValue]) {
        compared.addUpdate(write)
        compared.addChanged(from: old, to: new)
    }

    /// Room for `count` updates of `properties` values each, so that a save's lists do not
    /// grow a doubling at a time.
    mutating func reserveCapacity(_ count: Int, properties: Int) {
        compared.reserveCapacity(count, positions: properties)
    }

    /// Leaves the update at `write` to be compared once the save is prepared.
    mutating func `defer`(_ write: Int) { deferred.append(write) }
}

/// What a prepared save changed, by position: computed before the save is applied, while
/// the table still holds the records it replaces.
struct SaveHistory: Sendable {
    /// Who saved.
    var writer = HistoryWriter.unknown
    /// For each update, by position in the save's writes: the positions of the values it changed.
    var updated = ChangedPositions()
    /// For each delete, by position in the save's deletes: the preserved values, by position.
    var tombstones: [Int: [(Int, SnapshotValue)]] = [:]

    /// The changes in `entry` form, with names from `schema`.
    func changes(of prepared: SnapshotTable.PreparedSave, schema: Schema) -> [HistoryEntry.Change] {
        var changes: [HistoryEntry.Change] = []
        changes.reserveCapacity(prepared.deletes.count + prepared.writes.count)
        var update = 0  // the next of `updated`'s updates: both are in write order
        // The last update's names: the next update of the same entity that changed the same
        // values shares them instead of making its own array (a save's updates mostly do).
        var last: (entity: String, positions: ArraySlice<Int>, names: [String])?
        // By runs of one entity and by position: iterating the writes built a tuple of
        // copies (the snapshot's among them) for every write.
        let writes = prepared.writes
        for (run, (start, entity)) in writes.runs.enumerated() {
            let end = run + 1 < writes.runs.count ? writes.runs[run + 1].start : writes.endIndex
            let found = schema.entitiesByName[entity]
            for position in start..<end {
                var change = HistoryEntry.Change(
                    kind: writes.isInsert(at: position) ? .insert : .update, entity: entity,
                    key: writes.keys[position])
                if update < updated.count, updated.writes[update] == position {
                    let positions = updated.positions(at: update)
                    if let last, last.entity == entity, last.positions.elementsEqual(positions) {
                        change.updated = last.names
                    } else if let found {
                        change.updated = positions.compactMap {
                            $0 < found.properties.count ? found.properties[$0].name : nil
                        }
                        last = (entity, positions, change.updated)
                    }
                    update += 1
                }
                changes.append(change)
            }
        }
        for (position, (entity, key)) in prepared.deletes.enumerated() {
            var change = HistoryEntry.Change(kind: .delete, entity: entity, key: key)
            if let values = tombstones[position], let found = schema.entitiesByName[entity] {
                for (index, value) in values where index < found.properties.count {
                    change.tombstone[found.properties[index].name] = value
                }
            }
            changes.append(change)
        }
        return changes
    }
}

extension SnapshotTable {
    /// The positions of each entity's `.preserveValueOnDeletion` attributes.
    static func preservedPositions(of entity: Schema.Entity) -> [Int] {
        entity.properties.indices.filter {
            entity.properties[$0].attribute?.options.contains(.preserveValueOnDeletion) == true
        }
    }

    /// What `prepared` changes, for the history: the values each update changes (compared
    /// with the record it replaces), and each delete's preserved values. Call before
    /// applying it. `updates` holds the updates `prepare` compared as it met them; the
    /// ones it deferred are compared here. A value the table does not hold (an external
    /// value of a record held by location, not read back) counts as changed.
    func history(of prepared: PreparedSave, updates: UpdateHistory) -> SaveHistory {
        var history = SaveHistory()
        var rows = RowLookup(self)
        if updates.deferred.isEmpty {
            history.updated = updates.compared
        } else {
            // A deferred update replaces a compared one at the same position: the record
            // was written twice, and its final values are what the save stores.
            let deferred = Set(updates.deferred)
            let order = (updates.compared.writes.filter { !deferred.contains($0) } + deferred).sorted()
            let writes = prepared.writes
            var merged = ChangedPositions()
            for position in order {
                if !deferred.contains(position), let changed = updates.compared[position] {
                    merged.addUpdate(position)
                    for index in changed { merged.addChanged(index) }
                    continue
                }
                guard !writes.isInsert(at: position) else { continue }
                merged.addUpdate(position)
                let new = writes.snapshots[position].values
                let entity = writes.entity(at: position)
                let key = writes.keys[position]
                guard let row = rows.row(entity, key), let old = replacedSnapshot(row, entity, key, prepared)?.values
                else {
                    for index in new.indices { merged.addChanged(index) }
                    continue
                }
                merged.addChanged(from: old, to: new)
            }
            history.updated = merged
        }
        var preserved: [String: [Int]] = [:]
        for (position, (entity, key)) in prepared.deletes.enumerated() {
            let positions =
                preserved[entity]
                ?? {
                    let found = schema.entitiesByName[entity].map(Self.preservedPositions) ?? []
                    preserved[entity] = found
                    return found
                }()
            guard !positions.isEmpty, let row = rows.row(entity, key),
                let old = replacedSnapshot(row, entity, key, prepared)
            else { continue }
            history.tombstones[position] = positions.compactMap { $0 < old.values.count ? ($0, old.values[$0]) : nil }
        }
        return history
    }
}

/// Turns history entries into SwiftData's transactions, and applies a descriptor.
enum HistoryReading {
    /// The transactions `entries` hold, in their order.
    static func transactions(_ entries: [HistoryEntry], storeIdentifier: String, schema: Schema)
        -> [DefaultHistoryTransaction]
    {
        return entries.map { entry in
            var changes: [HistoryChange] = []
            changes.reserveCapacity(entry.changes.count)
            for (index, change) in entry.changes.enumerated() {
                guard let entity = schema.entitiesByName[change.entity] else { continue }
                let id = PersistentIdentifier.permanent(
                    entityName: change.entity, storeIdentifier: storeIdentifier, primaryKey: change.key)
                changes.append(
                    Self.change(
                        entity.modelType, change, id: id, index: Int64(index), transaction: entry.transactionID,
                        entity: entity))
            }
            return DefaultHistoryTransaction(
                storeIdentifier: storeIdentifier, bundleIdentifier: entry.writer.program,
                processIdentifier: entry.writer.process == 0 ? "" : String(entry.writer.process),
                transactionIdentifier: entry.transactionID,
                token: DefaultHistoryToken(storeIdentifier: storeIdentifier, transaction: entry.transactionID),
                author: entry.author, changes: changes,
                timestamp: Date(timeIntervalSince1970: Double(entry.timestamp) / 1000))
        }
    }

    private static func change<M: PersistentModel>(
        _ type: M.Type, _ change: HistoryEntry.Change, id: PersistentIdentifier, index: Int64, transaction: Int64,
        entity: Schema.Entity
    ) -> HistoryChange {
        switch change.kind {
        case .insert:
            return .insert(
                DefaultHistoryInsert<M>(
                    changeIdentifier: index, changedPersistentIdentifier: id, transactionIdentifier: transaction))
        case .update:
            var keyPaths: [any PartialKeyPath<M> & Sendable] = []
            for name in change.updated {
                guard let partial = entity.property(named: name)?.keypath as? PartialKeyPath<M> else { continue }
                // A key path is immutable; `Sendable` is a marker protocol, so the composition
                // is the same reference, which no cast can check.
                keyPaths.append(unsafeBitCast(partial, to: (any PartialKeyPath<M> & Sendable).self))
            }
            return .update(
                DefaultHistoryUpdate<M>(
                    changeIdentifier: index, changedPersistentIdentifier: id, transactionIdentifier: transaction,
                    updatedAttributes: keyPaths))
        case .delete:
            return .delete(
                DefaultHistoryDelete<M>(
                    changeIdentifier: index, changedPersistentIdentifier: id, transactionIdentifier: transaction,
                    tombstone: HistoryTombstone<M>(preserved: change.tombstone)))
        }
    }

    /// The transactions `descriptor` selects, in its order, up to its limit.
    static func select<T>(_ transactions: [T], _ descriptor: HistoryDescriptor<T>) throws -> [T] {
        var selected = transactions
        if let predicate = descriptor.predicate {
            selected = try selected.filter { try predicate.evaluate($0) }
        }
        if !descriptor.sortBy.isEmpty {
            let sortBy = descriptor.sortBy
            selected = selected.enumerated().sorted { a, b in
                for sort in sortBy {
                    switch sort.compare(a.element, b.element) {
                    case .orderedAscending: return true
                    case .orderedDescending: return false
                    case .orderedSame: continue
                    }
                }
                return a.offset < b.offset
            }.map(\.element)
        }
        if let limit = descriptor.fetchLimit, limit > 0, selected.count > limit {
            selected = Array(selected.prefix(limit))
        }
        return selected
    }
}

/// A store that keeps history entries: ``HistoryProviding`` follows from it.
package protocol HistoryKeeping: DataStore {
    /// Every transaction kept, in the order saved.
    func historyEntries() throws -> [HistoryEntry]
    /// Forgets the transactions with these identifiers.
    func removeHistory(_ transactions: Set<Int64>) throws
}

extension HistoryKeeping {
    package func defaultTransactions() throws -> [DefaultHistoryTransaction] {
        HistoryReading.transactions(try historyEntries(), storeIdentifier: identifier, schema: schema)
    }

    package func fetchDefaultHistory(_ descriptor: HistoryDescriptor<DefaultHistoryTransaction>) throws
        -> [DefaultHistoryTransaction]
    {
        try HistoryReading.select(try defaultTransactions(), descriptor)
    }

    package func deleteDefaultHistory(_ descriptor: HistoryDescriptor<DefaultHistoryTransaction>) throws {
        var unlimited = descriptor
        unlimited.sortBy = []
        let doomed = try HistoryReading.select(try defaultTransactions(), unlimited)
        if descriptor.fetchLimit == nil || descriptor.fetchLimit == 0 {
            try removeHistory(Set(doomed.map(\.transactionIdentifier)))
        } else {
            try removeHistory(Set(try HistoryReading.select(doomed, descriptor).map(\.transactionIdentifier)))
        }
    }
}

extension SnapshotTable {
    /// Adds `prepared`, just applied, to ``history``, when the table keeps it.
    mutating func recordHistory(
        _ prepared: PreparedSave, author: String?, timestamp: Int64 = HistoryEntry.now(),
        writer: HistoryWriter = .current
    ) {
        guard history != nil, !prepared.isEmpty else { return }
        history?.append(
            HistoryEntry(
                transactionID: nextHistoryTransaction, timestamp: timestamp, author: author,
                changes: prepared.history.changes(of: prepared, schema: schema), writer: writer))
        nextHistoryTransaction += 1
    }
}

extension HistoryEntry {
    /// Milliseconds since 1970, now.
    static func now() -> Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded()) }
}

extension SnapshotValue {
    /// Whether `self` and `other` are stored as the same value: `==`, except that a NaN is
    /// the same as a NaN (an update that leaves a NaN attribute alone has not changed it),
    /// and doubles and dates otherwise compare by their bits (-0 and 0 differ).
    func isStored(as other: SnapshotValue) -> Bool {
        // Switching on `self` alone binds no payload but a double's or a date's, so a
        // string or data value is compared by `==` without being copied (the copies' retains
        // were most of the history's cost on an update save).
        switch self {
        case .double(let a):
            guard case .double(let b) = other else { return false }
            return a.bitPattern == b.bitPattern || (a.isNaN && b.isNaN)
        case .date(let a):
            guard case .date(let b) = other else { return false }
            return a.timeIntervalSinceReferenceDate.bitPattern == b.timeIntervalSinceReferenceDate.bitPattern
        case .array, .object: return isStoredDeeply(as: other)
        default: return self == other
        }
    }

    /// ``isStored(as:)`` for arrays and objects, element by element.
    private func isStoredDeeply(as other: SnapshotValue) -> Bool {
        switch (self, other) {
        case (.array(let a), .array(let b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.isStored(as: $1) }
        case (.object(let a), .object(let b)):
            return a.count == b.count && a.allSatisfy { key, value in b[key].map { value.isStored(as: $0) } ?? false }
        default: return false
        }
    }
}
