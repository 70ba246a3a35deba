import Foundation

/// Finding which version of a migration plan a store was written with: by its version
/// identifier and its shape, or by its shape alone for a store written before the app
/// used a ``VersionedSchema`` (`Formats/log.md`, "Schema versions").
extension StoredSchema {
    /// The version as SwiftData prints one: `1.0.0`.
    package var versionText: String { version.map(String.init).joined(separator: ".") }

    /// Whether `other` has the same entities, properties, uniqueness constraints and
    /// indexes, whatever its version and entity order. External storage is left out: a
    /// JSON store and a version 1 log do not record it.
    package func hasSameShape(as other: StoredSchema) -> Bool {
        let mine = withoutExternalFlags.entities.sorted { $0.name < $1.name }
        let theirs = comparable(other).withoutExternalFlags.entities.sorted { $0.name < $1.name }
        return mine == theirs
    }

    /// A stable hash of each entity's shape (its properties in order with their types,
    /// optionality and relationships, its uniqueness constraints and indexes), by entity
    /// name: 64-bit FNV-1a over a canonical text, so that it is the same in every process
    /// and on every machine. A migration that cannot place a store names its entities by
    /// these in its error, to compare with an app's versions.
    package var structuralHashes: [String: UInt64] {
        var hashes: [String: UInt64] = [:]
        for entity in withoutExternalFlags.entities {
            var text = entity.name + "{"
            for p in entity.properties {
                text += "\(p.name):\(p.typeName):\(p.flags):\(p.destination ?? "");"
            }
            text += "}u\(entity.uniqueness)i\(entity.indices)"
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in text.utf8 {
                hash ^= UInt64(byte)
                hash = hash &* 0x0000_0100_0000_01b3
            }
            hashes[entity.name] = hash
        }
        return hashes
    }
}
