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
///
/// What takes it back out of the table is made from these only if a sync fails
/// (``completeUndo``), not up front for every save, which made every update pay for an
/// undo that is almost never used (see `Benchmarks/RESULTS.md`, "Measurements behind the
/// code").
struct LogPendingSave {
    /// The save's sequence number: one more than the save appended before it.
    var sequence: UInt64
    /// Where its record starts: the end of the log before it.
    var start: Int64
    /// The table's next primary key before it.
    var previousNextPrimaryKey: Int64
    /// The save's deletes.
    var deletes: [(entity: String, key: Int64)] = []
    /// The save's writes.
    var writes: SaveWrites = []
    /// The row each delete, then each write that is not an insert, replaced, in that
    /// order (``SnapshotTable/apply(_:replacedRows:)``): `nil` where there was none.
    var replacedRows: [StoredRow?] = []
    /// The stored snapshots of the replaced records the table held by location
    /// (``SnapshotTable/loadReplaced(_:)``).
    var replaced: [RecordKey: DefaultSnapshot] = [:]
    /// Whether the table holds the writes by location (format version 4 or 5).
    var writesHeldByLocation = false

    /// The changes that take the whole save back out of the table: updated and deleted
    /// records written back as they were (their rows as the table held them, by location
    /// or not), and inserted ones removed.
    var completeUndo: SnapshotTable.PreparedSave {
        var undo = SnapshotTable.PreparedSave()
        var seen: Set<RecordKey> = []
        var rows: [StoredRow] = []
        var next = replacedRows.makeIterator()
        // The first change to a record saw it as it was before the save.
        func remember(_ entity: String, _ key: Int64, _ row: StoredRow?) {
            let id = RecordKey(entity: entity, key: key)
            guard seen.insert(id).inserted else { return }
            if let row {
                let old: DefaultSnapshot
                switch row {
                case .snapshot(let snapshot): old = snapshot
                case .location:
                    // A row by location is in `replaced`, which loadReplaced filled.
                    guard let found = replaced[id] else { return }
                    old = found
                }
                undo.writes.append((entity, key, old, false))
                rows.append(row)
            } else {
                undo.deletes.append((entity, key))
            }
        }
        for (entity, key) in deletes { remember(entity, key, next.next() ?? nil) }
        for (entity, key, snapshot, isInsert) in writes where !isInsert {
            // What the undo replaces is what the save wrote.
            if writesHeldByLocation { undo.replaced[RecordKey(entity: entity, key: key)] = snapshot }
            remember(entity, key, next.next() ?? nil)
        }
        undo.storedRows = .rows(rows)
        undo.nextPrimaryKey = previousNextPrimaryKey
        for (entity, key, snapshot, isInsert) in writes where isInsert {
            if writesHeldByLocation { undo.replaced[RecordKey(entity: entity, key: key)] = snapshot }
            // An insert's key is new and appears once in a save.
            undo.deletes.append((entity, key))
        }
        return undo
    }
}

extension LogPendingSave {
    /// Takes applied saves back out of `table`, newest first.
    static func revert(_ saves: [LogPendingSave], in table: inout SnapshotTable) {
        for save in saves.reversed() {
            table.apply(save.completeUndo)
            table.nextPrimaryKey = save.previousNextPrimaryKey
        }
    }
}
