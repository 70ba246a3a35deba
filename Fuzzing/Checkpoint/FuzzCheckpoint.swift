import Foundation
@_spi(Testing) import Stowage
import StowageTestSupport

/// The fuzz target's entry point: a checkpoint record's payload (`Formats/log.md`,
/// "Checkpoint record"), after two bytes that choose a sample file's stored schema and a
/// format version, decoded as opening a log decodes it. The property: decoding throws a
/// `LogDecodeError` or gives a checkpoint that encodes to bytes which decode again to the
/// same checkpoint (what the decoder accepts, the writer can write).
func fuzzCheckpoint(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    guard let (sample, version, payload) = FuzzSamples.split(data, count), version.hasCheckpoints else { return 0 }
    let checkpoint: LogCheckpoint
    do {
        checkpoint = try LogCheckpoint.decode(payload, schema: sample.schema, formatVersion: version)
    } catch is LogDecodeError {
        return 0
    } catch {
        fatalError("decoding a checkpoint threw something other than a LogDecodeError: \(error)")
    }
    let encoded = checkpoint.encode()
    do {
        let again = try LogCheckpoint.decode(encoded, schema: sample.schema, formatVersion: version)
        guard again == checkpoint else { fatalError("a decoded checkpoint encodes to a different one") }
    } catch {
        fatalError("a decoded checkpoint, encoded again, does not decode: \(error)")
    }
    return 0
}

/// The checkpoints in the samples, each with the bytes that choose its file's schema and
/// version.
func checkpointSeeds() -> [[UInt8]] {
    FuzzSamples.logs.flatMap { sample in
        sample.records.filter { $0.kind == .checkpoint }.map {
            FuzzSamples.prefix(sample: sample.name, version: sample.version) + $0.payload
        }
    }
}
