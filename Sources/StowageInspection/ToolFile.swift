import Foundation
import Stowage

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

private func posixOpen(_ path: String, _ flags: Int32, _ mode: mode_t = 0) -> Int32 { open(path, flags, mode) }
private func posixClose(_ fd: Int32) -> Int32 { close(fd) }

/// A store file opened read-only by the tool. Reads go through the log store's own file
/// system (`pread`), so the log's record reader runs on it unchanged.
final class ToolFile {
    let fd: Int32
    let size: Int64
    let fs = POSIXStoreFileSystem()

    private init(fd: Int32, size: Int64) {
        self.fd = fd
        self.size = size
    }

    static func openForReading(_ path: String) throws(ToolFailure) -> ToolFile {
        var fd: Int32
        repeat {
            fd = posixOpen(path, O_RDONLY | O_CLOEXEC)
        } while fd < 0 && errno == EINTR
        guard fd >= 0 else {
            let code = errno
            if code == ENOENT { throw ToolFailure(.notAStore, "\(path): no such file") }
            throw ToolFailure(.io, "cannot open \(path): \(String(cString: strerror(code)))")
        }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let reason = String(cString: strerror(errno))
            _ = posixClose(fd)
            throw ToolFailure(.io, "cannot read \(path): \(reason)")
        }
        if (info.st_mode & S_IFMT) == S_IFDIR {
            _ = posixClose(fd)
            throw ToolFailure(.notAStore, "\(path) is a directory, not a store file")
        }
        return ToolFile(fd: fd, size: Int64(info.st_size))
    }

    func read(count: Int, at offset: Int64) throws(ToolFailure) -> [UInt8] {
        do {
            return try fs.read(fd, count: count, at: offset)
        } catch {
            throw ToolFailure(.io, "reading the file failed: \(error)")
        }
    }

    func close() { _ = posixClose(fd) }
}

/// The file operations of `recover` and `compact`, which hold the store's lock.
enum ToolFileOperations {
    /// Takes the store's lock (`<file>.lock`, as the store itself does), or fails with
    /// `.locked` when another process has the store open.
    static func lock(_ path: String) throws(ToolFailure) -> Int32 {
        let url = URL(fileURLWithPath: path)
        do {
            return try POSIXStoreFileSystem().lockStore(
                path: url.path, directory: url.deletingLastPathComponent().path, kind: "store")
        } catch let error as DataStoreError where error.code == .storeLocked {
            throw ToolFailure(
                .locked,
                "\(path): the store is open in another process (its lock \(path).lock is held); close it there first")
        } catch {
            throw ToolFailure(.io, "\(path): cannot take the store's lock: \(error)")
        }
    }

    static func unlock(_ fd: Int32) { _ = posixClose(fd) }

    static func directory(of path: String) -> String {
        URL(fileURLWithPath: path).deletingLastPathComponent().path
    }

    /// Copies `path` to a new file `backup` (mode 0600, refused if it exists), syncs the
    /// copy and the directory.
    static func backUp(_ path: String, to backup: String) throws(ToolFailure) {
        let fs = POSIXStoreFileSystem()
        let source = try ToolFile.openForReading(path)
        defer { source.close() }
        let target: Int32
        do {
            guard let fd = try fs.open(backup, mode: .createNew) else {
                throw ToolFailure(.io, "cannot create the backup \(backup)")
            }
            target = fd
        } catch let failure as ToolFailure {
            throw failure
        } catch {
            throw ToolFailure(.io, "cannot create the backup \(backup): \(error)")
        }
        defer { fs.close(target) }
        do {
            var offset: Int64 = 0
            let chunk = 1 << 20
            while offset < source.size {
                let bytes = try source.read(count: Int(min(Int64(chunk), source.size - offset)), at: offset)
                guard !bytes.isEmpty else { break }
                try fs.write(target, bytes, at: offset)
                offset += Int64(bytes.count)
            }
            guard offset == source.size else { throw ToolFailure(.io, "\(path) changed while it was copied") }
            guard fsync(target) == 0 else { throw POSIXStoreFileSystem.failure("fsync", backup) }
            try fs.syncDirectory(directory(of: backup))
        } catch let failure as ToolFailure {
            try? fs.remove(backup)
            throw failure
        } catch {
            try? fs.remove(backup)
            throw ToolFailure(.io, "writing the backup \(backup) failed: \(error)")
        }
    }

    /// Cuts the file to `length` bytes and syncs it.
    static func truncate(_ path: String, to length: Int64) throws(ToolFailure) {
        let fs = POSIXStoreFileSystem()
        do {
            guard let fd = try fs.open(path, mode: .existing) else { throw ToolFailure(.io, "\(path) has gone") }
            defer { fs.close(fd) }
            try fs.truncate(fd, to: length)
            try fs.sync(fd)
        } catch let failure as ToolFailure {
            throw failure
        } catch {
            throw ToolFailure(.io, "truncating \(path) failed: \(error)")
        }
    }
}
