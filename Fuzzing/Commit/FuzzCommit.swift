import Foundation
@_spi(Testing) import Stowage
import StowageTestSupport

/// The fuzz target's entry point: a commit record's payload (`Formats/log.md`, "Commit
/// record": its deletes, then its writes, in version 4 and later in checksummed blocks whose
/// writes may each be LZ4-compressed), after two bytes that choose a sample file's stored
/// schema and a format version, decoded as opening a log decodes it. The property: decoding
/// throws a `LogDecodeError` (a clear error) or gives a commit in which every write is a
/// snapshot of an entity of the schema with one value per property, and every delete names
/// an entity of the schema.
func fuzzCommit(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    guard let (sample, version, payload) = FuzzSamples.split(data, count) else { return 0 }
    let map = sample.map(version)
    let commit: LogCommit
    do {
        commit = try LogCodec.decodeCommit(payload, map: map)
    } catch is LogDecodeError {
        return 0
    } catch {
        fatalError("decoding a commit threw something other than a LogDecodeError: \(error)")
    }
    let properties = Dictionary(
        sample.schema.entities.map { ($0.name, $0.properties.count) }, uniquingKeysWith: { first, _ in first })
    for write in commit.writes {
        guard let expected = properties[write.entity] else {
            fatalError("a write of \(write.entity), not in the schema")
        }
        guard write.snapshot.values.count == expected else {
            fatalError("a write of \(write.entity) with \(write.snapshot.values.count) values, not \(expected)")
        }
        guard write.snapshot.persistentIdentifier.entityName == write.entity else {
            fatalError("a write of \(write.entity) identified as \(write.snapshot.persistentIdentifier.entityName)")
        }
    }
    for delete in commit.deletes where properties[delete.entity] == nil {
        fatalError("a delete of \(delete.entity), not in the schema")
    }
    return 0
}

/// The samples' commits, each with the bytes that choose its file's schema and version.
func commitSeeds() -> [[UInt8]] {
    FuzzSamples.logs.flatMap { sample in
        sample.records.filter { $0.kind == .commit }.map {
            FuzzSamples.prefix(sample: sample.name, version: sample.version) + $0.payload
        }
    }
}
