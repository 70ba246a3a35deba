/// A log file's format version (`Formats/log.md`, "Versions"), and the one place that
/// says what each version has. Code asks a version what it can do (``hasCheckpoints``,
/// ``locatesRecords``) instead of comparing numbers, so that adding a version means
/// changing this file and the code that reads the new feature, not every comparison.
package struct LogFormatVersion: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible,
    ExpressibleByIntegerLiteral
{
    package let rawValue: UInt16

    package init(rawValue: UInt16) { self.rawValue = rawValue }
    package init(integerLiteral value: UInt16) { self.rawValue = value }

    /// The version Stowage writes when it creates or rewrites a file.
    package static let current: LogFormatVersion = 6
    /// The versions Stowage reads, and appends to in their own layout.
    package static let readable: ClosedRange<LogFormatVersion> = 1...7

    /// The version a new or compacted file of `description` is written as: version 7 for
    /// a schema with model inheritance, whose entities name their superentities, and
    /// ``current`` otherwise, byte for byte as before version 7.
    package static func forNewFile(_ description: StoredSchema) -> LogFormatVersion {
        description.hasSuperentities ? 7 : current
    }

    package static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

    package var description: String { String(rawValue) }

    /// Version 2: an attribute may be kept in a file of its own (`.externalStorage`): the
    /// property flag bit 3 and the snapshot value tag `0x11`.
    package var hasExternalStorage: Bool { rawValue >= 2 }

    /// Version 3: checkpoint records (type 3) may follow the header. In version 3 only a
    /// checkpoint that ends the valid prefix is used; see ``checkpointsLocateRecords``.
    package var hasCheckpoints: Bool { rawValue >= 3 }

    /// Version 4: a commit holds its writes in checksummed blocks, so a record can be read
    /// back by location (block and slot) instead of being kept in memory, and a commit
    /// record is itself stored raw (its blocks are compressed instead).
    package var locatesRecords: Bool { rawValue >= 4 }

    /// Version 4: checkpoints carry the key directory (where each live record is) and the
    /// count of record versions, so that opening uses the last checkpoint wherever it is
    /// and only summarizes the commits before it.
    package var checkpointsLocateRecords: Bool { rawValue >= 4 }

    /// Version 5: each write of a block is stored on its own, raw or LZ4-compressed, after
    /// a table of their lengths; before, a block was compressed whole.
    package var compressesEachWrite: Bool { rawValue >= 5 }

    /// Version 6: layout records (type 4) change the schema the records after them are
    /// written in, without rewriting the records before them.
    package var hasLayoutRecords: Bool { rawValue >= 6 }

    /// Version 6: a commit records what its updates changed and its deletes' preserved
    /// values, and history records (type 5) keep the history through compaction.
    package var keepsHistory: Bool { rawValue >= 6 }

    /// Version 7: each entity of the header and layout records names its superentity
    /// (model inheritance), empty for none.
    package var recordsSuperentities: Bool { rawValue >= 7 }
}
