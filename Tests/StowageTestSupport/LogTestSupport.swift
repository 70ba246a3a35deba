import Foundation
@_spi(Testing) import Stowage
import Synchronization

/// A fresh, unique directory for one log store test.
public struct LogTestDirectory: Sendable {
    public let url: URL

    /// The store file inside the directory.
    public var storeURL: URL { url.appendingPathComponent("store.stowlog") }

    public static func fresh() -> LogTestDirectory {
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("stowage-log-tests", isDirectory: true)
            .appendingPathComponent(UUID().uuidString, isDirectory: true)
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return LogTestDirectory(url: url)
    }

    /// Deletes the directory and everything in it; first, when `STOWAGE_KEEP_TEST_STORES`
    /// names a directory, copies the files the test wrote there (not lock files or folders), each
    /// named after this directory and its own name: the seeds `Scripts/fuzz test-seeds`
    /// gives the fuzz targets that read whole files.
    public func remove() {
        if let keep = ProcessInfo.processInfo.environment["STOWAGE_KEEP_TEST_STORES"], !keep.isEmpty {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? []
            for name in names where !name.hasSuffix(".lock") {
                var isDirectory: ObjCBool = false
                let source = url.appendingPathComponent(name).path
                guard FileManager.default.fileExists(atPath: source, isDirectory: &isDirectory), !isDirectory.boolValue
                else { continue }
                let target = URL(fileURLWithPath: keep).appendingPathComponent("\(url.lastPathComponent)-\(name)")
                try? FileManager.default.copyItem(at: url.appendingPathComponent(name), to: target)
            }
        }
        try? FileManager.default.removeItem(at: url)
    }
}

/// A file system that fails one chosen call: the Nth write, sync, truncate, rename or
/// directory sync after it is armed. A failing write first writes half its bytes, as a
/// torn write would.
public final class FaultInjectingFileSystem: StoreFileSystem {
    public enum Operation: String, Sendable, CaseIterable {
        case write, sync, truncate, rename, syncDirectory
    }

    private struct State {
        var counts: [Operation: Int] = [:]
        var failAt: [Operation: Int] = [:]
        var injected: [Operation] = []
        var totals: [Operation: Int] = [:]
        var beforeSync: (@Sendable (Int) -> Void)?
    }

    private let base = POSIXStoreFileSystem()
    private let state = PosixMutex(State())

    public init() {}

    /// Makes the `n`th call of `operation` from now on fail (1 is the next one).
    public func arm(_ operation: Operation, failOn n: Int) {
        state.withLock {
            $0.counts[operation] = 0
            $0.failAt[operation] = n
        }
    }

    /// Clears every armed failure.
    public func disarm() {
        state.withLock { $0.failAt = [:] }
    }

    /// How many times `operation` was called since this file system was made.
    public func calls(_ operation: Operation) -> Int { state.withLock { $0.totals[operation, default: 0] } }

    /// Runs before every sync, with the sync's number (1 is the first since the hook was
    /// set), outside any lock of the file system: a test can hold a sync here.
    public func setBeforeSync(_ hook: (@Sendable (Int) -> Void)?) {
        state.withLock {
            $0.beforeSync = hook
            $0.totals[.sync] = 0
        }
    }

    /// The failures injected so far.
    public var injected: [Operation] { state.withLock { $0.injected } }

    private func shouldFail(_ operation: Operation) -> Bool {
        state.withLock { s in
            s.counts[operation, default: 0] += 1
            s.totals[operation, default: 0] += 1
            guard let n = s.failAt[operation], s.counts[operation] == n else { return false }
            s.injected.append(operation)
            return true
        }
    }

    private func injected(_ operation: Operation) -> DataStoreError {
        DataStoreError(.ioFailure, "injected \(operation.rawValue) failure")
    }

    public func open(_ path: String, mode: StoreFileOpenMode) throws -> Int32? { try base.open(path, mode: mode) }
    public func size(_ fd: Int32) throws -> Int64 { try base.size(fd) }
    public func read(_ fd: Int32, count: Int, at offset: Int64) throws -> [UInt8] {
        try base.read(fd, count: count, at: offset)
    }

    public func write(_ fd: Int32, _ bytes: [UInt8], at offset: Int64) throws {
        if shouldFail(.write) {
            try? base.write(fd, Array(bytes.prefix(bytes.count / 2)), at: offset)
            throw injected(.write)
        }
        try base.write(fd, bytes, at: offset)
    }

    public func sync(_ fd: Int32) throws {
        let (hook, number) = state.withLock { ($0.beforeSync, $0.totals[.sync, default: 0] + 1) }
        hook?(number)
        if shouldFail(.sync) { throw injected(.sync) }
        try base.sync(fd)
    }

    public func truncate(_ fd: Int32, to length: Int64) throws {
        if shouldFail(.truncate) { throw injected(.truncate) }
        try base.truncate(fd, to: length)
    }

    public func rename(_ from: String, to: String) throws {
        if shouldFail(.rename) { throw injected(.rename) }
        try base.rename(from, to: to)
    }

    public func syncDirectory(_ path: String) throws {
        if shouldFail(.syncDirectory) { throw injected(.syncDirectory) }
        try base.syncDirectory(path)
    }

    public func remove(_ path: String) throws { try base.remove(path) }
    public func lock(_ fd: Int32) throws -> Bool { try base.lock(fd) }
    public func sharedLock(_ fd: Int32) throws -> Bool { try base.sharedLock(fd) }
    public func close(_ fd: Int32) { base.close(fd) }
}

/// The real file system, made read-only as a read-only mount would be: opening a file
/// other than for reading only, and every write, sync, truncate, rename, directory sync
/// and removal, fails with "Read-only file system" and is recorded. Lets a test that runs
/// as root (whom file modes do not stop) prove that a store changes nothing.
public final class ReadOnlyFileSystem: StoreFileSystem {
    private let base = POSIXStoreFileSystem()
    private let refused = PosixMutex<[String]>([])

    public init() {}

    /// Every refused call, as "operation path-or-descriptor", in order.
    public var refusedCalls: [String] { refused.withLock { $0 } }

    private func refuse(_ call: String) -> DataStoreError {
        refused.withLock { $0.append(call) }
        return DataStoreError(.ioFailure, "\(call) failed: Read-only file system (errno 30)")
    }

    public func open(_ path: String, mode: StoreFileOpenMode) throws -> Int32? {
        guard mode == .readOnly else { throw refuse("open(\(mode)) \(path)") }
        return try base.open(path, mode: mode)
    }
    public func size(_ fd: Int32) throws -> Int64 { try base.size(fd) }
    public func size(ofFileAt path: String) throws -> Int64? { try base.size(ofFileAt: path) }
    public func read(_ fd: Int32, count: Int, at offset: Int64) throws -> [UInt8] {
        try base.read(fd, count: count, at: offset)
    }
    public func write(_ fd: Int32, _ bytes: [UInt8], at offset: Int64) throws { throw refuse("write \(fd)") }
    public func sync(_ fd: Int32) throws { throw refuse("sync \(fd)") }
    public func truncate(_ fd: Int32, to length: Int64) throws { throw refuse("truncate \(fd)") }
    public func rename(_ from: String, to: String) throws { throw refuse("rename \(from)") }
    public func syncDirectory(_ path: String) throws { throw refuse("syncDirectory \(path)") }
    public func remove(_ path: String) throws { throw refuse("remove \(path)") }
    public func lock(_ fd: Int32) throws -> Bool { try base.lock(fd) }
    public func sharedLock(_ fd: Int32) throws -> Bool { try base.sharedLock(fd) }
    public func close(_ fd: Int32) { base.close(fd) }
}

/// Every file under `directory` (recursively) with its bytes, keyed by relative path:
/// for checking that something left a directory exactly as it was.
public func directoryContents(_ directory: URL) -> [String: Data] {
    var contents: [String: Data] = [:]
    guard let enumerator = FileManager.default.enumerator(atPath: directory.path) else { return contents }
    while let relative = enumerator.nextObject() as? String {
        let url = directory.appendingPathComponent(relative)
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else { continue }
        contents[relative] = isDirectory.boolValue ? Data("<directory>".utf8) : (try? Data(contentsOf: url))
    }
    return contents
}
