import Foundation
import Synchronization

/// Reads a version 4 or 5 log's records back by location (`Formats/log.md`, "Reading records"):
/// one block per miss, with `pread`, its checksum checked (and in version 4 decompressed),
/// then kept in a least-recently-used cache bounded by what its blocks are taken to cost
/// (their bytes, and an estimate for each decoded write). A read decodes the one write it
/// asks for from the cached bytes (in version 5 decompressing that write alone, if it is
/// compressed); the blocks a save wrote come with every write decoded and no bytes.
///
/// It owns a duplicate of the log's descriptor, so a table that still refers to it keeps
/// reading the file it was made for after a compaction renames a new one over the path.
final class LogRecordReader: SnapshotSource, @unchecked Sendable {
    let fs: any StoreFileSystem
    let fd: Int32
    let path: String
    let map: LogEntityMap
    let externalFiles: LogExternalFiles
    /// Internal, not private, so that tests can look at and alter what it holds.
    let cache: Mutex<BlockCache>

    init(fs: any StoreFileSystem, fd: Int32, path: String, map: LogEntityMap, capacity: Int) {
        self.fs = fs
        self.fd = fd
        self.path = path
        self.map = map
        self.externalFiles = LogExternalFiles(
            fs: fs, logPath: path, parent: URL(fileURLWithPath: path).deletingLastPathComponent().path)
        self.cache = Mutex(BlockCache(capacity: capacity))
    }

    deinit { fs.close(fd) }

    /// Blocks read from the file since the reader was made (cache misses).
    var blockReads: Int { cache.withLock { $0.misses } }
    /// The uncompressed bytes of the blocks cached now, and their number.
    var cached: (bytes: Int, blocks: Int) { cache.withLock { ($0.used, $0.count) } }
    /// Reads that decoded only some of a record's values, since the reader was made.
    var partialReads: Int { cache.withLock { $0.partialReads } }
    /// The bytes LZ4 produced for reads since the reader was made: whole blocks in version
    /// 4, single writes in version 5.
    var decompressedBytes: Int { decompressed.load(ordering: .relaxed) }
    /// Counted without the cache's lock, which a read of a compressed write has let go of.
    private let decompressed = Atomic<Int>(0)

    func snapshot(entity: String, key: Int64, at location: RecordLocation) throws -> DefaultSnapshot {
        try read(entity: entity, key: key, at: location, externalValues: true).snapshot
    }

    func snapshotWithoutExternalValues(entity: String, key: Int64, at location: RecordLocation) throws
        -> DefaultSnapshot
    {
        try read(entity: entity, key: key, at: location, externalValues: false).snapshot
    }

    /// The records the cache holds decoded, each checked as ``read(entity:key:at:externalValues:columns:)``
    /// checks one (a record that fails is left to that read, which says why). The lock is
    /// taken once for up to `cachedRunLength` records: a lock held for a whole batch of any
    /// size would keep other readers waiting as long.
    func cachedSnapshots(
        entity: String, keys: [Int64], at locations: [RecordLocation], positions: [Int],
        into result: inout [DefaultSnapshot?]
    ) {
        var start = 0
        while start < locations.count {
            let end = Swift.min(start + Self.cachedRunLength, locations.count)
            cache.withLock { cache in
                for i in start..<end {
                    let location = locations[i]
                    if let decoded = cache.decodedWrite(location.blockOffset, slot: location.slot),
                        Self.holds(decoded, entity: entity, key: keys[i])
                    {
                        result[positions[i]] = decoded
                    }
                }
            }
            start = end
        }
    }

    /// Whether `snapshot` is record `key` of `entity`: what a slot must hold for the key
    /// directory to be right about it.
    @inline(__always)
    static func holds(_ snapshot: DefaultSnapshot, entity: String, key: Int64) -> Bool {
        snapshot.persistentIdentifier.primaryKey == key && snapshot.persistentIdentifier.entityName == entity
    }

    /// The most records ``cachedSnapshots(entity:keys:at:positions:into:)`` reads under one
    /// hold of the lock.
    static let cachedRunLength = 512

    /// Decodes only the values at `columns` when the cache has had to evict, and so keeps
    /// blocks as bytes: a full decode would not be kept either, and skipping the values a
    /// predicate does not read (a note's string, say) is cheaper than making and freeing
    /// them. While the cache still holds every decoded record it decodes the whole record,
    /// once, and keeps it.
    func snapshot(entity: String, key: Int64, at location: RecordLocation, columns: SnapshotColumns) throws
        -> (snapshot: DefaultSnapshot, isWhole: Bool)
    {
        try read(entity: entity, key: key, at: location, externalValues: true, columns: columns)
    }

    private func read(
        entity: String, key: Int64, at location: RecordLocation, externalValues: Bool,
        columns: SnapshotColumns = .all
    ) throws -> (snapshot: DefaultSnapshot, isWhole: Bool) {
        /// A write the cache holds decoded, or the block to decode it from.
        enum Found {
            case decoded(DefaultSnapshot)
            case block(CachedBlock)
        }
        let (found, partial) = try cache.withLock { cache -> (Found, Bool) in
            let partial = !columns.isAll && cache.hasEvicted
            if partial { cache.partialReads += 1 }
            if let decoded = cache.decodedWrite(location.blockOffset, slot: location.slot) {
                return (.decoded(decoded), partial)
            }
            if let found = cache.get(location.blockOffset) { return (.block(found), partial) }
            let (read, scanned) = try readBlock(at: location.blockOffset, readAhead: &cache.readAhead)
            cache.misses += 1
            if read.decompressedLength > 0 { decompressed.add(read.decompressedLength, ordering: .relaxed) }
            if scanned && cache.hasEvicted {
                cache.keepScanned(location.blockOffset, read)
            } else {
                cache.put(location.blockOffset, read)
            }
            return (.block(read), partial)
        }
        /// A slot must hold the record the key directory says it does.
        func check(_ snapshot: DefaultSnapshot) throws {
            guard Self.holds(snapshot, entity: entity, key: key) else {
                throw damaged(location.blockOffset, "slot \(location.slot) holds another record than \(entity) \(key)")
            }
        }
        let block: CachedBlock
        switch found {
        case .decoded(let decoded):
            try check(decoded)
            return (decoded, true)
        case .block(let found):
            block = found
        }
        // Decoding one write needs no lock: the block's bytes are a value.
        guard location.slot < block.decoded.count else {
            throw damaged(location.blockOffset, "it has no slot \(location.slot)")
        }
        if let decoded = block.decoded[location.slot] {
            try check(decoded)
            return (decoded, true)
        }
        // A block without its bytes comes with every write decoded (and without where each
        // starts); should one ever be missing, the block is read again.
        var source = block
        if !block.hasContents {
            source = try readBlockAlone(at: location.blockOffset).block
            cache.withLock {
                $0.misses += 1
                $0.readAhead.fileReads += 2
            }
            if source.decompressedLength > 0 { decompressed.add(source.decompressedLength, ordering: .relaxed) }
            guard location.slot < source.slots.count else {
                throw damaged(location.blockOffset, "it has no slot \(location.slot)")
            }
        }
        var snapshot: DefaultSnapshot
        var references: [LogExternalReference] = []
        do {
            var r: LogByteReader
            var end = Int(source.slots[location.slot]) + source.length(ofSlot: location.slot)
            let packed = source.packedLengths.isEmpty ? 0 : Int(source.packedLengths[location.slot])
            if packed > 0 {
                // Version 5: this write alone is decompressed, and it must be all of its bytes.
                let start = Int(source.slots[location.slot])
                guard
                    let bytes = source.contents[start..<end].withUnsafeBytes({
                        LZ4Block.decompress($0, length: packed)
                    })
                else { throw LogDecodeError("its LZ4 bytes do not decompress") }
                decompressed.add(bytes.count, ordering: .relaxed)
                r = LogByteReader(bytes)
                end = bytes.count
            } else {
                r = LogByteReader(source.contents, position: Int(source.slots[location.slot]))
            }
            guard try r.u8() <= 1 else { throw LogDecodeError("bad write kind") }
            snapshot = try LogCodec.decodeSnapshot(
                &r, map: map, externalReferences: &references, columns: partial ? columns : .all)
            guard r.position == end else {
                throw LogDecodeError("the write ends at byte \(r.position), not where its bytes do (\(end))")
            }
        } catch {
            throw damaged(location.blockOffset, "slot \(location.slot) does not decode: \(error)")
        }
        try check(snapshot)
        // Without its external values the snapshot is not the record: it is not cached.
        if !externalValues, !references.isEmpty { return (snapshot, !partial) }
        var externalBytes = 0
        for reference in references where reference.property < snapshot.values.count {
            let bytes = try externalFiles.read(
                reference, entity: entity, entityIndex: map.indexByName[entity] ?? -1, key: key)
            externalBytes += bytes.count
            snapshot.values[reference.property] = .data(bytes)
        }
        // Part of a record is never kept.
        if partial { return (snapshot, false) }
        let decoded = snapshot
        let cost = CachedBlock.decodedCost(source.length(ofSlot: location.slot)) + externalBytes
        cache.withLock { $0.setDecoded(location.blockOffset, slot: location.slot, decoded, cost: cost) }
        return (snapshot, true)
    }

    /// Puts blocks a save just wrote into the cache, and drops the bytes read ahead: they
    /// may have been read while the save was writing.
    func remember(_ blocks: [(offset: Int64, block: CachedBlock)]) {
        cache.withLock { cache in
            cache.readAhead.drop()
            for (offset, block) in blocks { cache.put(offset, block) }
        }
    }

    /// File reads made since the reader was made (one per block read on its own, two when
    /// its header is read first, one per stretch read ahead).
    var fileReads: Int { cache.withLock { $0.readAhead.fileReads } }

    private func damaged(_ offset: Int64, _ reason: String) -> DataStoreError {
        DataStoreError(
            .corruptStore,
            "\(path): the block at offset \(offset) cannot be read back: \(reason); the read fails, and the "
                + "next open's recovery applies")
    }

    /// Reads and checks the block at `offset`: its uncompressed bytes and where each write
    /// starts in them.
    ///
    /// A block read just after the one read before it (a scan past the cache, in file order)
    /// comes from a stretch of the file read ahead in one `pread` (``ReadAhead``); any other
    /// block is read on its own. Bytes read ahead are only a faster way to the same bytes: a
    /// block that does not check out from them is read from the file again, and only what
    /// that read finds counts. `scanned` tells whether the block came from bytes read ahead.
    private func readBlock(at offset: Int64, readAhead: inout ReadAhead) throws
        -> (block: CachedBlock, scanned: Bool)
    {
        let version = map.formatVersion
        let parse = { (bytes: ArraySlice<UInt8>) in try Self.parseBlock(bytes, version: version) }
        if let block = readAhead.take(at: offset, parse: parse) { return (block, true) }
        if readAhead.follows(offset) {
            let available = try fs.size(fd) - offset
            let count = Int(min(Int64(ReadAhead.stretch), max(0, available)))
            if count > LogBlocks.headerSize {
                readAhead.fill(at: offset, try fs.read(fd, count: count, at: offset))
                if let block = readAhead.take(at: offset, parse: parse) { return (block, true) }
            }
        }
        let (block, end) = try readBlockAlone(at: offset)
        readAhead.fileReads += 2
        readAhead.noteRead(endingAt: end)
        return (block, false)
    }

    /// Checks a block from `bytes`, which begin with its header and hold at least
    /// `LogBlocks.headerSize` bytes: the block and its length with its header, or `nil` when
    /// `bytes` end before it does. A version 4 block is decompressed whole, and where each
    /// write starts found; a version 5 block is kept as stored after its table, each write
    /// left to decompress (if it is compressed) when it is read.
    private static func parseBlock(_ bytes: ArraySlice<UInt8>, version: LogFormatVersion) throws
        -> (block: CachedBlock, length: Int)?
    {
        let start = bytes.startIndex
        let headerBytes = bytes[start..<start + LogBlocks.headerSize]
        let header = try LogBlocks.header(headerBytes, available: LogFormat.maximumPayload, version: version)
        let length = LogBlocks.headerSize + header.storedLength
        guard bytes.count >= length else { return nil }
        let stored = bytes[start + LogBlocks.headerSize..<start + length]
        if header.perWrite {
            try LogBlocks.checkChecksum(header, headerBytes: headerBytes, stored: stored)
            let table = try LogBlocks.table(header, stored: stored)
            return (
                CachedBlock(
                    contents: Array(stored.dropFirst(table.end)), slots: table.starts, decoded: nil,
                    packedLengths: table.lengths), length
            )
        }
        let contents = try LogBlocks.contents(header, headerBytes: headerBytes, stored: stored).bytes
        let slots = try LogCodec.writeStarts(contents, writes: header.writes)
        return (
            CachedBlock(
                contents: contents, slots: slots, decoded: nil,
                decompressedLength: header.compressed ? contents.count : 0), length
        )
    }

    /// Reads the block at `offset` with one read for its header and one for all of it (two
    /// file reads): the block and where it ends in the file.
    private func readBlockAlone(at offset: Int64) throws -> (block: CachedBlock, end: Int64) {
        let headerBytes = try fs.read(fd, count: LogBlocks.headerSize, at: offset)
        guard headerBytes.count == LogBlocks.headerSize else { throw damaged(offset, "a block header is cut short") }
        do {
            let header = try LogBlocks.header(
                headerBytes[...], available: LogFormat.maximumPayload, version: map.formatVersion)
            let bytes = try fs.read(fd, count: LogBlocks.headerSize + header.storedLength, at: offset)
            guard let (block, length) = try Self.parseBlock(bytes[...], version: map.formatVersion) else {
                throw damaged(offset, "the file ends inside it")
            }
            return (block, offset + Int64(length))
        } catch let error as DataStoreError {
            throw error
        } catch {
            throw damaged(offset, "\(error)")
        }
    }
}

/// A stretch of the log read ahead of a scan that reads blocks in file order past the
/// cache: one `pread` of up to ``stretch`` bytes instead of two for each block. perf put
/// the reads at 17% of ten unindexed counts over a million records with 4 KiB blocks and
/// the default cache (9% with 16 KiB blocks, the default then), most of it in the system
/// calls.
///
/// A block read is taken to continue a scan when it starts at most ``gap`` bytes after the
/// end of the block read before it (a commit's frame lies between its last block and the
/// next commit's first). Random reads (point fetches) seldom do, and read one block as
/// before. The stretch is held outside the cache's capacity, and dropped at every save.
struct ReadAhead {
    /// The most bytes read ahead at once.
    static let stretch = 256 << 10
    /// How far past the previous block a read may start and still continue a scan.
    static let gap: Int64 = 4 << 10

    /// Where ``bytes`` start in the file.
    private(set) var start: Int64 = 0
    /// Internal, not private, so that tests can alter what was read.
    var bytes: [UInt8] = []
    /// Where the block read last ends, or -1.
    private var lastEnd: Int64 = -1
    /// Reads made of the file for blocks.
    var fileReads = 0

    /// Whether a read of the block at `offset` continues a scan.
    func follows(_ offset: Int64) -> Bool { lastEnd >= 0 && offset >= lastEnd && offset - lastEnd <= Self.gap }

    mutating func fill(at offset: Int64, _ read: [UInt8]) {
        fileReads += 1
        start = offset
        bytes = read
    }

    /// Notes that the block read last ends at `end`.
    mutating func noteRead(endingAt end: Int64) { lastEnd = end }

    /// Forgets the bytes and the scan.
    mutating func drop() {
        bytes = []
        lastEnd = -1
    }

    /// The block at `offset` parsed from the bytes read ahead, noted as the block read
    /// last; `nil` when they do not hold all of it, or it does not check out from them.
    mutating func take(
        at offset: Int64, parse: (ArraySlice<UInt8>) throws -> (block: CachedBlock, length: Int)?
    ) -> CachedBlock? {
        guard offset >= start, offset - start + Int64(LogBlocks.headerSize) <= Int64(bytes.count) else { return nil }
        let from = Int(offset - start)
        guard let parsed = try? parse(bytes[from...]) else { return nil }
        noteRead(endingAt: offset + Int64(parsed.length))
        return parsed.block
    }
}

/// A block as the cache keeps it: where each write starts in its bytes, the writes decoded
/// so far, and the bytes themselves while some write is not decoded. A block read from the
/// file keeps its bytes, and a read decodes the one write it needs; a block a save wrote
/// comes with every write decoded, and keeps no bytes (they would only double what the
/// cache holds: at a million rows, 180 MiB of them) nor where its writes start.
///
/// A version 4 block keeps its uncompressed bytes; a version 5 block keeps each write as
/// stored, and a read of a compressed write decompresses that write (``packedLengths``).
struct CachedBlock: Sendable {
    /// The writes' bytes (uncompressed in version 4, as stored in version 5), or empty when
    /// every write came decoded.
    var contents: [UInt8]
    /// The number of bytes of `contents` when it holds them.
    let length: Int
    /// Where each write starts in `contents`; empty in a block a save wrote.
    var slots: [Int32]
    /// Version 5: the uncompressed length of each LZ4-compressed write, 0 for a raw one;
    /// empty when no write is compressed.
    let packedLengths: [Int32]
    /// The bytes decompressed to make the block (a version 4 block compressed whole).
    let decompressedLength: Int
    var decoded: [DefaultSnapshot?]
    /// What a block a save wrote costs the cache, worked out when it is made, since its
    /// slots are not kept (a probe inserting a million records in one save, 4 KiB blocks:
    /// 5.8 MB less resident after the save); 0 for a block read from the file.
    private let savedCost: Int

    /// A block read from the file; `decoded` nil leaves every write to decode.
    init(
        contents: [UInt8], slots: [Int32], decoded: [DefaultSnapshot]?, packedLengths: [Int32] = [],
        decompressedLength: Int = 0
    ) {
        self.contents = contents
        self.length = contents.count
        self.slots = slots
        self.packedLengths = packedLengths
        self.decompressedLength = decompressedLength
        self.decoded = decoded.map { $0.map { Optional($0) } } ?? Array(repeating: nil, count: slots.count)
        self.savedCost = 0
    }

    /// A block a save wrote, `length` bytes long, with every write as the save gave it;
    /// `slots` are where its writes start, for its cost.
    init(length: Int, slots: [Int32], decoded: [DefaultSnapshot]) {
        self.contents = []
        self.length = length
        self.slots = []
        self.packedLengths = []
        self.decompressedLength = 0
        self.decoded = decoded.map { Optional($0) }
        var cost = 64
        for slot in slots.indices {
            let end = slot + 1 < slots.count ? Int(slots[slot + 1]) : length
            cost += Self.decodedCost(end - Int(slots[slot]))
        }
        self.savedCost = cost
    }

    /// Whether a write that is not decoded can be decoded from what the block holds.
    var hasContents: Bool { contents.count == length }

    /// The bytes of one write.
    func length(ofSlot slot: Int) -> Int {
        (slot + 1 < slots.count ? Int(slots[slot + 1]) : length) - Int(slots[slot])
    }

    /// What a decoded write is taken to cost: its encoded bytes twice (values unpacked into
    /// enums and arrays), plus the snapshot itself. An estimate, not a measurement.
    static func decodedCost(_ encodedBytes: Int) -> Int { 2 * encodedBytes + 48 }

    /// What the cache's capacity counts for the block as it stands.
    var cost: Int {
        if savedCost > 0 { return savedCost }
        var total = contents.count + slots.count * 12 + 64
        for slot in decoded.indices where decoded[slot] != nil { total += Self.decodedCost(length(ofSlot: slot)) }
        return total
    }
}

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
    /// Reads that asked for part of a record once blocks were kept as bytes.
    var partialReads = 0
    /// Whether a block was ever evicted, or refused for being larger than the whole cache:
    /// then decoded writes are no longer kept.
    private(set) var hasEvicted = false
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
        last = i
        evict(sparing: i)
    }

    /// Keeps a block a scan read from bytes read ahead, once the cache has evicted, as the
    /// one scanned block instead of among the cached blocks: a scan of more records than
    /// the cache holds would only push out the blocks other reads use (as a large
    /// sequential scan uses a ring of buffers of its own in PostgreSQL), and putting each
    /// block in and evicting one was 9% of a count past the default cache. The scanned
    /// block is held outside the capacity, like the bytes read ahead.
    mutating func keepScanned(_ offset: Int64, _ block: CachedBlock) { scanned = (offset, block) }

    /// The offsets of the cached blocks, and of the scanned block: for tests.
    var offsets: (cached: Set<Int64>, scanned: Int64?) { (Set(byOffset.keys.map(\.value)), scanned?.offset) }

    /// Keeps a write a read decoded, if its block is still cached and the cache has never
    /// had to evict a block.
    ///
    /// A cache that has evicted holds less than the records being read: from then on it
    /// keeps their blocks as bytes only, three times denser than their decoded writes, and
    /// each read decodes its write again. Keeping them decoded too made reads past the
    /// capacity evict decoded writes read long before, cold, and freeing those took a
    /// quarter of a scan's time; with the default 32 MiB, ten unindexed counts over 100,000
    /// records took 0.82–0.96 s that way, and 0.14–0.17 s keeping bytes (which then hold
    /// every record: no block is read from the file again). A decoded write is never the
    /// cause of an eviction either.
    mutating func setDecoded(_ offset: Int64, slot: Int, _ snapshot: DefaultSnapshot, cost: Int) {
        guard !hasEvicted, used + cost <= capacity, let i = byOffset[StoreNumber(offset)],
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
        nodes[i] = Node(
            offset: -1, block: CachedBlock(contents: [], slots: [], decoded: []), cost: 0, marked: false)
        if last == i { last = -1 }
        free.append(i)
    }
}
