import Foundation
import Stowage

/// One row of a batch that the crash tests' child process (`LogCrashChild`) saves, and
/// that the tests read back: one declaration, so both open the same schema.
@Model
public final class CrashBatch {
    public var batch: Int
    public var index: Int
    public var payload: String
    /// Kept in a file beside the log (format version 2): the crash test checks those too.
    @Attribute(.externalStorage) public var blob: Data
    /// The log crash test reads batches through this index, which the child's
    /// checkpoints carry.
    #Index<CrashBatch>([\.batch])

    public init(batch: Int, index: Int, payload: String, blob: Data = Data()) {
        self.batch = batch
        self.index = index
        self.payload = payload
        self.blob = blob
    }

    /// The rows in batch `n`.
    public static func size(ofBatch n: Int) -> Int { 1 + (n &* 7919) % 40 }

    /// The payload of row `i` of batch `n`.
    public static func payload(batch n: Int, row i: Int) -> String {
        String(repeating: "batch \(n) row \(i) ", count: (n &* 31 &+ i) % 12)
    }

    /// The external bytes of row `i` of batch `n` (empty for one row in five).
    public static func blob(batch n: Int, row i: Int) -> Data {
        let count = (n &+ i) % 5 == 0 ? 0 : (n &* 131 &+ i &* 17) % 3000
        return Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ n &+ i) })
    }
}
