import Foundation

/// The log store's writer side behind one lock with a condition, for group commit.
///
/// A save appends its record and applies it to the table with the lock held, then waits
/// (``LogStore/waitUntilDurable(_:)``) for an `fdatasync` that covers it. The first waiter
/// to find no sync in flight performs one for everyone appended so far; the others wait on
/// the condition. State is read and written only with the lock held; `withLock` bodies
/// never wait.
final class LogWriter: @unchecked Sendable {
    private let condition = NSCondition()
    /// Only with the lock held.
    private var state: LogStore.WriterState

    init(_ state: LogStore.WriterState) {
        self.state = state
    }

    func withLock<R>(_ body: (inout LogStore.WriterState) throws -> R) rethrows -> R {
        condition.lock()
        defer { condition.unlock() }
        return try body(&state)
    }

    /// Like ``withLock(_:)``, but first waits until no sync is in flight, so that `body` may
    /// close or replace the file descriptor.
    func withLockWhenNotSyncing<R>(_ body: (inout LogStore.WriterState) throws -> R) rethrows -> R {
        condition.lock()
        defer { condition.unlock() }
        while state.syncing { condition.wait() }
        defer { condition.broadcast() }
        return try body(&state)
    }

    /// What a waiter should do next; decided with the lock held.
    enum Step {
        case done
        case failed(String)
        case sync(fd: Int32, target: UInt64)
    }

    /// Blocks until `decide` returns something other than `nil`, re-checking whenever the
    /// state changes. `decide` runs with the lock held.
    func wait(until decide: (inout LogStore.WriterState) -> Step?) -> Step {
        condition.lock()
        defer { condition.unlock() }
        while true {
            if let step = decide(&state) { return step }
            condition.wait()
        }
    }

    /// Runs `body` with the lock held and wakes every waiter afterwards.
    func update<R>(_ body: (inout LogStore.WriterState) -> R) -> R {
        condition.lock()
        defer {
            condition.broadcast()
            condition.unlock()
        }
        return body(&state)
    }
}

/// A save appended to the log but not yet covered by a sync (durability `.full` only).
struct LogPendingSave {
    /// The save's sequence number: one more than the save appended before it.
    var sequence: UInt64
    /// Where its record starts: the end of the log before it.
    var start: Int64
    /// The changes that take its deletes and updates back out of the table.
    var undo: SnapshotTable.PreparedSave
    /// The table's next primary key before it.
    var previousNextPrimaryKey: Int64
    /// The save's writes: the part of the undo that removes its inserts is made from them
    /// only if a sync fails, not for every save.
    var writes: SaveWrites = []
    /// Whether the table holds the writes by location (format version 4 or 5).
    var writesHeldByLocation = false

    /// The changes that take the whole save back out of the table.
    var completeUndo: SnapshotTable.PreparedSave {
        var undo = self.undo
        for (entity, key, snapshot, isInsert) in writes where isInsert {
            // What the undo replaces is what the save wrote.
            if writesHeldByLocation { undo.replaced[RecordKey(entity: entity, key: key)] = snapshot }
            // An insert's key is new and appears once in a save.
            undo.deletes.append((entity, key))
        }
        return undo
    }
}

extension SnapshotTable {
    /// The changes that undo `prepared`'s deletes and updates once it is applied: updated
    /// and deleted records written back as they were (their rows as the table holds them,
    /// by location or not). Removing its inserts is `LogPendingSave.completeUndo`'s part.
    /// Call before applying it, after ``loadReplaced(_:)``.
    func undo(of prepared: PreparedSave) -> PreparedSave {
        var undo = PreparedSave()
        var seen: Set<RecordKey> = []
        var rows: [StoredRow] = []
        var lookup = RowLookup(self)
        // Sized up front: growing the set and the dictionary rehashed them, a quarter of this.
        let replacing = prepared.deletes.count + prepared.writes.count(where: { !$0.isInsert })
        seen.reserveCapacity(replacing)
        rows.reserveCapacity(replacing)
        undo.writes.reserveCapacity(replacing)
        if prepared.storedRows != nil { undo.replaced.reserveCapacity(replacing) }
        func remember(_ entity: String, _ key: Int64) {
            let id = RecordKey(entity: entity, key: key)
            guard seen.insert(id).inserted else { return }
            if let row = lookup.row(entity, key) {
                let old: DefaultSnapshot
                switch row {
                case .snapshot(let snapshot): old = snapshot
                case .location:
                    // A row by location is in `replaced`, which loadReplaced filled.
                    guard let found = prepared.replaced[id] else { return }
                    old = found
                }
                undo.writes.append((entity, key, old, false))
                rows.append(row)
            } else {
                undo.deletes.append((entity, key))
            }
        }
        for (entity, key) in prepared.deletes { remember(entity, key) }
        for (entity, key, snapshot, isInsert) in prepared.writes where !isInsert {
            // What the undo replaces is what the save writes.
            if prepared.storedRows != nil { undo.replaced[RecordKey(entity: entity, key: key)] = snapshot }
            remember(entity, key)
        }
        undo.storedRows = .rows(rows)
        undo.nextPrimaryKey = nextPrimaryKey
        return undo
    }

    /// Takes applied saves back out, newest first.
    mutating func revert(_ saves: [LogPendingSave]) {
        for save in saves.reversed() {
            apply(save.completeUndo)
            nextPrimaryKey = save.previousNextPrimaryKey
        }
    }
}
