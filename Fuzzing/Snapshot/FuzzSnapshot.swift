import Foundation
@_spi(Testing) import Stowage
import StowageTestSupport

/// The fuzz target's entry point: one snapshot as a commit holds it (`Formats/snapshot.md`:
/// its entity, key and tagged values, external references among them), after two bytes that
/// choose a sample file's stored schema and a format version. The property: decoding throws
/// a `LogDecodeError` or gives a snapshot that encodes to bytes from which decoding gives
/// the same bytes again; values are compared by their encoding, so that a NaN equals itself.
func fuzzSnapshot(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    guard let (sample, version, bytes) = FuzzSamples.split(data, count) else { return 0 }
    let map = sample.map(version)
    guard let first = decodeAndEncode(bytes, map: map, input: true) else { return 0 }
    guard let second = decodeAndEncode(first, map: map, input: false) else {
        fatalError("an encoded snapshot does not decode")
    }
    guard first == second else { fatalError("a snapshot encodes differently after a second decode") }
    return 0
}

/// The snapshot `bytes` start with, encoded again; `nil` when it does not decode, which
/// must be a `LogDecodeError` for an input and never happens for what the encoder wrote.
func decodeAndEncode(_ bytes: [UInt8], map: LogEntityMap, input: Bool) -> [UInt8]? {
    var r = LogByteReader(bytes)
    var references: [LogExternalReference] = []
    let snapshot: DefaultSnapshot
    do {
        snapshot = try LogCodec.decodeSnapshot(&r, map: map, externalReferences: &references)
    } catch let error as LogDecodeError {
        if input { return nil }
        fatalError("an encoded snapshot does not decode: \(error)")
    } catch {
        fatalError("decoding a snapshot threw something other than a LogDecodeError: \(error)")
    }
    guard let key = snapshot.persistentIdentifier.primaryKey else { fatalError("a decoded snapshot has no key") }
    var byPosition: [Int: LogExternalReference] = [:]
    for reference in references { byPosition[reference.property] = reference }
    var w = LogByteWriter()
    do {
        try LogCodec.encodeSnapshot(
            snapshot, key: key, entity: snapshot.persistentIdentifier.entityName, into: &w, map: map,
            external: { byPosition[$0] })
    } catch {
        fatalError("a decoded snapshot does not encode: \(error)")
    }
    return w.bytes
}

/// Every snapshot the samples' commits write, encoded alone, with the bytes that choose its
/// file's schema and version.
func snapshotSeeds() -> [[UInt8]] {
    FuzzSamples.logs.flatMap { sample -> [[UInt8]] in
        let map = sample.map(sample.version)
        let prefix = FuzzSamples.prefix(sample: sample.name, version: sample.version)
        return sample.records.filter { $0.kind == .commit }.flatMap { record -> [[UInt8]] in
            guard let commit = try? LogCodec.decodeCommit(record.payload, map: map) else { return [] }
            return commit.writes.enumerated().compactMap { index, write in
                var w = LogByteWriter()
                let references = commit.externalReferences[index] ?? []
                guard
                    (try? LogCodec.encodeSnapshot(
                        write.snapshot, key: write.key, entity: write.entity, into: &w, map: map,
                        external: { position in references.first { $0.property == position } })) != nil
                else { return nil }
                return prefix + w.bytes
            }
        }
    }
}
