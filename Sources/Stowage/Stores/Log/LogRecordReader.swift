import Foundation
import Synchronization

/// Reads a version 4 log's records back by location (`Formats/log.md`, "Reading records"):
/// one block per miss, with `pread`, its checksum checked, decompressed and decoded whole,
/// then kept in a least-recently-used cache bounded by the blocks' uncompressed bytes.
///
/// It owns a duplicate of the log's descriptor, so a table that still refers to it keeps
/// reading the file it was made for after a compaction renames a new one over the path.
final class LogRecordReader: SnapshotSource, @unchecked Sendable {
    let fs: any LogFileSystem
    let fd: Int32
    let path: String
    let map: LogEntityMap
    let externalFiles: LogExternalFiles
    private let cache: Mutex<BlockCache>

    init(fs: any LogFileSystem, fd: Int32, path: String, map: LogEntityMap, capacity: Int) {
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

    func snapshot(entity: String, key: Int64, at location: RecordLocation) throws -> DefaultSnapshot {
        try cache.withLock { cache in
            let block: [DefaultSnapshot]
            if let found = cache.get(location.blockOffset) {
                block = found
            } else {
                let (read, cost) = try readBlock(at: location.blockOffset)
                cache.misses += 1
                cache.put(location.blockOffset, read, cost: cost)
                block = read
            }
            guard location.slot < block.count else {
                throw damaged(location.blockOffset, "it has no slot \(location.slot)")
            }
            let snapshot = block[location.slot]
            guard snapshot.persistentIdentifier.primaryKey == key, snapshot.persistentIdentifier.entityName == entity
            else {
                throw damaged(location.blockOffset, "slot \(location.slot) holds another record than \(entity) \(key)")
            }
            return snapshot
        }
    }

    /// Puts blocks a save just wrote into the cache: their snapshots, in slot order.
    func remember(_ blocks: [(offset: Int64, snapshots: [DefaultSnapshot], bytes: Int)]) {
        cache.withLock { cache in
            for block in blocks { cache.put(block.offset, block.snapshots, cost: block.bytes) }
        }
    }

    private func damaged(_ offset: Int64, _ reason: String) -> DataStoreError {
        DataStoreError(
            .corruptStore,
            "\(path): the block at offset \(offset) cannot be read back: \(reason); the read fails, and the "
                + "next open's recovery applies")
    }

    /// Reads, checks and decodes the block at `offset`, with its external values.
    private func readBlock(at offset: Int64) throws -> ([DefaultSnapshot], cost: Int) {
        let headerBytes = try fs.read(fd, count: LogBlocks.headerSize, at: offset)
        let header: LogBlocks.Header
        do {
            header = try LogBlocks.header(headerBytes[...], available: LogFormat.maximumPayload)
        } catch {
            throw damaged(offset, "\(error)")
        }
        let stored = try fs.read(fd, count: header.storedLength, at: offset + Int64(LogBlocks.headerSize))
        guard stored.count == header.storedLength else { throw damaged(offset, "the file ends inside it") }
        var snapshots: [DefaultSnapshot] = []
        snapshots.reserveCapacity(header.writes)
        do {
            let contents = try LogBlocks.contents(header, headerBytes: headerBytes[...], stored: stored[...])
            var r = LogByteReader(contents)
            for _ in 0..<header.writes {
                guard try r.u8() <= 1 else { throw LogDecodeError("bad write kind") }
                var references: [LogExternalReference] = []
                var snapshot = try LogCodec.decodeSnapshot(&r, map: map, externalReferences: &references)
                if !references.isEmpty, let key = snapshot.persistentIdentifier.primaryKey {
                    let entity = snapshot.persistentIdentifier.entityName
                    for reference in references where reference.property < snapshot.values.count {
                        snapshot.values[reference.property] = .data(
                            try externalFiles.read(
                                reference, entity: entity, entityIndex: map.indexByName[entity] ?? -1, key: key))
                    }
                }
                snapshots.append(snapshot)
            }
            guard r.isAtEnd else { throw LogDecodeError("\(r.remaining) bytes after its last write") }
        } catch let error as DataStoreError {
            throw error
        } catch {
            throw damaged(offset, "\(error)")
        }
        return (snapshots, header.uncompressedLength)
    }
}

/// Decoded blocks by offset, least recently used first out, bounded by their cost.
struct BlockCache {
    private struct Node {
        var offset: Int64
        var snapshots: [DefaultSnapshot]
        var cost: Int
        var previous: Int
        var next: Int
    }

    let capacity: Int
    private(set) var used = 0
    var misses = 0
    private var nodes: [Node] = []
    private var free: [Int] = []
    private var byOffset: [Int64: Int] = [:]
    /// Most recently used first.
    private var head = -1
    private var tail = -1

    init(capacity: Int) { self.capacity = max(0, capacity) }

    var count: Int { byOffset.count }

    mutating func get(_ offset: Int64) -> [DefaultSnapshot]? {
        guard let i = byOffset[offset] else { return nil }
        unlink(i)
        pushFront(i)
        return nodes[i].snapshots
    }

    /// Caches a block, then evicts from the least recently used end until within the
    /// capacity. A block larger than the whole capacity is not kept.
    mutating func put(_ offset: Int64, _ snapshots: [DefaultSnapshot], cost: Int) {
        if let i = byOffset.removeValue(forKey: offset) { remove(i) }
        guard cost <= capacity else { return }
        let node = Node(offset: offset, snapshots: snapshots, cost: cost, previous: -1, next: -1)
        let i: Int
        if let reused = free.popLast() {
            nodes[reused] = node
            i = reused
        } else {
            nodes.append(node)
            i = nodes.count - 1
        }
        byOffset[offset] = i
        used += cost
        pushFront(i)
        while used > capacity, tail >= 0 {
            let last = tail
            byOffset[nodes[last].offset] = nil
            remove(last)
        }
    }

    private mutating func remove(_ i: Int) {
        unlink(i)
        used -= nodes[i].cost
        nodes[i].snapshots = []
        free.append(i)
    }

    private mutating func unlink(_ i: Int) {
        let (p, n) = (nodes[i].previous, nodes[i].next)
        if p >= 0 { nodes[p].next = n } else if head == i { head = n }
        if n >= 0 { nodes[n].previous = p } else if tail == i { tail = p }
        nodes[i].previous = -1
        nodes[i].next = -1
    }

    private mutating func pushFront(_ i: Int) {
        nodes[i].next = head
        nodes[i].previous = -1
        if head >= 0 { nodes[head].previous = i }
        head = i
        if tail < 0 { tail = i }
    }
}
