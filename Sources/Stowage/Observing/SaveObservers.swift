import Foundation
import Synchronization

// MARK: - Telling observers of saves
//
// ``ResultsObserver`` and ``HistoryObserver`` follow every save of their container, by any
// of its contexts, on any thread or actor. A save ends by handing a ``SaveEvent`` to the
// container's ``SaveObserverDirectory``, which passes it to each live observer on the
// saving thread, before `save()` returns. An observer keeps its state under its own lock,
// so it may be updated from any thread; a container with no observers pays one relaxed
// atomic load per save.

/// What one save changed: the records' identifiers, and who saved.
struct SaveEvent: Sendable {
    /// The permanent identifiers of the records the save inserted.
    var inserted: [PersistentIdentifier] = []
    /// The records it updated, upserts included.
    var updated: [PersistentIdentifier] = []
    /// The records it deleted, cascades and deletes by predicate included.
    var deleted: [PersistentIdentifier] = []
    /// The saving context's ``ModelContext/author``.
    var author: String?
    /// Whether every record may have changed (the container's stores were erased): an
    /// observer starts again from what the stores hold.
    var resetsAll = false

    /// Every identifier the save touched.
    var all: [PersistentIdentifier] { inserted + updated + deleted }
    var isEmpty: Bool { inserted.isEmpty && updated.isEmpty && deleted.isEmpty && !resetsAll }
}

/// Something a save is handed to, on the saving thread.
protocol SaveObserving: AnyObject, Sendable {
    func containerDidSave(_ event: SaveEvent)
}

/// The live observers of one container.
final class SaveObserverDirectory: Sendable {
    private struct Entry: @unchecked Sendable {
        // `@unchecked`: a weak reference to a `Sendable` object, read and written under
        // the directory's lock only.
        weak var observer: (any SaveObserving)?
        let id: ObjectIdentifier
    }
    private let entries = PosixMutex<[Entry]>([])
    private let count = Atomic<Int>(0)

    func add(_ observer: any SaveObserving) {
        entries.withLock { $0.append(Entry(observer: observer, id: ObjectIdentifier(observer))) }
        count.add(1, ordering: .relaxed)
    }

    func remove(_ id: ObjectIdentifier) {
        let removed = entries.withLock { list in
            let before = list.count
            list.removeAll { $0.id == id }
            return before - list.count
        }
        if removed > 0 { count.subtract(removed, ordering: .relaxed) }
    }

    /// Whether any observer is live: a save looks at this alone when none is.
    var isEmpty: Bool { count.load(ordering: .relaxed) == 0 }

    /// Hands `event` to every live observer, outside the directory's lock (an observer's
    /// update may tell code that saves again).
    func post(_ event: SaveEvent) {
        guard !isEmpty, !event.isEmpty else { return }
        let live = entries.withLock { list in list.compactMap(\.observer) }
        for observer in live { observer.containerDidSave(event) }
    }
}

/// Applies events one batch at a time, on whichever thread posts while no other is
/// applying: a save made by code an update tells (re-entrant), or by another thread at the
/// same moment, queues its event for the thread already applying, instead of waiting for
/// it (which could deadlock).
final class SaveEventQueue: Sendable {
    private let queue = PosixMutex<[SaveEvent]>([])
    private let applying = Atomic<Bool>(false)

    /// Queues `event`, then applies every queued event with `apply` unless another call is
    /// already doing so.
    func post(_ event: SaveEvent, apply: ([SaveEvent]) -> Void) {
        queue.withLock { $0.append(event) }
        while true {
            guard applying.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged else {
                return
            }
            while true {
                let batch = queue.withLock { list in
                    let taken = list
                    list = []
                    return taken
                }
                if batch.isEmpty { break }
                apply(batch)
            }
            applying.store(false, ordering: .releasing)
            // An event queued after the last look, while this call still held the flag,
            // is this call's to apply.
            if queue.withLock({ $0.isEmpty }) { return }
        }
    }
}

/// A value under a lock, for state that is not `Sendable` but that more than one thread
/// reaches, each only through ``withLock(_:)``.
final class LockedState<Value>: @unchecked Sendable {
    // `@unchecked`: `value` is read and written under `lock` only.
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
