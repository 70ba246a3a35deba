import BTree
import Foundation
import IndexKey
import Synchronization

/// A hash table beside a one-column unique index's B+tree, from an encoded value to the
/// primary key of the record that holds it: a point fetch by a unique value reads one slot
/// here instead of descending the tree.
///
/// Stowage's own addition (SwiftData has no such layer), in the spirit of InnoDB's
/// adaptive hash index. At a million records the tree's descent is three binary searches
/// over nodes that are not in the caches: many cache misses a fetch, where a slot is one
/// (see `Benchmarks/RESULTS.md`, "Measurements behind the code").
///
/// A slot only ever gives a *candidate*. Whoever reads one must check that the record
/// stored under that primary key, in the version of the table being read, holds the value
/// looked up, and take the tree when it does not. That check is what makes the table
/// safe to share between versions of a ``SnapshotTable`` (a copy of a table shares its
/// hint), to leave stale after updates, deletes and reverted saves, and to lose entries.
/// The unique index holds at most one record with each value, so a record that holds
/// the value is the answer.
///
/// A slot is one word: a fingerprint from the hash's high bits over the primary key plus
/// one (0 is empty). While every primary key is below 2^23 a slot is 4 bytes (an 8-bit
/// fingerprint over 24 bits of key: 8 MiB at a million records); after that it is 8 bytes
/// (24 over 40). Linear probing; no deletes: an entry a record no longer matches stays
/// until the table fills and is built again from the tree. Slots are atomic words, so
/// readers of one version and a writer of another may touch the table at once; a torn slot
/// cannot happen.
final class UniqueKeyHint: @unchecked Sendable {
    // @unchecked: the slots are atomic words behind pointers that never change.

    /// The fewest entries for which a hint is kept: below it, a tree is two levels deep and
    /// its descent stays in the caches.
    static let minimumEntries = 1024
    /// The most slots a look-up or an insert reads before it gives up.
    static let maximumProbes = 64
    /// Primary keys at or above this (never handed out by Stowage, which counts from 1)
    /// are not entered; their look-ups take the tree.
    static let keyLimit: Int64 = 1 << 40 - 1
    /// A table is built with 4-byte slots when its largest primary key is below this, half
    /// of what they hold, so that it can take as many new records again before a rebuild.
    static let narrowBuildLimit: Int64 = 1 << 23

    private let narrow: UnsafeMutablePointer<Atomic<UInt32>>?
    private let wide: UnsafeMutablePointer<Atomic<UInt64>>?
    /// The number of slots, a power of two.
    let capacity: Int
    private let mask: Int
    /// Slots in use, stale ones included.
    private let filled = Atomic<Int>(0)
    /// Set when an insert found no free slot within ``maximumProbes``, or a primary key
    /// too large for 4-byte slots.
    private let overflowed = Atomic<Bool>(false)

    /// The slots' memory: a mapping of its own when the system gives one, so that freeing
    /// it hands its pages back at once instead of leaving a hole of megabytes in the heap
    /// (glibc serves such sizes from the heap once larger blocks have been freed).
    private let region: UnsafeMutableRawPointer
    private let regionBytes: Int
    private let isMapped: Bool

    /// An empty table with room for `entries` at a load of at most two thirds, with slots
    /// wide enough for primary keys up to `largestKey` and as many more.
    init(entries: Int, largestKey: Int64) {
        var capacity = 1024
        while capacity < entries + entries / 2 { capacity <<= 1 }
        self.capacity = capacity
        self.mask = capacity - 1
        let isNarrow = largestKey < Self.narrowBuildLimit
        regionBytes = capacity * (isNarrow ? 4 : 8)
        if let mapped = mmap(nil, regionBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
            mapped != UnsafeMutableRawPointer(bitPattern: -1)
        {
            (region, isMapped) = (mapped, true)
        } else {
            (region, isMapped) = (.allocate(byteCount: regionBytes, alignment: 8), false)
        }
        if isNarrow {
            let slots = region.bindMemory(to: Atomic<UInt32>.self, capacity: capacity)
            for i in 0..<capacity { (slots + i).initialize(to: Atomic(0)) }
            (narrow, wide) = (slots, nil)
        } else {
            let slots = region.bindMemory(to: Atomic<UInt64>.self, capacity: capacity)
            for i in 0..<capacity { (slots + i).initialize(to: Atomic(0)) }
            (narrow, wide) = (nil, slots)
        }
    }

    deinit {
        narrow?.deinitialize(count: capacity)
        wide?.deinitialize(count: capacity)
        if isMapped {
            munmap(region, regionBytes)
        } else {
            region.deallocate()
        }
    }

    /// The bytes of one slot: 4 or 8.
    var slotBytes: Int { narrow != nil ? 4 : 8 }

    /// A table holding every entry of `tree`, or `nil` when the tree is too small to need
    /// one.
    static func build(_ tree: BTree<IndexKey, Int64>) -> UniqueKeyHint? {
        guard tree.count >= minimumEntries else { return nil }
        var largest: Int64 = 0
        for (_, primaryKey) in tree { largest = Swift.max(largest, primaryKey) }
        let hint = UniqueKeyHint(entries: tree.count, largestKey: largest)
        for (key, primaryKey) in tree { hint.insert(key, primaryKey: primaryKey) }
        return hint
    }

    /// Whether the table is too full (or was, for one insert) to keep probes short, and
    /// should be built again from the tree.
    var needsRebuild: Bool {
        filled.load(ordering: .relaxed) > capacity - capacity / 4 || overflowed.load(ordering: .relaxed)
    }

    /// Calls `accept` with each primary key the table holds for `key`, in the order they
    /// were entered, until it returns a result; `nil` when none did. Each key is only a
    /// candidate, which `accept` must check.
    @inline(__always)
    func firstMatch<Result>(for key: IndexKey, _ accept: (Int64) -> Result?) -> Result? {
        guard let hash = key.inlineHash else { return nil }
        if let narrow { return find(keyBits: 24, hash: hash, accept) { narrow[$0].load(ordering: .relaxed) } }
        if let wide { return find(keyBits: 40, hash: hash, accept) { wide[$0].load(ordering: .relaxed) } }
        return nil
    }

    /// Enters `key` for the record `primaryKey`, after the keys already entered for it: a
    /// slot is never overwritten, since a slot with the same fingerprint may be another
    /// value's. Entries the record no longer matches stay until the table is built again.
    func insert(_ key: IndexKey, primaryKey: Int64) {
        guard primaryKey >= 0, primaryKey < Self.keyLimit, let hash = key.inlineHash else { return }
        if let narrow {
            enter(keyBits: 24, hash: hash, primaryKey: primaryKey) {
                narrow[$0].load(ordering: .relaxed)
            } store: {
                narrow[$0].store($1, ordering: .relaxed)
            }
        } else if let wide {
            enter(keyBits: 40, hash: hash, primaryKey: primaryKey) {
                wide[$0].load(ordering: .relaxed)
            } store: {
                wide[$0].store($1, ordering: .relaxed)
            }
        }
    }

    /// The slot's fingerprint bits for `hash`: its top bits, above the key's.
    @inline(__always)
    private static func fingerprint<Word: FixedWidthInteger & UnsignedInteger>(
        _ hash: UInt64, keyBits: Int, as: Word.Type
    ) -> Word {
        Word(truncatingIfNeeded: hash >> (64 - (Word.bitWidth - keyBits))) << keyBits
    }

    /// The probe of ``firstMatch(for:_:)`` over slots of either width, read by `load`.
    /// (Synchronization's atomics offer no load and store generic over the width.)
    @inline(__always)
    private func find<Word: FixedWidthInteger & UnsignedInteger, Result>(
        keyBits: Int, hash: UInt64, _ accept: (Int64) -> Result?, load: (Int) -> Word
    ) -> Result? {
        let keyMask: Word = (1 << keyBits) - 1
        let fingerprint = Self.fingerprint(hash, keyBits: keyBits, as: Word.self)
        var position = Int(truncatingIfNeeded: hash) & mask
        for _ in 0..<Self.maximumProbes {
            let slot = load(position)
            if slot == 0 { return nil }
            if slot & ~keyMask == fingerprint, let result = accept(Int64(slot & keyMask) - 1) { return result }
            position = (position + 1) & mask
        }
        return nil
    }

    /// The probe of ``insert(_:primaryKey:)`` over slots of either width.
    @inline(__always)
    private func enter<Word: FixedWidthInteger & UnsignedInteger>(
        keyBits: Int, hash: UInt64, primaryKey: Int64, load: (Int) -> Word, store: (Int, Word) -> Void
    ) {
        let keyMask: Word = (1 << keyBits) - 1
        guard primaryKey < Int64(keyMask) else {
            // Only 4-byte slots get here (`keyLimit` keeps 8-byte ones within theirs): the
            // table is built again with wider slots.
            overflowed.store(true, ordering: .relaxed)
            return
        }
        let fingerprint = Self.fingerprint(hash, keyBits: keyBits, as: Word.self)
        let entry = fingerprint | Word(primaryKey + 1)
        var position = Int(truncatingIfNeeded: hash) & mask
        for _ in 0..<Self.maximumProbes {
            let slot = load(position)
            if slot == 0 {
                store(position, entry)
                filled.add(1, ordering: .relaxed)
                return
            }
            if slot == entry { return }
            position = (position + 1) & mask
        }
        overflowed.store(true, ordering: .relaxed)
    }
}

extension EntityIndex {
    /// Whether this index keeps a ``UniqueKeyHint``: a one-column unique index, the shape
    /// a point fetch by a unique value plans on.
    var keepsHint: Bool { isUnique && columns.count == 1 }

    /// Builds the hint again from the tree when it is missing and the tree has grown big
    /// enough, when it has filled up, or when the tree has shrunk to an eighth of its
    /// slots (it is then dropped, or built smaller). Cheap when there is nothing to do.
    mutating func refreshHint() {
        guard keepsHint else { return }
        if let hint {
            guard
                hint.needsRebuild || tree.count < UniqueKeyHint.minimumEntries / 2 || tree.count < hint.capacity / 8
            else { return }
        } else if tree.count < UniqueKeyHint.minimumEntries {
            return
        }
        hint = UniqueKeyHint.build(tree)
    }
}
