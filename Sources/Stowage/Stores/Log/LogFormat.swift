/// The byte layout of a log file: the file header and record framing (`Formats/log.md`).
package enum LogFormat {
    package static let magic: [UInt8] = Array("STOWLOG".utf8) + [0]
    /// The version this Stowage writes when it creates or rewrites a file.
    package static let version: LogFormatVersion = .current
    /// The versions it reads (and appends to).
    package static let readableVersions: ClosedRange<LogFormatVersion> = LogFormatVersion.readable
    package static let fileHeaderSize = 32
    package static let frameSize = 16
    static let maximumPayload = 0x7E00_0000
    /// Payloads shorter than this are stored raw.
    static let compressionThreshold = 64

    package enum RecordType: UInt8 {
        case header = 1
        case commit = 2
        case checkpoint = 3
        case layout = 4
        case history = 5
    }

    package struct FileHeader: Equatable {
        package var salt: UInt64
        package var generation: UInt64
        package var version: LogFormatVersion = LogFormat.version

        package init(salt: UInt64, generation: UInt64, version: LogFormatVersion = LogFormat.version) {
            self.salt = salt
            self.generation = generation
            self.version = version
        }
    }

    static func encodeFileHeader(_ header: FileHeader) -> [UInt8] {
        var w = LogByteWriter(capacity: fileHeaderSize)
        w.bytes.append(contentsOf: magic)
        w.u16(header.version.rawValue)
        w.u16(0)
        w.u64(header.salt)
        w.u64(header.generation)
        w.u32(CRC32C.mask(CRC32C.checksum(w.bytes)))
        return w.bytes
    }

    /// Why a file header was refused.
    package enum HeaderProblem: Error {
        /// Not a log file at all (or another version): `wrongFormat`.
        case wrongFormat(String)
        /// A log file whose header is damaged: `corruptStore`.
        case damaged(String)
    }

    /// The first bytes of a file (up to the magic's 8), quoted with anything unprintable
    /// escaped, for an error that says what was found instead of the magic.
    package static func describeStart(_ bytes: [UInt8]) -> String {
        var text = "\""
        for byte in bytes.prefix(magic.count) {
            switch byte {
            case 0: text += "\\0"
            case 0x0A: text += "\\n"
            case 0x0D: text += "\\r"
            case 0x09: text += "\\t"
            case 0x22: text += "\\\""
            case 0x5C: text += "\\\\"
            case 0x20...0x7E: text.unicodeScalars.append(Unicode.Scalar(byte))
            default: text += "\\x" + (byte < 16 ? "0" : "") + String(byte, radix: 16, uppercase: true)
            }
        }
        return text + "\""
    }

    /// Checks the first bytes of a file (up to 32 of them; `fileSize` is the whole file's).
    package static func decodeFileHeader(_ bytes: [UInt8], fileSize: Int64) -> Result<FileHeader, HeaderProblem> {
        if fileSize == 0 {
            return .failure(.wrongFormat("the file is empty, so it is not a Stowage log store"))
        }
        let prefix = min(bytes.count, magic.count)
        guard bytes.count > 0, Array(bytes[0..<prefix]) == Array(magic[0..<prefix]) else {
            return .failure(
                .wrongFormat(
                    "the file starts with \(describeStart(bytes)), not the Stowage log magic \"STOWLOG\" and a zero byte"
                ))
        }
        guard bytes.count >= fileHeaderSize else {
            return .failure(
                .damaged("the file header is cut short: the file has \(fileSize) bytes, the header needs 32"))
        }
        var r = LogByteReader(bytes, position: 8)
        let version = LogFormatVersion(rawValue: UInt16(bytes[8]) | UInt16(bytes[9]) << 8)
        let flags = UInt16(bytes[10]) | UInt16(bytes[11]) << 8
        guard readableVersions.contains(version) else {
            return .failure(
                .wrongFormat(
                    "the file is log format version \(version); this Stowage reads versions "
                        + "\(readableVersions.lowerBound) to \(readableVersions.upperBound)"))
        }
        let stored = UInt32(bytes[28]) | UInt32(bytes[29]) << 8 | UInt32(bytes[30]) << 16 | UInt32(bytes[31]) << 24
        guard CRC32C.mask(CRC32C.checksum(Array(bytes[0..<28]))) == stored else {
            return .failure(.damaged("the file header's checksum does not match (offset 0)"))
        }
        guard flags == 0 else { return .failure(.damaged("the file header has unknown flags \(flags) (offset 10)")) }
        _ = try? r.bytes(4)
        guard let salt = try? r.u64(), let generation = try? r.u64() else {
            return .failure(.damaged("the file header is cut short"))
        }
        return .success(FileHeader(salt: salt, generation: generation, version: version))
    }

    /// One framed record, ready to write at `offset`: compressed if that pays. The
    /// payload is compressed straight into the record's buffer, after room for the frame,
    /// so that a large save holds no third copy of its bytes.
    package static func frame(
        type: RecordType, payload: [UInt8], salt: UInt64, offset: Int64, compress: Bool = true
    ) -> [UInt8] {
        var record: [UInt8]
        var flags: UInt8 = 0
        if compress, payload.count >= compressionThreshold,
            let compressed = LZ4Block.compress(payload, headroom: frameSize)
        {
            record = compressed
            flags = 1
        } else {
            record = [UInt8](repeating: 0, count: frameSize)
            record.reserveCapacity(frameSize + payload.count)
            record.append(contentsOf: payload)
        }
        fillFrame(&record, type: type, flags: flags, payloadLength: payload.count, salt: salt, offset: offset)
        return record
    }

    /// Writes the frame into the first 16 bytes of `record`, whose stored payload follows
    /// them; `payloadLength` is the payload's length before compression.
    static func fillFrame(
        _ record: inout [UInt8], type: RecordType, flags: UInt8, payloadLength: Int, salt: UInt64, offset: Int64
    ) {
        let storedCount = record.count - frameSize
        let storedCRC = record.withUnsafeBytes { CRC32C.update(0, UnsafeRawBufferPointer(rebasing: $0[frameSize...])) }
        let frame = frameBytes(
            type: type, flags: flags, storedCount: storedCount, payloadLength: payloadLength, salt: salt,
            offset: offset,
            storedCRC: storedCRC, storedLength: storedCount)
        record.replaceSubrange(0..<frameSize, with: frame)
    }

    /// The 16 frame bytes of a record whose stored bytes (`storedLength` of them) have the
    /// CRC32C `storedCRC`: the checksum covers the salt, the offset, the frame's first 12
    /// bytes and the stored bytes, combined here without the stored bytes themselves.
    static func frameBytes(
        type: RecordType, flags: UInt8, storedCount: Int, payloadLength: Int, salt: UInt64, offset: Int64,
        storedCRC: UInt32, storedLength: Int
    ) -> [UInt8] {
        var w = LogByteWriter(capacity: frameSize)
        w.u32(UInt32(storedCount))
        w.u8(type.rawValue)
        w.u8(flags)
        w.u16(0)
        w.u32(UInt32(payloadLength))
        var prefix = LogByteWriter(capacity: 28)
        prefix.u64(salt)
        prefix.u64(UInt64(bitPattern: offset))
        prefix.bytes.append(contentsOf: w.bytes)
        let crc = CRC32C.combine(CRC32C.checksum(prefix.bytes), storedCRC, lengthB: storedLength)
        w.u32(CRC32C.mask(crc))
        return w.bytes
    }

    package static func checksum(frame: [UInt8], payload: [UInt8], salt: UInt64, offset: Int64) -> UInt32 {
        var prefix = LogByteWriter(capacity: 28)
        prefix.u64(salt)
        prefix.u64(UInt64(bitPattern: offset))
        prefix.bytes.append(contentsOf: frame[0..<12])
        return CRC32C.update(CRC32C.update(0, prefix.bytes), payload)
    }

    /// What the reader found at an offset.
    package enum ReadOutcome {
        /// A valid record: its type, its (decompressed) payload, and the offset after it.
        case record(RecordType, [UInt8], next: Int64)
        /// The end of the log: the end of the file, or the start of its reserved tail
        /// (zero bytes from here to the end of the file, `Formats/log.md`, "Writing").
        case end
        /// A torn or damaged record; the reason says which check failed.
        case damaged(String)
    }

    /// Whether every byte from `offset` to the end of the file is zero: the tail a writer
    /// reserves ahead of its records (`Formats/log.md`, "Writing"), which ends the log and
    /// is not damage. Reads at most 1 MiB at a time.
    static func isReservedTail(_ fs: any StoreFileSystem, _ fd: Int32, from offset: Int64, fileSize: Int64)
        throws
        -> Bool
    {
        var at = offset
        while at < fileSize {
            let count = Int(min(fileSize - at, 1 << 20))
            let bytes = try fs.read(fd, count: count, at: at)
            guard bytes.count == count, !bytes.contains(where: { $0 != 0 }) else { return false }
            at += Int64(count)
        }
        return true
    }

    /// Reads and checks the record at `offset`, in the order `Formats/log.md` gives.
    package static func readRecord(
        _ fs: any StoreFileSystem, _ fd: Int32, at offset: Int64, fileSize: Int64, salt: UInt64
    ) throws -> ReadOutcome {
        if offset == fileSize { return .end }
        let left = fileSize - offset
        guard left >= Int64(frameSize) else {
            if try isReservedTail(fs, fd, from: offset, fileSize: fileSize) { return .end }
            return .damaged("a torn record: \(left) bytes at offset \(offset), a record frame needs \(frameSize)")
        }
        let frame = try fs.read(fd, count: frameSize, at: offset)
        guard frame.count == frameSize else { return .damaged("the file ended inside the frame at offset \(offset)") }
        if frame.allSatisfy({ $0 == 0 }),
            try isReservedTail(fs, fd, from: offset + Int64(frameSize), fileSize: fileSize)
        {
            return .end
        }
        func u32(_ at: Int) -> UInt32 {
            UInt32(frame[at]) | UInt32(frame[at + 1]) << 8 | UInt32(frame[at + 2]) << 16 | UInt32(frame[at + 3]) << 24
        }
        let storedLength = Int64(u32(0))
        let uncompressedLength = Int64(u32(8))
        guard let type = RecordType(rawValue: frame[4]) else {
            return .damaged("unknown record type \(frame[4]) at offset \(offset)")
        }
        let flags = frame[5]
        guard flags & ~1 == 0, frame[6] == 0, frame[7] == 0 else {
            return .damaged("unknown record flags at offset \(offset)")
        }
        guard storedLength <= left - Int64(frameSize), storedLength <= Int64(maximumPayload) else {
            return .damaged(
                "a torn record: its length \(storedLength) at offset \(offset) runs past the end of the file")
        }
        let compressed = flags & 1 != 0
        if compressed {
            guard storedLength > 0, uncompressedLength <= min(Int64(maximumPayload), storedLength * 255) else {
                return .damaged("an impossible uncompressed length \(uncompressedLength) at offset \(offset)")
            }
        } else {
            guard uncompressedLength == storedLength else {
                return .damaged("the lengths of the raw record at offset \(offset) disagree")
            }
        }
        let stored = try fs.read(fd, count: Int(storedLength), at: offset + Int64(frameSize))
        guard stored.count == Int(storedLength) else {
            return .damaged("the file ended inside the record at offset \(offset)")
        }
        guard checksum(frame: frame, payload: stored, salt: salt, offset: offset) == CRC32C.unmask(u32(12)) else {
            return .damaged("the checksum of the record at offset \(offset) does not match")
        }
        let next = offset + Int64(frameSize) + storedLength
        guard compressed else { return .record(type, stored, next: next) }
        guard let payload = LZ4Block.decompress(stored, length: Int(uncompressedLength)) else {
            return .damaged("the LZ4 payload of the record at offset \(offset) does not decompress")
        }
        return .record(type, payload, next: next)
    }
}
