import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A log file mapped read-only into memory (`mmap`, shared), through which a reader takes a
/// block's bytes without a system call or a copy (`Formats/log.md`, "Reading records"). The
/// kernel's page cache is then the cache of the file's bytes, shared with every other reader
/// of the file and given back under memory pressure; ``BlockCache`` keeps where each write
/// of a block starts and the writes it decoded, not the bytes.
///
/// A mapping is longer than the file was when it was made (half as long again, at least
/// 16 MiB more: `headroom`), so that the records later saves append are in it too; only bytes below the
/// file's size, as last seen, are ever touched (a page past the end of a file raises
/// `SIGBUS`). The file only grows while the store is open: its writer appends, and cuts off
/// only bytes no record location refers to. A mapping is never unmapped while its reader
/// lives, since a block taken from it may still be being decoded.
final class LogFileMapping: @unchecked Sendable {
    let base: UnsafeRawPointer
    /// The bytes mapped.
    let length: Int

    /// Maps the file open at `fd`, whose size is `fileSize`; `nil` if `mmap` fails (the
    /// reader then reads with `pread`, as for any other file system).
    init?(fd: Int32, fileSize: Int64, headroom: Int64? = nil) {
        let page = Int64(max(4096, sysconf(Int32(_SC_PAGESIZE))))
        let wanted = fileSize + (headroom ?? max(fileSize / 2, 16 << 20))
        let rounded = (wanted + page - 1) / page * page
        guard rounded > 0, rounded <= Int64(Int.max) else { return nil }
        let pointer = mmap(nil, Int(rounded), PROT_READ, MAP_SHARED, fd, 0)
        guard let pointer, pointer != MAP_FAILED else { return nil }
        base = UnsafeRawPointer(pointer)
        length = Int(rounded)
    }

    deinit { munmap(UnsafeMutableRawPointer(mutating: base), length) }

    /// The `count` bytes at `offset`; the caller has checked that they are inside the file.
    func bytes(at offset: Int64, count: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: base + Int(offset), count: count)
    }
}

/// Where a block's bytes are in a mapping: a pointer the reader that made it keeps valid
/// (it holds every mapping it made until it goes).
struct MappedBytes: @unchecked Sendable {
    let buffer: UnsafeRawBufferPointer
}

/// A reader's mappings of its file: the one it maps new blocks through, and every earlier
/// one (kept until the reader goes, for the blocks taken from them), with the file's size as
/// last seen.
struct LogMappings {
    /// Whether the reader reads through mappings at all; cleared when `mmap` fails.
    var isEnabled = false
    private var current: LogFileMapping?
    private var earlier: [LogFileMapping] = []
    /// The file's size when last asked: no byte at or past it is touched.
    private var fileSize: Int64 = 0
    /// Mappings made (the first, and one each time the file outgrew the last).
    private(set) var made = 0
    /// How far a mapping reaches past the file's end, when not as ``LogFileMapping`` says;
    /// tests make it 0.
    var headroom: Int64?

    /// The `count` bytes at `offset` in a mapping, or `nil` when the file ends before them
    /// (as its size is now) or the file cannot be mapped. A request past the size last seen
    /// asks the file's size again, and past the mapping maps the file again.
    mutating func bytes(at offset: Int64, count: Int, fs: any StoreFileSystem, fd: Int32) throws
        -> UnsafeRawBufferPointer?
    {
        guard offset >= 0, count >= 0 else { return nil }
        let end = offset + Int64(count)
        if end > fileSize {
            fileSize = try fs.size(fd)
            guard end <= fileSize else { return nil }
        }
        if current == nil || end > Int64(current?.length ?? 0) {
            guard let mapping = LogFileMapping(fd: fd, fileSize: fileSize, headroom: headroom) else {
                isEnabled = false
                return nil
            }
            if let current { earlier.append(current) }
            current = mapping
            made += 1
        }
        return current?.bytes(at: offset, count: count)
    }
}
