import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

// File-scope wrappers: inside the types below, `open`, `rename` and `close` name methods.
private func posixOpen(_ path: String, _ flags: Int32, _ mode: mode_t = 0) -> Int32 { open(path, flags, mode) }
private func posixRename(_ from: String, _ to: String) -> Int32 { rename(from, to) }
private func posixClose(_ fd: Int32) -> Int32 { close(fd) }
private func posixLink(_ from: String, _ to: String) -> Int32 { link(from, to) }

/// How ``StoreFileSystem/open(_:mode:)`` opens a file.
public enum StoreFileOpenMode: Sendable {
    /// An existing file; `nil` when there is none.
    case existing
    /// A new file, created with mode 0600; fails if one exists.
    case createNew
    /// The file, created with mode 0600 if missing.
    case createOrOpen
    /// An existing file, for reading only (`O_RDONLY`); `nil` when there is none.
    case readOnly
}

/// The file operations the disk stores make (the log and JSON stores, and the `stowage`
/// tool through them), so that tests can make any of them fail.
///
/// Every failure is a ``DataStoreError`` with code `.ioFailure`. ``POSIXStoreFileSystem`` is
/// the real one; the tests' fault-injecting one wraps it.
public protocol StoreFileSystem: Sendable {
    /// Opens a file for reading and writing, or for reading only with `.readOnly`
    /// (close-on-exec).
    func open(_ path: String, mode: StoreFileOpenMode) throws -> Int32?
    /// The file's size in bytes.
    func size(_ fd: Int32) throws -> Int64
    /// The size in bytes of the file at `path`, or `nil` when there is none. The default
    /// opens, measures and closes it; ``POSIXStoreFileSystem`` makes one `stat` call.
    func size(ofFileAt path: String) throws -> Int64?
    /// Up to `count` bytes at `offset` (fewer only at the end of the file).
    func read(_ fd: Int32, count: Int, at offset: Int64) throws -> [UInt8]
    /// Writes all of `bytes` at `offset`.
    func write(_ fd: Int32, _ bytes: [UInt8], at offset: Int64) throws
    /// `fdatasync`.
    func sync(_ fd: Int32) throws
    /// `ftruncate`.
    func truncate(_ fd: Int32, to length: Int64) throws
    /// `rename`.
    func rename(_ from: String, to: String) throws
    /// Opens a directory and `fsync`s it, so that a rename in it is durable.
    func syncDirectory(_ path: String) throws
    /// `unlink`; a missing file is not an error.
    func remove(_ path: String) throws
    /// An exclusive, non-blocking `flock`: `false` when someone else holds it.
    func lock(_ fd: Int32) throws -> Bool
    /// A shared, non-blocking `flock`: `false` when someone holds it exclusively.
    func sharedLock(_ fd: Int32) throws -> Bool
    /// `close`.
    func close(_ fd: Int32)
    /// Makes `destination` a hard link to the file at `source` (`link`): `false` when it
    /// cannot (another file system, or none that links), for the caller to copy instead.
    /// The default calls `link`.
    func link(_ source: String, to destination: String) -> Bool
}

/// The log store's file operations, straight to POSIX.
public struct POSIXStoreFileSystem: StoreFileSystem {
    /// The file system, through POSIX calls.
    public init() {}

    package static func failure(_ operation: String, _ path: String?, _ code: Int32 = errno) -> DataStoreError {
        let reason = String(cString: strerror(code))
        return DataStoreError(
            .ioFailure, "\(operation)\(path.map { " \($0)" } ?? "") failed: \(reason) (errno \(code))")
    }

    /// Opens `path` for reading and writing (or reading only), creating it with mode 0600
    /// as `mode` says; `nil` when it must exist and does not.
    public func open(_ path: String, mode: StoreFileOpenMode) throws -> Int32? {
        var flags = O_RDWR | O_CLOEXEC
        switch mode {
        case .existing: break
        case .createNew: flags |= O_CREAT | O_EXCL
        case .createOrOpen: flags |= O_CREAT
        case .readOnly: flags = O_RDONLY | O_CLOEXEC
        }
        while true {
            let fd = posixOpen(path, flags, mode_t(0o600))
            if fd >= 0 { return fd }
            if errno == EINTR { continue }
            if errno == ENOENT && (mode == .existing || mode == .readOnly) { return nil }
            throw Self.failure("open", path)
        }
    }

    /// The length of the open file `fd`, from `fstat`.
    public func size(_ fd: Int32) throws -> Int64 {
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw Self.failure("fstat", nil) }
        return Int64(info.st_size)
    }

    /// The length of the file at `path`, from `stat`; `nil` when there is none.
    public func size(ofFileAt path: String) throws -> Int64? {
        var info = stat()
        guard stat(path, &info) == 0 else {
            if errno == ENOENT { return nil }
            throw Self.failure("stat", path)
        }
        return Int64(info.st_size)
    }

    /// Up to `count` bytes at `offset` with `pread`, fewer at the end of the file.
    public func read(_ fd: Int32, count: Int, at offset: Int64) throws -> [UInt8] {
        guard count > 0 else { return [] }
        // Not zeroed first: `pread` fills it (zeroing a checkpoint's megabytes only to
        // read over them slowed every open), and only the bytes read count.
        var failure: DataStoreError?
        let buffer = [UInt8](unsafeUninitializedCapacity: count) { raw, initialized in
            var done = 0
            while done < count {
                let n = pread(fd, raw.baseAddress! + done, count - done, off_t(offset) + off_t(done))
                if n < 0 {
                    if errno == EINTR { continue }
                    failure = Self.failure("pread", nil)
                    break
                }
                if n == 0 { break }
                done += n
            }
            initialized = done
        }
        if let failure { throw failure }
        return buffer
    }

    /// Writes all of `bytes` at `offset` with `pwrite`, continuing after a short write.
    public func write(_ fd: Int32, _ bytes: [UInt8], at offset: Int64) throws {
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { raw in
                pwrite(fd, raw.baseAddress! + done, bytes.count - done, off_t(offset) + off_t(done))
            }
            if n < 0 {
                if errno == EINTR { continue }
                throw Self.failure("pwrite", nil)
            }
            if n == 0 { throw Self.failure("pwrite", nil, EIO) }
            done += n
        }
    }

    /// `fdatasync`: the file's data, and the metadata needed to read it back, reach the disk.
    public func sync(_ fd: Int32) throws {
        guard fdatasync(fd) == 0 else { throw Self.failure("fdatasync", nil) }
    }

    /// `ftruncate`: cuts the file (or extends it with zeros) to `length` bytes.
    public func truncate(_ fd: Int32, to length: Int64) throws {
        while ftruncate(fd, off_t(length)) != 0 {
            if errno == EINTR { continue }
            throw Self.failure("ftruncate", nil)
        }
    }

    /// `rename`: replaces `to` with `from`, atomically.
    public func rename(_ from: String, to: String) throws {
        guard posixRename(from, to) == 0 else { throw Self.failure("rename", from + " -> " + to) }
    }

    /// Opens the directory at `path` and `fsync`s it, so that a rename or a new file in it
    /// survives a crash.
    public func syncDirectory(_ path: String) throws {
        let fd = posixOpen(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw Self.failure("open directory", path) }
        defer { _ = posixClose(fd) }
        guard fsync(fd) == 0 else { throw Self.failure("fsync directory", path) }
    }

    /// `unlink`; a file that is already gone is not an error.
    public func remove(_ path: String) throws {
        guard unlink(path) == 0 || errno == ENOENT else { throw Self.failure("unlink", path) }
    }

    /// Takes an exclusive `flock` without waiting; `false` when another holder has it.
    public func lock(_ fd: Int32) throws -> Bool { try Self.flockNonBlocking(fd, LOCK_EX) }

    /// Takes a shared `flock` without waiting; `false` when a writer holds it exclusively.
    public func sharedLock(_ fd: Int32) throws -> Bool { try Self.flockNonBlocking(fd, LOCK_SH) }

    private static func flockNonBlocking(_ fd: Int32, _ operation: Int32) throws -> Bool {
        while flock(fd, operation | LOCK_NB) != 0 {
            if errno == EINTR { continue }
            if errno == EWOULDBLOCK { return false }
            throw failure("flock", nil)
        }
        return true
    }

    /// `close`.
    public func close(_ fd: Int32) {
        _ = posixClose(fd)
    }
}

extension StoreFileSystem {
    /// Makes `destination` a hard link to `source` with `link`; `false` when it cannot.
    public func link(_ source: String, to destination: String) -> Bool {
        posixLink(source, destination) == 0
    }

    /// The length of the file at `path`, opened for reading; `nil` when there is none.
    public func size(ofFileAt path: String) throws -> Int64? {
        guard let fd = try open(path, mode: .readOnly) else { return nil }
        defer { close(fd) }
        return try size(fd)
    }

    /// A second descriptor for the open file `fd` (`dup`), which the caller closes.
    public func duplicate(_ fd: Int32) throws -> Int32 {
        let copy = dup(fd)
        guard copy >= 0 else { throw POSIXStoreFileSystem.failure("dup", nil) }
        return copy
    }

    /// Opens an existing store's file for reading only, under the shared lock of
    /// ``lockStore(path:directory:kind:shared:)``: for a store opened with `allowsSave`
    /// false. The caller closes both descriptors (the lock's only when it is not -1).
    /// - Throws: `.ioFailure` when there is no file (nothing is created, not even the lock
    ///   file); `.storeLocked` when a writer has the store open.
    func openReadOnlyStore(path: String, directory: String, kind: String) throws -> (fd: Int32, lockFD: Int32) {
        let missing = DataStoreError(
            .ioFailure, "there is no \(kind) at \(path); a store opened read-only (allowsSave: false) is never created")
        // Looked for before the lock, so that a missing store leaves nothing behind; opened
        // after it, so that it is the file the last writer left.
        guard try size(ofFileAt: path) != nil else { throw missing }
        let lockFD = try lockStore(path: path, directory: directory, kind: kind, shared: true)
        do {
            guard let fd = try open(path, mode: .readOnly) else { throw missing }
            return (fd, lockFD)
        } catch {
            if lockFD >= 0 { close(lockFD) }
            throw error
        }
    }

    /// Creates the store's directory if needed (mode 0700), then opens `<path>.lock` and
    /// takes its exclusive lock, for every store that keeps one file. Returns the lock's
    /// descriptor; the caller closes it when the store closes or its open fails.
    ///
    /// With `shared` (a store opened read-only), it creates nothing it can do without: it
    /// takes a shared lock, which other read-only openers share and a writer excludes, on
    /// the lock file opened for reading, creating the file only when there is none. When
    /// the file can be neither opened nor created (a read-only directory or file system,
    /// or a lock file that only its owner may read), it returns -1: no lock. Then only a
    /// writer allowed to write where this opener may not can open the store meanwhile.
    ///
    /// A process forked by this one (to exec something else) holds a copy of the
    /// descriptor, and so the lock, until it execs, so the lock is retried for ~100 ms.
    /// - Throws: ``DataStoreError`` `.storeLocked` when another opener holds it (another
    ///   process, or another container in this one); `.ioFailure` otherwise.
    package func lockStore(path: String, directory: String, kind: String, shared: Bool = false) throws -> Int32 {
        let lockPath = path + ".lock"
        let lockFD: Int32
        if shared {
            if let existing = try? open(lockPath, mode: .readOnly) {
                lockFD = existing
            } else if let created = try? open(lockPath, mode: .createOrOpen) {
                lockFD = created
            } else {
                return -1
            }
        } else {
            if !FileManager.default.fileExists(atPath: directory) {
                do {
                    try FileManager.default.createDirectory(
                        atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
                } catch {
                    throw DataStoreError(
                        .ioFailure, "cannot create the directory \(directory) for the \(kind): \(error)")
                }
            }
            guard let fd = try open(lockPath, mode: .createOrOpen) else {
                throw DataStoreError(.ioFailure, "cannot open the lock file \(lockPath)")
            }
            lockFD = fd
        }
        do {
            let take = { try shared ? self.sharedLock(lockFD) : self.lock(lockFD) }
            var locked = try take()
            for _ in 0..<20 where !locked {
                usleep(5_000)
                locked = try take()
            }
            guard locked else {
                throw DataStoreError(
                    .storeLocked,
                    shared
                        ? "the \(kind) at \(path) is open for writing elsewhere (another process, or another "
                            + "container in this one); close it there first"
                        : "the \(kind) at \(path) is open elsewhere (another process, or another container in "
                            + "this one, writing or reading); close it there first")
            }
            return lockFD
        } catch {
            close(lockFD)
            throw error
        }
    }
}
