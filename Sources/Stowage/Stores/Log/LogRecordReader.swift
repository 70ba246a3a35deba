import Foundation
import Synchronization

/// Reads a version 4 or 5 log's records back by location (`Formats/log.md`, "Reading records"):
/// one block per miss, with `pread`, its checksum checked (and in version 4 decompressed),
/// then kept in a cache (``BlockCache``, evicted by a clock) bounded by what its blocks are taken to cost
/// (their bytes, and an estimate for each decoded write). A read decodes the one write it
/// asks for from the cached bytes (in version 5 decompressing that write alone, if it is
/// compressed); the blocks a save wrote come with every write decoded and no bytes.
///
/// Through a mapping of the file (``LogFileMapping``, when the store maps it), a miss takes
/// its block from the mapping without a system call, and the cache keeps where its writes
/// are instead of its bytes.
///
/// It owns a duplicate of the log's descriptor, so a table that still refers to it keeps
/// reading the file it was made for after a compaction renames a new one over the path.
final class LogRecordReader: SnapshotSource, @unchecked Sendable {
    let fs: any StoreFileSystem
    let fd: Int32
    let path: String
    let map: LogEntityMap
    /// The file's layouts (format version 6), when a record may be of another than `map`'s.
    let layouts: LogLayouts?
    let externalFiles: LogExternalFiles
    /// Internal, not private, so that tests can look at and alter what it holds.
    let cache: PosixMutex<BlockCache>

    /// A reader of the records of the file open at `fd`, in `map`'s layout, or in the
    /// layouts `layouts` lists (the last of them `map`'s): a record of an earlier one is
    /// carried to the last as it is read.
    /// `mapsFile` reads blocks through a mapping of the file (``LogFileMapping``) when `fs`
    /// is the POSIX one (a file system that tests put in place is always read with `pread`).
    init(
        fs: any StoreFileSystem, fd: Int32, path: String, map: LogEntityMap, layouts: LogLayouts? = nil,
        capacity: Int, mapsFile: Bool = false
    ) {
        self.fs = fs
        self.fd = fd
        self.path = path
        self.map = map
        self.layouts = layouts.flatMap { $0.isSingle ? nil : $0 }
        self.externalFiles = LogExternalFiles(
            fs: fs, logPath: path, parent: URL(fileURLWithPath: path).deletingLastPathComponent().path)
        var cache = BlockCache(capacity: capacity)
        cache.mappings.isEnabled = mapsFile && fs is POSIXStoreFileSystem
        self.cache = PosixMutex(cache)
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

    /// Reads the records of a run in one block together, once the cache holds less than
    /// the records read (and so keeps no decoded write): the first through
    /// ``snapshot(entity:key:at:columns:)``, which brings the block into the cache; the
    /// others, when the block is mapped, decoded from one copy of its writes' bytes, under
    /// one hold of the lock, instead of a hold, a look-up and a copy of its write each.
    /// A write that is compressed, of an earlier layout, or with external values is read on
    /// its own.
    func forEachSnapshot(
        entity: String, keys: [Int64], at locations: [RecordLocation], columns: SnapshotColumns,
        _ body: (Int, DefaultSnapshot, Bool) throws -> Void
    ) throws {
        var i = 0
        while i < locations.count {
            let offset = locations[i].blockOffset
            var end = i + 1
            while end < locations.count, locations[end].blockOffset == offset { end += 1 }
            let first = try snapshot(entity: entity, key: keys[i], at: locations[i], columns: columns)
            try body(i, first.snapshot, first.isWhole)
            i += 1
            let block =
                end - i < 2 || layouts != nil
                ? nil : cache.withLock { $0.holdsLess ? $0.mappedBlock(offset) : nil }
            guard let block, let mapped = block.mapped else {
                for k in i..<end {
                    let (snapshot, isWhole) = try self.snapshot(
                        entity: entity, key: keys[k], at: locations[k], columns: columns)
                    try body(k, snapshot, isWhole)
                }
                i = end
                continue
            }
            let bytes = Array(mapped.buffer)
            var partial = 0
            for k in i..<end {
                let slot = locations[k].slot
                if slot < block.slots.count, block.packedLengths.isEmpty || block.packedLengths[slot] == 0,
                    let snapshot = try decode(
                        bytes, from: Int(block.slots[slot]), length: block.length(ofSlot: slot), entity: entity,
                        key: keys[k], at: locations[k], columns: columns)
                {
                    if !columns.isAll { partial += 1 }
                    try body(k, snapshot, columns.isAll)
                } else {
                    let (snapshot, isWhole) = try self.snapshot(
                        entity: entity, key: keys[k], at: locations[k], columns: columns)
                    try body(k, snapshot, isWhole)
                }
            }
            if partial > 0 { cache.withLock { $0.partialReads += partial } }
            i = end
        }
    }

    /// Decodes the write of `length` bytes at `start` in `bytes` (a block's writes as
    /// stored, uncompressed) with its values at `columns`; `nil` when it has external values,
    /// which only ``read(entity:key:at:externalValues:columns:)`` fetches.
    private func decode(
        _ bytes: [UInt8], from start: Int, length: Int, entity: String, key: Int64, at location: RecordLocation,
        columns: SnapshotColumns
    ) throws -> DefaultSnapshot? {
        var references: [LogExternalReference] = []
        let snapshot: DefaultSnapshot
        do {
            snapshot = try Self.decodeWrite(
                bytes, from: start, to: start + length, map: map, columns: columns, references: &references)
        } catch {
            throw damaged(location.blockOffset, "slot \(location.slot) does not decode: \(error)")
        }
        guard Self.holds(snapshot, entity: entity, key: key) else {
            throw damaged(location.blockOffset, "slot \(location.slot) holds another record than \(entity) \(key)")
        }
        return references.isEmpty ? snapshot : nil
    }

    /// Decodes the write that starts at `start` in `bytes`: its kind, then its snapshot in
    /// `map`'s layout, with its values at `columns`, which must end at `end`.
    private static func decodeWrite(
        _ bytes: [UInt8], from start: Int, to end: Int, map: LogEntityMap, columns: SnapshotColumns,
        references: inout [LogExternalReference]
    ) throws -> DefaultSnapshot {
        var r = LogByteReader(bytes, position: start)
        guard try r.u8() <= 1 else { throw LogDecodeError("bad write kind") }
        let snapshot = try LogCodec.decodeSnapshot(&r, map: map, externalReferences: &references, columns: columns)
        guard r.position == end else {
            throw LogDecodeError(
                "the write ends at byte \(r.position - start), not where its bytes do (\(end - start))")
        }
        return snapshot
    }

    /// A version 5 write compressed on its own, decompressed: it must be all of `length` bytes.
    private func decompressWrite(_ stored: UnsafeRawBufferPointer, length: Int) throws -> [UInt8] {
        guard let bytes = LZ4Block.decompress(stored, length: length) else {
            throw LogDecodeError("its LZ4 bytes do not decompress")
        }
        decompressed.add(bytes.count, ordering: .relaxed)
        return bytes
    }

    private func read(
        entity: String, key: Int64, at location: RecordLocation, externalValues: Bool,
        columns requested: SnapshotColumns = .all
    ) throws -> (snapshot: DefaultSnapshot, isWhole: Bool) {
        // A record of an earlier layout is decoded whole, in its own, then carried to the last.
        let earlier = layouts.map { $0.layout(at: location.blockOffset) }.flatMap { $0.toLast == nil ? nil : $0 }
        let columns = earlier == nil ? requested : .all
        // Not `earlier?.map ?? self.map`: that copies the map (a retain of each of its
        // parts) for every read.
        /// A write the cache holds decoded, or the block to decode it from.
        enum Found {
            case decoded(DefaultSnapshot)
            case block(CachedBlock)
            /// A write's stored bytes in a mapping of the file, and its uncompressed length
            /// if it is compressed.
            case mapped(UnsafeRawBufferPointer, packedLength: Int)
        }
        let (found, partial) = try cache.withLock { cache -> (Found, Bool) in
            let partial = !columns.isAll && cache.holdsLess
            if partial { cache.partialReads += 1 }
            switch cache.holding(location.blockOffset, slot: location.slot) {
            case .decoded(let decoded): return (.decoded(decoded), partial)
            case .mapped(let bytes, let packed): return (.mapped(bytes, packedLength: packed), partial)
            case .block(let found): return (.block(found), partial)
            case .none: break
            }
            let (read, scanned) = try readBlock(
                at: location.blockOffset, readAhead: &cache.readAhead, mappings: &cache.mappings)
            cache.misses += 1
            if read.decompressedLength > 0 { decompressed.add(read.decompressedLength, ordering: .relaxed) }
            // A mapped block costs the cache only where its writes are: a scan keeps it too.
            if scanned && cache.holdsLess && read.mapped == nil {
                cache.keepScanned(location.blockOffset, read)
            } else {
                cache.put(location.blockOffset, read)
            }
            if let write = read.mappedWrite(location.slot) {
                return (.mapped(write.bytes, packedLength: write.packed), partial)
            }
            return (.block(read), partial)
        }
        /// A slot must hold the record the key directory says it does.
        func check(_ snapshot: DefaultSnapshot) throws {
            guard Self.holds(snapshot, entity: entity, key: key) else {
                throw damaged(location.blockOffset, "slot \(location.slot) holds another record than \(entity) \(key)")
            }
        }
        /// Where the write's bytes are: in a mapping of the file, or in a block.
        var mappedWrite: (bytes: UnsafeRawBufferPointer, packed: Int)?
        var source = CachedBlock(contents: [], slots: [], decoded: [])
        switch found {
        case .decoded(let decoded):
            try check(decoded)
            return (decoded, true)
        case .mapped(let bytes, let packed):
            mappedWrite = (bytes, packed)
        case .block(let block):
            // Decoding one write needs no lock: the block's bytes are a value.
            guard location.slot < block.decoded.count else {
                throw damaged(location.blockOffset, "it has no slot \(location.slot)")
            }
            if let decoded = block.decoded[location.slot] {
                try check(decoded)
                return (decoded, true)
            }
            // A block without its bytes comes with every write decoded (and without where
            // each starts); should one ever be missing, the block is read again.
            source = block
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
        }
        var snapshot: DefaultSnapshot
        var references: [LogExternalReference] = []
        /// The write's bytes as stored, for what keeping it decoded costs.
        let storedLength = mappedWrite?.bytes.count ?? source.length(ofSlot: location.slot)
        do {
            // The write's bytes, and where it starts and ends in them.
            let bytes: [UInt8]
            let start: Int
            let end: Int
            if let (stored, packed) = mappedWrite {
                // Copied out of the mapping (or decompressed): a record's bytes, not a block's.
                bytes = packed > 0 ? try decompressWrite(stored, length: packed) : Array(stored)
                (start, end) = (0, bytes.count)
            } else {
                let first = Int(source.slots[location.slot])
                let last = first + source.length(ofSlot: location.slot)
                let packed = source.packedLengths.isEmpty ? 0 : Int(source.packedLengths[location.slot])
                if packed > 0 {
                    bytes = try source.contents[first..<last].withUnsafeBytes {
                        try decompressWrite($0, length: packed)
                    }
                    (start, end) = (0, bytes.count)
                } else {
                    (bytes, start, end) = (source.contents, first, last)
                }
            }
            if let earlier {
                snapshot = try Self.decodeWrite(
                    bytes, from: start, to: end, map: earlier.map, columns: .all, references: &references)
            } else {
                snapshot = try Self.decodeWrite(
                    bytes, from: start, to: end, map: map, columns: partial ? columns : .all, references: &references)
            }
        } catch {
            throw damaged(location.blockOffset, "slot \(location.slot) does not decode: \(error)")
        }
        try check(snapshot)
        // Without its external values the snapshot is not the record: it is not cached.
        if !externalValues, !references.isEmpty {
            return (earlier?.toLast.map { $0.convert(snapshot, of: entity) } ?? snapshot, !partial)
        }
        var externalBytes = 0
        for reference in references where reference.property < snapshot.values.count {
            let bytes = try externalFiles.read(
                reference, entity: entity, entityIndex: (earlier?.map ?? self.map).indexByName[entity] ?? -1, key: key)
            externalBytes += bytes.count
            snapshot.values[reference.property] = .data(bytes)
        }
        // Part of a record is never kept.
        if partial { return (snapshot, false) }
        if let conversion = earlier?.toLast { snapshot = conversion.convert(snapshot, of: entity) }
        let decoded = snapshot
        let cost = CachedBlock.decodedCost(storedLength) + externalBytes
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
    private func readBlock(at offset: Int64, readAhead: inout ReadAhead, mappings: inout LogMappings) throws
        -> (block: CachedBlock, scanned: Bool)
    {
        if mappings.isEnabled, let (block, end) = try readMapped(at: offset, mappings: &mappings) {
            let scanned = readAhead.follows(offset)
            readAhead.noteRead(endingAt: end)
            return (block, scanned)
        }
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

    /// Checks the block at `offset` in a mapping of the file: the block and where it ends
    /// in the file, or `nil` when the mapping cannot hold it (the file ends before it, or
    /// `mmap` failed), which leaves the block to be read with `pread` (and the end of the
    /// file to be reported by that read). A version 5 block keeps where its writes are in
    /// the mapping, not a copy of them; an earlier version's block is copied out and parsed
    /// as a block read from the file.
    private func readMapped(at offset: Int64, mappings: inout LogMappings) throws -> (CachedBlock, Int64)? {
        guard let headerRaw = try mappings.bytes(at: offset, count: LogBlocks.headerSize, fs: fs, fd: fd) else {
            return nil
        }
        let headerBytes = Array(headerRaw)[...]
        do {
            let header = try LogBlocks.header(
                headerBytes, available: LogFormat.maximumPayload, version: map.formatVersion)
            let length = LogBlocks.headerSize + header.storedLength
            guard header.perWrite else {
                guard let raw = try mappings.bytes(at: offset, count: length, fs: fs, fd: fd),
                    let (block, _) = try Self.parseBlock(Array(raw)[...], version: map.formatVersion)
                else { return nil }
                return (block, offset + Int64(length))
            }
            guard
                let stored = try mappings.bytes(
                    at: offset + Int64(LogBlocks.headerSize), count: header.storedLength, fs: fs, fd: fd)
            else { return nil }
            try LogBlocks.checkChecksum(header, headerBytes: headerBytes, stored: stored)
            let table = try LogBlocks.table(header, stored: stored)
            let block = CachedBlock(
                mapped: UnsafeRawBufferPointer(rebasing: stored[table.end...]), slots: table.starts,
                packedLengths: table.lengths)
            return (block, offset + Int64(length))
        } catch let error as DataStoreError {
            throw error
        } catch {
            throw damaged(offset, "\(error)")
        }
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
