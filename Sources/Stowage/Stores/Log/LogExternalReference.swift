import Foundation

/// Where an external value's bytes are (`Formats/log.md`, "External values").
package struct LogExternalReference: Hashable, Sendable {
    /// The property's position in the entity's values.
    package var property: Int
    /// The commit that wrote the file.
    package var transactionID: UInt64
    package var byteCount: UInt64
    /// CRC32C of the bytes, unmasked.
    package var checksum: UInt32

    /// The file's name inside `<log>.blobs/`: identifiers only.
    package func fileName(entityIndex: Int, primaryKey: Int64) -> String {
        "\(entityIndex)-\(primaryKey)-\(property)-\(transactionID)"
    }
}
