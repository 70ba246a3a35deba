import Foundation
@_spi(Testing) import Stowage

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The real file system on a small disk: the files under `root` may take up at most
/// ``capacity`` bytes between them (their sizes added up; `nil` is no limit). A write that
/// would take more writes the bytes that fit, as a short `pwrite` does, then fails as the
/// next `pwrite` would: `ioFailure`, "pwrite failed: No space left on device (errno 28)".
/// While the disk is full (less than a page free), creating a file, a rename and a sync each
/// fail with ENOSPC one time in ``metadataFailureOdds``, as they can on a real disk (a new
/// directory entry, a file system that allocates at `fdatasync`).
///
/// Space is counted from the sizes the calls through it give the files, after one walk
/// of `root` when the capacity is set; directories, and files removed while open, take
/// none. Every call is serialized.
public final class DiskFullFileSystem: StoreFileSystem, @unchecked Sendable {
    private struct State {
        var capacity: Int64?
        var used: Int64 = 0
        var random: SeededRandom
        var metadataFailureOdds = 0
        /// ENOSPC failures injected, by the operation that failed.
        var failures: [String: Int] = [:]
    }

    public let root: String
    private let base = POSIXStoreFileSystem()
    private let state: PosixMutex<State>

    /// A file system on a disk of unlimited size, with failures drawn from `seed`.
    public init(root: URL, seed: UInt64) {
        self.root = root.standardizedFileURL.path
        self.state = PosixMutex(State(random: SeededRandom(seed: seed)))
    }

    /// The bytes the files under `root` take now, counted afresh.
    public func usedBytes() -> Int64 {
        var total: Int64 = 0
        guard let enumerator = FileManager.default.enumerator(atPath: root) else { return 0 }
        while let relative = enumerator.nextObject() as? String {
            if let size = try? base.size(ofFileAt: root + "/" + relative), size > 0 { total += size }
        }
        return total
    }

    /// Sets the disk's size (`nil`: space frees up, no limit), after counting what the files
    /// take now, and how often metadata calls fail while the disk is full (one time in
    /// `odds`; 0 never).
    public func setCapacity(_ capacity: Int64?, metadataFailureOdds odds: Int = 0) {
        let used = usedBytes()
        state.withLock {
            $0.capacity = capacity
            $0.used = used
            $0.metadataFailureOdds = odds
        }
    }

    /// Sets the capacity to what the files take now plus `free` bytes.
    public func leave(free: Int64, metadataFailureOdds odds: Int = 0) {
        setCapacity(usedBytes() + max(0, free), metadataFailureOdds: odds)
    }

    public var capacity: Int64? { state.withLock { $0.capacity } }
    public var used: Int64 { state.withLock { $0.used } }

    /// ENOSPC failures injected so far, by operation ("pwrite", "open", "rename", "fdatasync").
    public var failures: [String: Int] { state.withLock { $0.failures } }

    private static func noSpace(_ operation: String, _ path: String?) -> DataStoreError {
        POSIXStoreFileSystem.failure(operation, path, ENOSPC)
    }

    /// Whether a metadata call fails now (called with the state locked).
    private static func metadataFails(_ s: inout State, _ operation: String) -> Bool {
        guard let capacity = s.capacity, s.metadataFailureOdds > 0, capacity - s.used < 4096,
            Int.random(in: 0..<s.metadataFailureOdds, using: &s.random) == 0
        else { return false }
        s.failures[operation, default: 0] += 1
        return true
    }

    public func open(_ path: String, mode: StoreFileOpenMode) throws -> Int32? {
        try state.withLock { s in
            if mode == .createNew || (mode == .createOrOpen && (try? base.size(ofFileAt: path)) ?? nil == nil),
                Self.metadataFails(&s, "open")
            {
                throw Self.noSpace("open", path)
            }
            return try base.open(path, mode: mode)
        }
    }

    public func size(_ fd: Int32) throws -> Int64 { try base.size(fd) }
    public func size(ofFileAt path: String) throws -> Int64? { try base.size(ofFileAt: path) }
    public func read(_ fd: Int32, count: Int, at offset: Int64) throws -> [UInt8] {
        try base.read(fd, count: count, at: offset)
    }

    public func write(_ fd: Int32, _ bytes: [UInt8], at offset: Int64) throws {
        try state.withLock { s in
            let size = try base.size(fd)
            let end = offset + Int64(bytes.count)
            let growth = max(0, end - size)
            guard let capacity = s.capacity, s.used + growth > capacity else {
                try base.write(fd, bytes, at: offset)
                s.used += growth
                return
            }
            // What fits: the bytes over the file's present length, up to the free space.
            let fitting = Int(max(0, min(Int64(bytes.count), size + max(0, capacity - s.used) - offset)))
            if fitting > 0 {
                try base.write(fd, Array(bytes.prefix(fitting)), at: offset)
                s.used += max(0, offset + Int64(fitting) - size)
            }
            s.failures["pwrite", default: 0] += 1
            throw Self.noSpace("pwrite", nil)
        }
    }

    public func sync(_ fd: Int32) throws {
        try state.withLock { s in
            if Self.metadataFails(&s, "fdatasync") { throw Self.noSpace("fdatasync", nil) }
        }
        try base.sync(fd)
    }

    public func truncate(_ fd: Int32, to length: Int64) throws {
        try state.withLock { s in
            let size = try base.size(fd)
            let growth = length - size
            if growth > 0, let capacity = s.capacity, s.used + growth > capacity {
                s.failures["ftruncate", default: 0] += 1
                throw Self.noSpace("ftruncate", nil)
            }
            try base.truncate(fd, to: length)
            s.used += growth
        }
    }

    public func rename(_ from: String, to: String) throws {
        try state.withLock { s in
            if Self.metadataFails(&s, "rename") { throw Self.noSpace("rename", from + " -> " + to) }
            let replaced = (try? base.size(ofFileAt: to)) ?? nil
            try base.rename(from, to: to)
            s.used -= replaced ?? 0
        }
    }

    public func syncDirectory(_ path: String) throws { try base.syncDirectory(path) }

    public func remove(_ path: String) throws {
        try state.withLock { s in
            let removed = (try? base.size(ofFileAt: path)) ?? nil
            try base.remove(path)
            s.used -= removed ?? 0
        }
    }

    public func lock(_ fd: Int32) throws -> Bool { try base.lock(fd) }
    public func sharedLock(_ fd: Int32) throws -> Bool { try base.sharedLock(fd) }
    public func close(_ fd: Int32) { base.close(fd) }
}
