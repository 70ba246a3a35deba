import Foundation

/// Maps entities to their index in a log file's stored schema, for one store.
package struct LogEntityMap: Sendable {
    package let storeIdentifier: String
    package let names: [String]
    let propertyCounts: [Int]
    package let indexByName: [String: Int]
    /// For each entity index, the positions of its external-storage properties (version 2).
    package let external: [[Int]]
    /// The file's format version: external references (tag 0x11) only in version 2.
    package let formatVersion: LogFormatVersion
    /// For each entity index, the scope of its permanent identifiers in this store.
    let scopes: [IdentifierScope]

    /// The same map for a file of another format version (after a rewrite).
    package func with(formatVersion version: LogFormatVersion) -> LogEntityMap {
        version == formatVersion
            ? self
            : LogEntityMap(
                storeIdentifier: storeIdentifier, names: names, propertyCounts: propertyCounts,
                indexByName: indexByName, external: external, formatVersion: version)
    }

    private init(
        storeIdentifier: String, names: [String], propertyCounts: [Int], indexByName: [String: Int],
        external: [[Int]], formatVersion: LogFormatVersion
    ) {
        self.storeIdentifier = storeIdentifier
        self.names = names
        self.propertyCounts = propertyCounts
        self.indexByName = indexByName
        self.external = external
        self.formatVersion = formatVersion
        self.scopes = Self.scopes(names, storeIdentifier)
    }

    private static func scopes(_ names: [String], _ storeIdentifier: String) -> [IdentifierScope] {
        names.map { .interned(entityName: $0, storeIdentifier: storeIdentifier, isTemporary: false) }
    }

    package init(
        storeIdentifier: String, description: StoredSchema, formatVersion: LogFormatVersion = LogFormat.version
    ) {
        self.formatVersion = formatVersion
        external = description.entities.map { entity in
            formatVersion.hasExternalStorage
                ? entity.properties.indices.filter { entity.properties[$0].isExternal } : []
        }
        names = description.entities.map(\.name)
        scopes = Self.scopes(names, storeIdentifier)
        // The interned copy, so that comparing an identifier's store with it skips the bytes.
        self.storeIdentifier = scopes.first?.storeIdentifier ?? storeIdentifier
        propertyCounts = description.entities.map(\.properties.count)
        var byName: [String: Int] = [:]
        for (i, name) in names.enumerated() where byName[name] == nil { byName[name] = i }
        indexByName = byName
    }
}
