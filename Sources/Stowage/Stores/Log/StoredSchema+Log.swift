import Foundation

/// The stored schema as a log file's header record holds it (`Formats/log.md`, "Header
/// record"): the log's own encoding of the description every disk store keeps.
extension StoredSchema {
    /// Appends the description in the header record's layout.
    package func encode(into w: inout LogByteWriter, formatVersion: LogFormatVersion) {
        for part in version { w.varint(part) }
        w.varint(entities.count)
        for entity in entities {
            w.string(entity.name)
            if formatVersion.recordsSuperentities { w.string(entity.superentity ?? "") }
            w.varint(entity.properties.count)
            for p in entity.properties {
                w.string(p.name)
                w.string(p.typeName)
                w.u8(p.flags)
                if p.flags & 2 != 0 { w.string(p.destination ?? "") }
            }
            for groups in [entity.uniqueness, entity.indices] {
                w.varint(groups.count)
                for group in groups {
                    w.varint(group.count)
                    for name in group { w.string(name) }
                }
            }
        }
    }

    /// Reads a description in the header record's layout; a version 1 file has no
    /// external-storage flag.
    package static func decode(from r: inout LogByteReader, formatVersion: LogFormatVersion = LogFormat.version) throws
        -> StoredSchema
    {
        let allowedFlags: UInt8 = formatVersion.hasExternalStorage ? 15 : 7
        let version = [try r.varint(), try r.varint(), try r.varint()]
        let entityCount = try r.count()
        var entities: [Entity] = []
        for _ in 0..<entityCount {
            let name = try r.string()
            let superentity = formatVersion.recordsSuperentities ? try r.string() : ""
            let propertyCount = try r.count()
            var properties: [Property] = []
            for _ in 0..<propertyCount {
                let name = try r.string()
                let typeName = try r.string()
                let flags = try r.u8()
                guard flags & ~allowedFlags == 0, flags & 10 != 10 else {
                    throw LogDecodeError("unknown property flags \(flags)")
                }
                let destination = flags & 2 != 0 ? try r.string() : nil
                properties.append(Property(name: name, typeName: typeName, flags: flags, destination: destination))
            }
            var groupLists: [[[String]]] = []
            for _ in 0..<2 {
                var groups: [[String]] = []
                for _ in 0..<(try r.count()) {
                    var group: [String] = []
                    for _ in 0..<(try r.count()) { group.append(try r.string()) }
                    groups.append(group)
                }
                groupLists.append(groups)
            }
            entities.append(
                Entity(
                    name: name, properties: properties, uniqueness: groupLists[0], indices: groupLists[1],
                    superentity: superentity.isEmpty ? nil : superentity))
        }
        return StoredSchema(version: version, entities: entities)
    }
}
