import Foundation
@_spi(Testing) import Stowage
import StowageTestSupport

/// The fuzz target's entry point: a log file's header record payload (the store's
/// identifier, its creation time and the stored schema, `Formats/log.md`, "Header record"),
/// after two bytes of which the second chooses a format version. The property: decoding
/// throws a `LogDecodeError` or gives a schema that encodes to a payload which decodes again
/// to the same header, and an entity map can be made from it.
func fuzzStoredSchema(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    guard let (_, version, payload) = FuzzSamples.split(data, count) else { return 0 }
    let header: (storeIdentifier: String, createdAt: Int64, schema: StoredSchema)
    do {
        header = try LogCodec.decodeHeader(payload, formatVersion: version)
    } catch is LogDecodeError {
        return 0
    } catch {
        fatalError("decoding a header record threw something other than a LogDecodeError: \(error)")
    }
    let encoded = LogCodec.encodeHeader(
        storeIdentifier: header.storeIdentifier, createdAt: header.createdAt, schema: header.schema,
        formatVersion: version)
    do {
        let again = try LogCodec.decodeHeader(encoded, formatVersion: version)
        guard again.storeIdentifier == header.storeIdentifier, again.createdAt == header.createdAt,
            again.schema == header.schema
        else { fatalError("a decoded header record encodes to a different one") }
    } catch {
        fatalError("a decoded header record, encoded again, does not decode: \(error)")
    }
    let map = LogEntityMap(storeIdentifier: header.storeIdentifier, description: header.schema, formatVersion: version)
    fuzzSink = map.names.count
    return 0
}

/// Where a result goes, so that the optimizer keeps the work.
nonisolated(unsafe) var fuzzSink = 0

/// The samples' header records, each with its file's version.
func storedSchemaSeeds() -> [[UInt8]] {
    FuzzSamples.logs.map { FuzzSamples.prefix(sample: $0.name, version: $0.version) + $0.headerPayload }
}
