import Foundation

/// A block as the cache keeps it: where each write starts in its bytes, the writes decoded
/// so far, and the bytes themselves while some write is not decoded. A block read from the
/// file keeps its bytes, and a read decodes the one write it needs; a block a save wrote
/// comes with every write decoded, and keeps no bytes (they would only double what the
/// cache holds) nor where its writes start.
///
/// A version 4 block keeps its uncompressed bytes; a version 5 block keeps each write as
/// stored, and a read of a compressed write decompresses that write (``packedLengths``).
/// A version 5 block read through a mapping of the file (``LogFileMapping``) keeps no
/// bytes, only where they are in the mapping (``mapped``).
struct CachedBlock: Sendable {
    /// The writes' bytes (uncompressed in version 4, as stored in version 5), or empty when
    /// every write came decoded or the block is mapped.
    var contents: [UInt8]
    /// The writes' bytes as stored, in a mapping of the file, instead of `contents`.
    let mapped: MappedBytes?
    /// The number of bytes of `contents` (or of `mapped`) when it holds them.
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
    /// slots are not kept (they would only take memory); 0 for a block read from the file.
    private let savedCost: Int

    /// A block read from the file; `decoded` nil leaves every write to decode.
    init(
        contents: [UInt8], slots: [Int32], decoded: [DefaultSnapshot]?, packedLengths: [Int32] = [],
        decompressedLength: Int = 0
    ) {
        self.contents = contents
        self.mapped = nil
        self.length = contents.count
        self.slots = slots
        self.packedLengths = packedLengths
        self.decompressedLength = decompressedLength
        self.decoded = decoded.map { $0.map { Optional($0) } } ?? Array(repeating: nil, count: slots.count)
        self.savedCost = 0
    }

    /// A version 5 block read through a mapping: its writes as stored are `mapped`.
    init(mapped: UnsafeRawBufferPointer, slots: [Int32], packedLengths: [Int32]) {
        self.contents = []
        self.mapped = MappedBytes(buffer: mapped)
        self.length = mapped.count
        self.slots = slots
        self.packedLengths = packedLengths
        self.decompressedLength = 0
        self.decoded = Array(repeating: nil, count: slots.count)
        self.savedCost = 0
    }

    /// A block a save wrote, `length` bytes long, with every write as the save gave it;
    /// `slots` are where its writes start, for its cost.
    init(length: Int, slots: [Int32], decoded: [DefaultSnapshot]) {
        self.contents = []
        self.mapped = nil
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
    var hasContents: Bool { mapped != nil || contents.count == length }

    /// The stored bytes of the write at `slot` in the mapping, and its uncompressed length
    /// if it is compressed (else 0); `nil` when the block is not mapped or has no such slot.
    func mappedWrite(_ slot: Int) -> (bytes: UnsafeRawBufferPointer, packed: Int)? {
        guard let mapped, slot >= 0, slot < slots.count else { return nil }
        let start = Int(slots[slot])
        let end = start + length(ofSlot: slot)
        guard start >= 0, start <= end, end <= mapped.buffer.count else { return nil }
        return (
            UnsafeRawBufferPointer(rebasing: mapped.buffer[start..<end]),
            packedLengths.isEmpty ? 0 : Int(packedLengths[slot])
        )
    }

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
