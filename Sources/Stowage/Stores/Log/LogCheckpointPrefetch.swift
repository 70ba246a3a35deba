import Foundation

/// Decodes a log's last checkpoint on another thread while opening replays the commits
/// before it. It finds the checkpoint by reading record frames alone (16 bytes each, no
/// payload); the replay still checks every record in order, and takes the decoded
/// checkpoint only for the record it reaches at the same offset.
package final class LogCheckpointPrefetch: @unchecked Sendable {
    /// Where the prefetched checkpoint starts.
    package let offset: Int64
    private let done = DispatchGroup()
    private var result: Result<(LogCheckpoint, next: Int64), any Error> = .failure(LogDecodeError("not decoded"))

    /// Starts decoding the last checkpoint the frames show (``LogFrames``, read here unless
    /// given): in version 4 the last one, in version 3 only one that ends the file.
    package static func start(
        _ fs: any StoreFileSystem, _ fd: Int32, from start: Int64, fileSize: Int64, salt: UInt64,
        schema: StoredSchema, formatVersion: LogFormatVersion, frames: LogFrames? = nil
    ) -> LogCheckpointPrefetch? {
        let frames =
            frames ?? (try? LogFrames.scan(fs, fd, from: start, fileSize: fileSize))
            ?? LogFrames(end: start)
        let last = frames.last
        let lastCheckpoint = frames.lastCheckpoint
        // Version 3 uses a checkpoint only when it ends the file; version 4 the last one.
        let found =
            formatVersion.checkpointsLocateRecords
            ? lastCheckpoint
            : last.flatMap {
                $0.type == LogFormat.RecordType.checkpoint.rawValue ? $0.offset : nil
            }
        guard let found else { return nil }
        let prefetch = LogCheckpointPrefetch(offset: found)
        prefetch.done.enter()
        DispatchQueue.global(qos: .userInitiated).async {
            defer { prefetch.done.leave() }
            prefetch.result = Result {
                guard
                    case .record(.checkpoint, let payload, let next) = try LogFormat.readRecord(
                        fs, fd, at: found, fileSize: fileSize, salt: salt)
                else { throw LogDecodeError("the record at offset \(found) is not a valid checkpoint") }
                return (
                    try LogCheckpoint.decode(payload, schema: schema, formatVersion: formatVersion, fileSize: fileSize),
                    next
                )
            }
        }
        return prefetch
    }

    private init(offset: Int64) { self.offset = offset }

    /// The decoded checkpoint and the offset after its record, once the other thread is
    /// done. It went through every check that replay makes of a record.
    package func checkpoint() throws -> (LogCheckpoint, next: Int64) {
        done.wait()
        return try result.get()
    }
}
