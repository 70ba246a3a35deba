import Foundation

/// Blocks by offset, bounded by their cost, evicted by a clock (second chance) that
/// approximates least recently used first out.
///
/// A use sets its block's mark, in the node the read reads anyway. Eviction sweeps the nodes
/// from where it last stopped: a marked block loses its mark and stays, the first unmarked
/// one goes. A block put in starts unmarked, behind the hand, so a block read once goes
/// before a block read again since it came in. A list kept in order of use moved the block
/// to the front on every read, and unlinking it wrote to its two neighbours, which a random
/// read finds cold at a million rows: two more cache misses a point fetch.
struct BlockCache {
    private struct Node {
        var offset: Int64
        var block: CachedBlock
        var cost: Int
        /// Used since the hand last passed it; false for a free node.
        var marked: Bool
        /// Whether it holds a block (a free node, listed in `free`, has offset -1).
        var live: Bool { offset >= 0 }
    }

    let capacity: Int
    private(set) var used = 0
    var misses = 0
    /// The bytes read ahead of a scan (not counted in `used`).
    var readAhead = ReadAhead()
    /// The mappings of the file that blocks are read through, when the reader maps it.
    var mappings = LogMappings()
    /// Reads that asked for part of a record once blocks were kept as bytes.
    var partialReads = 0
    /// Whether a block was ever evicted, or refused for being larger than the whole cache:
    /// then decoded writes are no longer kept.
    private(set) var hasEvicted = false
    /// The bytes in the file of the cached blocks read through a mapping, which the
    /// capacity does not count (they are the page cache's), but which decide, with what it
    /// does count, whether the cache holds less than the records read (``holdsLess``).
    private(set) var mappedBytes = 0
    /// Whether the cache holds less than the records being read: it has evicted a block, or
    /// the blocks it maps and what it holds come to more than its capacity (as the blocks'
    /// bytes would if it held them). From then on it keeps no decoded writes, and a read
    /// that asks for some of a record's values decodes only those.
    var holdsLess: Bool { hasEvicted || used + mappedBytes > capacity }
    private var nodes: [Node] = []
    private var free: [Int] = []
    /// The block a scan read last, once the cache has evicted: kept beside the cached
    /// blocks, not among them (see ``keepScanned(_:_:)``).
    private var scanned: (offset: Int64, block: CachedBlock)?
    /// Each cached block by its offset, hashed with one mix instead of `Hasher`: a read that
    /// misses the most recent block looks its block up here.
    private var byOffset: [StoreNumber: Int] = [:]
    /// The node used last, or -1.
    private var last = -1
    /// Where the next sweep for a block to evict starts.
    private var hand = 0

    init(capacity: Int) { self.capacity = max(0, capacity) }

    var count: Int { byOffset.count }

    /// The decoded write at `slot` of the cached block at `offset`, which counts as a use of
    /// the block as ``get(_:)`` does; `nil` when the block is not cached or that write is not
    /// decoded. It copies out the one snapshot, not the block (whose every array a copy would
    /// retain and release again for every read the cache answers).
    mutating func decodedWrite(_ offset: Int64, slot: Int) -> DefaultSnapshot? {
        if let i = use(offset) {
            guard slot < nodes[i].block.decoded.count else { return nil }
            return nodes[i].block.decoded[slot]
        }
        guard scanned?.offset == offset, let decoded = scanned?.block.decoded, slot < decoded.count else { return nil }
        return decoded[slot]
    }

    /// What the cache holds for the write at `slot` of the block at `offset`, as one use of
    /// the block: the write decoded, the write's stored bytes in a mapping of the file, or
    /// the block to decode it from. A mapped write is handed out without a copy of its block
    /// (whose arrays a copy retains and releases again).
    mutating func holding(_ offset: Int64, slot: Int) -> Holding {
        if let i = use(offset) {
            if slot < nodes[i].block.decoded.count, let decoded = nodes[i].block.decoded[slot] {
                return .decoded(decoded)
            }
            if let write = nodes[i].block.mappedWrite(slot) { return .mapped(write.bytes, packedLength: write.packed) }
            return .block(nodes[i].block)
        }
        guard scanned?.offset == offset, let block = scanned?.block else { return .none }
        if slot < block.decoded.count, let decoded = block.decoded[slot] { return .decoded(decoded) }
        if let write = block.mappedWrite(slot) { return .mapped(write.bytes, packedLength: write.packed) }
        return .block(block)
    }

    /// See ``holding(_:slot:)``.
    enum Holding {
        case decoded(DefaultSnapshot)
        /// A version 5 write as stored, and its uncompressed length if it is compressed (else 0).
        case mapped(UnsafeRawBufferPointer, packedLength: Int)
        case block(CachedBlock)
        case none
    }

    /// The cached block at `offset` when it is read through a mapping, as a use of it.
    mutating func mappedBlock(_ offset: Int64) -> CachedBlock? {
        guard let i = use(offset), nodes[i].block.mapped != nil else { return nil }
        return nodes[i].block
    }

    mutating func get(_ offset: Int64) -> CachedBlock? {
        if let i = use(offset) { return nodes[i].block }
        if scanned?.offset == offset, let block = scanned?.block { return block }
        return nil
    }

    /// Where the block at `offset` is among the cached blocks, marked as used; `nil` when it
    /// is not one of them (the scanned block never is: ``put(_:_:)`` drops it when its offset
    /// is cached). Reads in key order stay in one block for a while: the most recent one
    /// needs no look-up.
    private mutating func use(_ offset: Int64) -> Int? {
        if last >= 0, nodes[last].offset == offset {
            nodes[last].marked = true
            return last
        }
        guard let i = byOffset[StoreNumber(offset)] else { return nil }
        nodes[i].marked = true
        last = i
        return i
    }

    /// Caches a block, unmarked, then evicts until within the capacity, never the block
    /// just put. A block larger than the whole capacity is not kept.
    mutating func put(_ offset: Int64, _ block: CachedBlock) {
        if scanned?.offset == offset { scanned = nil }
        if let i = byOffset.removeValue(forKey: StoreNumber(offset)) { remove(i) }
        let cost = block.cost
        guard cost <= capacity else {
            hasEvicted = true
            return
        }
        let node = Node(offset: offset, block: block, cost: cost, marked: false)
        let i: Int
        if let reused = free.popLast() {
            nodes[reused] = node
            i = reused
        } else {
            nodes.append(node)
            i = nodes.count - 1
        }
        byOffset[StoreNumber(offset)] = i
        used += cost
        mappedBytes += block.mapped?.buffer.count ?? 0
        last = i
        evict(sparing: i)
    }

    /// Keeps a block a scan read from bytes read ahead, once the cache has evicted, as the
    /// one scanned block instead of among the cached blocks: a scan of more records than
    /// the cache holds would only push out the blocks other reads use (as a large
    /// sequential scan uses a ring of buffers of its own in PostgreSQL), and put a block in
    /// and evict another for each block it reads. The scanned block is held outside the
    /// capacity, like the bytes read ahead.
    mutating func keepScanned(_ offset: Int64, _ block: CachedBlock) { scanned = (offset, block) }

    /// The offsets of the cached blocks, and of the scanned block: for tests.
    var offsets: (cached: Set<Int64>, scanned: Int64?) { (Set(byOffset.keys.map(\.value)), scanned?.offset) }

    /// Keeps a write a read decoded, if its block is still cached and the cache has never
    /// had to evict a block.
    ///
    /// A cache that has evicted holds less than the records being read: from then on it
    /// keeps their blocks as bytes only, three times denser than their decoded writes, and
    /// each read decodes its write again. Keeping them decoded too made reads past the
    /// capacity evict decoded writes read long before, cold, and freeing those was a large
    /// part of a scan's time; bytes alone may hold every record a scan reads, and then no
    /// block is read from the file again (see `Benchmarks/RESULTS.md`, "Measurements behind
    /// the code"). A decoded write is never the cause of an eviction either.
    mutating func setDecoded(_ offset: Int64, slot: Int, _ snapshot: DefaultSnapshot, cost: Int) {
        guard !holdsLess, used + mappedBytes + cost <= capacity, let i = byOffset[StoreNumber(offset)],
            slot < nodes[i].block.decoded.count, nodes[i].block.decoded[slot] == nil
        else { return }
        nodes[i].block.decoded[slot] = snapshot
        nodes[i].cost += cost
        used += cost
    }

    /// Sweeps from the hand, clearing marks, and evicts unmarked blocks until within the
    /// capacity. The block `sparing` (the one just put, which alone fits) is passed over; a
    /// sweep clears every other mark in one turn, so it ends within two.
    private mutating func evict(sparing: Int) {
        var steps = 0
        while used > capacity, steps <= 2 * nodes.count {
            steps += 1
            if hand >= nodes.count { hand = 0 }
            let i = hand
            hand += 1
            guard nodes[i].live, i != sparing else { continue }
            if nodes[i].marked {
                nodes[i].marked = false
                continue
            }
            hasEvicted = true
            byOffset[StoreNumber(nodes[i].offset)] = nil
            remove(i)
        }
    }

    private mutating func remove(_ i: Int) {
        used -= nodes[i].cost
        mappedBytes -= nodes[i].block.mapped?.buffer.count ?? 0
        nodes[i] = Node(
            offset: -1, block: CachedBlock(contents: [], slots: [], decoded: []), cost: 0, marked: false)
        if last == i { last = -1 }
        free.append(i)
    }
}
