import Foundation

/// What starts every log file: the file header and the header record (`Formats/log.md`).
/// The store reads it to open a file, and the `stowage` tool to inspect one.
package struct LogPreamble {
    package var header: LogFormat.FileHeader
    package var storeIdentifier: String
    package var createdAt: Int64
    package var schema: StoredSchema
    /// The header record's payload, in bytes, and as stored (after its frame).
    package var payloadBytes: Int
    package var storedPayloadBytes: Int64
    /// Where the commits start: the end of the header record.
    package var commitsStart: Int64

    /// Why a file has no usable preamble.
    package enum Problem: Error {
        /// Not a log file this Stowage reads (another format, or another version).
        case wrongFormat(String)
        /// A log file whose header or header record is damaged at `offset`; `header` is the
        /// file header when that much was whole.
        case damaged(offset: Int64, reason: String, header: LogFormat.FileHeader?)
    }

    /// Reads and checks the preamble of the file open at `fd`.
    /// - Throws: the file system's error when a read fails.
    package static func read(_ fs: any StoreFileSystem, _ fd: Int32, fileSize size: Int64) throws -> Result<
        Self, Problem
    > {
        let first = try fs.read(fd, count: LogFormat.fileHeaderSize, at: 0)
        let header: LogFormat.FileHeader
        switch LogFormat.decodeFileHeader(first, fileSize: size) {
        case .success(let decoded): header = decoded
        case .failure(.wrongFormat(let reason)): return .failure(.wrongFormat(reason))
        case .failure(.damaged(let reason)): return .failure(.damaged(offset: 0, reason: reason, header: nil))
        }
        // The header record: without it nothing in the file can be read.
        let offset = Int64(LogFormat.fileHeaderSize)
        func damaged(_ reason: String) -> Result<Self, Problem> {
            .failure(.damaged(offset: offset, reason: reason, header: header))
        }
        switch try LogFormat.readRecord(fs, fd, at: offset, fileSize: size, salt: header.salt) {
        case .record(.header, let payload, let next):
            do {
                let decoded = try LogCodec.decodeHeader(payload, formatVersion: header.version)
                return .success(
                    LogPreamble(
                        header: header, storeIdentifier: decoded.storeIdentifier, createdAt: decoded.createdAt,
                        schema: decoded.schema, payloadBytes: payload.count,
                        storedPayloadBytes: next - offset - Int64(LogFormat.frameSize), commitsStart: next))
            } catch {
                return damaged("the header record at offset 32 does not decode: \(error)")
            }
        case .record(let type, _, _):
            return damaged("the record at offset 32 is of type \(type), not the header record")
        case .end:
            return damaged("the file ends before its header record (offset 32)")
        case .damaged(let reason):
            return damaged("the header record is damaged: \(reason)")
        }
    }
}
