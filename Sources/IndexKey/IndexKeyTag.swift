/// The one-byte tag that starts every encoded component of an ``IndexKey``
/// (index-key format version 1, see `Formats/index-key.md`).
///
/// `null` is the smallest tag, so an absent value sorts before every present
/// value of any type. The relative order of the other tags only matters when
/// one tuple position holds values of different types, which a schema-driven
/// index never does; it is fixed so that encodings stay deterministic.
public enum IndexKeyTag: UInt8, Sendable, CaseIterable {
    /// An absent (`nil`) value; no payload.
    case null = 0x00
    /// A `Bool`; payload `0x00` (false) or `0x01` (true).
    case bool = 0x10
    /// An `Int64`; payload 8 bytes big-endian with the sign bit flipped.
    case int64 = 0x20
    /// A `UInt64`; payload 8 bytes big-endian.
    case uint64 = 0x21
    /// A `Double`; payload 8 bytes, order-preserving transform of the IEEE bits.
    case double = 0x30
    /// A `Float`; payload 4 bytes, order-preserving transform of the IEEE bits.
    case float = 0x31
    /// A date as seconds since 2001-01-01 00:00:00 UTC; payload as for `double`.
    case date = 0x38
    /// A `String`; payload escaped UTF-8 followed by `0x00 0x00`.
    case string = 0x40
    /// A byte string; payload escaped bytes followed by `0x00 0x00`.
    case bytes = 0x50
    /// A UUID; payload its 16 bytes in order.
    case uuid = 0x60
}

/// The version of the byte layout produced by ``IndexKeyEncoder``. Persisted
/// indexes should record it and rebuild when it changes.
public let indexKeyFormatVersion = 1
