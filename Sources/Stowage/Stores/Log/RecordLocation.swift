import Foundation

/// Where a log store keeps a record version (`Formats/log.md`, versions 4 and 5): the file
/// offset of its block and its slot among the block's writes, packed into the one word of
/// a ``RowLocation``. The shared table holds these without reading them.
public typealias RecordLocation = RowLocation

extension RowLocation: CustomStringConvertible {
    /// The most writes a block may hold; slots are below it.
    public static let slotsPerBlock = 4096
    static let slotBits: UInt64 = 12

    /// - Precondition: `0 <= blockOffset < 2^52` and `0 <= slot < 4096`; a caller passes
    ///   only offsets and slots it has bounded (a file is never that large).
    public init(blockOffset: Int64, slot: Int) {
        self.init(rawValue: UInt64(blockOffset) << Self.slotBits | UInt64(slot))
    }

    /// The file offset of the block's header.
    public var blockOffset: Int64 { Int64(rawValue >> Self.slotBits) }
    /// The record's position among the block's writes.
    public var slot: Int { Int(rawValue & (1 << Self.slotBits - 1)) }

    /// The block's offset and the slot: `block 4096 slot 3`.
    public var description: String { "block \(blockOffset) slot \(slot)" }
}
