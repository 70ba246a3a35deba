import Foundation
import Stowage
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A file system that records every change a store makes under one directory (the
/// writes, truncations, syncs, file creations, renames, removals and directory syncs, in
/// order), passing each to the real file system, and then builds the states a power cut
/// at any point could have left on disk: everything synced before that point, plus any
/// subset of what was not.
///
/// A `kill -9` leaves the page cache, so every write survives it; a power cut keeps only
/// what was synced, and of the rest any part, in any order. This is the model of SQLite's
/// crash-test VFS and of ALICE ("All File Systems Are Not Created Equal", OSDI 2014):
///
/// - A write or truncation of a file is durable once that file is synced (`fdatasync`).
/// - A file's creation, a rename and a removal are durable once their directory is synced
///   (for a rename, either directory). Until then they may be lost, but those of one
///   directory are kept in the order they were made, as a journaling file system does.
/// - Of the writes not yet durable any subset may survive, and the last one may survive
///   torn: only its first half.
///
/// Directories that the store creates (with `FileManager`, outside the seam) count as
/// durable at once; hard links (``StoreFileSystem/link(_:to:)``) are names like a rename. Reads go to the real files, which hold every write.
public final class PowerLossFileSystem: StoreFileSystem, @unchecked Sendable {
    /// One recorded change. Files are named by paths relative to the root directory, and
    /// their contents by a number of the file itself (an inode), which a rename keeps.
    public enum Event: Sendable, CustomStringConvertible {
        case create(path: String, file: Int)
        case write(file: Int, offset: Int64, bytes: [UInt8])
        case truncate(file: Int, length: Int64)
        case sync(file: Int)
        case rename(from: String, to: String)
        case link(from: String, to: String)
        case remove(path: String)
        case syncDirectory(path: String)

        public var description: String {
            switch self {
            case .create(let path, let file): "create \(path) (#\(file))"
            case .write(let file, let offset, let bytes): "write #\(file) @\(offset) \(bytes.count) bytes"
            case .truncate(let file, let length): "truncate #\(file) to \(length)"
            case .sync(let file): "sync #\(file)"
            case .rename(let from, let to): "rename \(from) -> \(to)"
            case .link(let from, let to): "link \(to) to \(from)"
            case .remove(let path): "remove \(path)"
            case .syncDirectory(let path): "sync directory \(path.isEmpty ? "." : path)"
            }
        }

        /// The directory whose sync makes this change to names durable, or `nil` for a
        /// change to contents.
        var directories: [String]? {
            switch self {
            case .create(let path, _), .remove(let path): [Self.parent(path)]
            case .rename(let from, let to): [Self.parent(from), Self.parent(to)]
            case .link(_, let to): [Self.parent(to)]
            default: nil
            }
        }

        static func parent(_ path: String) -> String {
            guard let slash = path.lastIndex(of: "/") else { return "" }
            return String(path[..<slash])
        }
    }

    /// Files on disk after a crash: contents by path relative to the root.
    public struct Image: Hashable, Sendable {
        public var files: [String: [UInt8]]

        /// Writes the files under `directory`, creating the directories they need.
        public func materialize(at directory: URL) throws {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            for (path, bytes) in files {
                let url = directory.appendingPathComponent(path)
                try FileManager.default.createDirectory(
                    at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
                try Data(bytes).write(to: url)
            }
        }
    }

    private struct State {
        var events: [Event] = []
        /// The recorded number of each real inode seen.
        var files: [UInt64: Int] = [:]
        var nextFile = 0
    }

    private let base = POSIXStoreFileSystem()
    /// The directory recorded under.
    public let rootURL: URL
    /// The root directory's path, ending in `/`.
    private let root: String
    private let initialNames: [String: Int]
    private let initialContents: [Int: [UInt8]]
    private let state = PosixMutex(State())

    /// Records changes under `directory`, whose files as they are now count as durable.
    public init(recordingUnder directory: URL) throws {
        rootURL = directory
        let path = directory.standardizedFileURL.path
        root = path.hasSuffix("/") ? path : path + "/"
        var names: [String: Int] = [:]
        var contents: [Int: [UInt8]] = [:]
        var files: [UInt64: Int] = [:]
        if let walker = FileManager.default.enumerator(atPath: root) {
            for case let relative as String in walker {
                var info = stat()
                guard stat(root + relative, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { continue }
                let number = files[UInt64(info.st_ino)] ?? files.count
                files[UInt64(info.st_ino)] = number
                names[relative] = number
                contents[number] = Array(try Data(contentsOf: URL(fileURLWithPath: root + relative)))
            }
        }
        initialNames = names
        initialContents = contents
        state.withLock {
            $0.files = files
            $0.nextFile = files.count
        }
    }

    /// The number of changes recorded so far: a point between changes, for ``crashStates``.
    public var mark: Int { state.withLock { $0.events.count } }

    /// Every change recorded so far.
    public var events: [Event] { state.withLock { $0.events } }

    private func relative(_ path: String) -> String? {
        let standard = URL(fileURLWithPath: path).standardizedFileURL.path
        guard standard.hasPrefix(root) else { return nil }
        return String(standard.dropFirst(root.count))
    }

    private func inode(_ fd: Int32) -> UInt64? {
        var info = stat()
        return fstat(fd, &info) == 0 ? UInt64(info.st_ino) : nil
    }

    /// The recorded number of the open file `fd`, if it is one under the root.
    private func file(_ fd: Int32) -> Int? {
        guard let inode = inode(fd) else { return nil }
        return state.withLock { $0.files[inode] }
    }

    private func record(_ event: Event) {
        state.withLock { $0.events.append(event) }
    }

    public func open(_ path: String, mode: StoreFileOpenMode) throws -> Int32? {
        let existed = access(path, F_OK) == 0
        guard let fd = try base.open(path, mode: mode) else { return nil }
        if let name = relative(path), let inode = inode(fd) {
            state.withLock { s in
                if !existed || s.files[inode] == nil {
                    // A new file, or one made outside the seam (counted as made here).
                    let number = s.nextFile
                    s.nextFile += 1
                    s.files[inode] = number
                    s.events.append(.create(path: name, file: number))
                }
            }
        }
        return fd
    }

    public func size(_ fd: Int32) throws -> Int64 { try base.size(fd) }

    public func read(_ fd: Int32, count: Int, at offset: Int64) throws -> [UInt8] {
        try base.read(fd, count: count, at: offset)
    }

    public func write(_ fd: Int32, _ bytes: [UInt8], at offset: Int64) throws {
        try base.write(fd, bytes, at: offset)
        if let file = file(fd) { record(.write(file: file, offset: offset, bytes: bytes)) }
    }

    public func sync(_ fd: Int32) throws {
        try base.sync(fd)
        if let file = file(fd) { record(.sync(file: file)) }
    }

    public func truncate(_ fd: Int32, to length: Int64) throws {
        try base.truncate(fd, to: length)
        if let file = file(fd) { record(.truncate(file: file, length: length)) }
    }

    public func rename(_ from: String, to: String) throws {
        try base.rename(from, to: to)
        if let a = relative(from), let b = relative(to) { record(.rename(from: a, to: b)) }
    }

    public func syncDirectory(_ path: String) throws {
        try base.syncDirectory(path)
        let standard = URL(fileURLWithPath: path).standardizedFileURL.path
        if standard + "/" == root {
            record(.syncDirectory(path: ""))
        } else if let name = relative(path) {
            record(.syncDirectory(path: name))
        }
    }

    public func remove(_ path: String) throws {
        try base.remove(path)
        if let name = relative(path) { record(.remove(path: name)) }
    }

    public func link(_ source: String, to destination: String) -> Bool {
        guard base.link(source, to: destination) else { return false }
        if let a = relative(source), let b = relative(destination) { record(.link(from: a, to: b)) }
        return true
    }

    public func lock(_ fd: Int32) throws -> Bool { try base.lock(fd) }
    public func sharedLock(_ fd: Int32) throws -> Bool { try base.sharedLock(fd) }
    public func close(_ fd: Int32) { base.close(fd) }

    // MARK: Crash states

    /// Which of the first `prefix` events are durable at that point.
    private static func durable(_ events: ArraySlice<Event>) -> [Bool] {
        var durable = [Bool](repeating: false, count: events.count)
        var syncedFiles: Set<Int> = []
        var syncedDirectories: Set<String> = []
        // Walking back: a change is durable when a sync of its file or directory follows.
        for i in events.indices.reversed() {
            let at = i - events.startIndex
            switch events[i] {
            case .sync(let file): syncedFiles.insert(file)
            case .syncDirectory(let path): syncedDirectories.insert(path)
            case .write(let file, _, _), .truncate(let file, _): durable[at] = syncedFiles.contains(file)
            case .create, .rename, .link, .remove:
                durable[at] = events[i].directories?.contains { syncedDirectories.contains($0) } ?? false
            }
        }
        return durable
    }

    /// The files after applying, in order, the events of `events` that `keep` selects,
    /// the one at `torn` (if any) only in part.
    private func image(_ events: ArraySlice<Event>, keep: (Int) -> Bool, torn: Int? = nil) -> Image {
        var names = initialNames
        var contents = initialContents
        for i in events.indices where keep(i) {
            switch events[i] {
            case .create(let path, let file):
                names[path] = file
                contents[file] = contents[file] ?? []
            case .write(let file, let offset, var bytes):
                if i == torn { bytes = Array(bytes.prefix(Self.tornLength(bytes.count))) }
                var data = contents[file] ?? []
                let end = Int(offset) + bytes.count
                if data.count < end { data += [UInt8](repeating: 0, count: end - data.count) }
                data.replaceSubrange(Int(offset)..<end, with: bytes)
                contents[file] = data
            case .truncate(let file, let length):
                var data = contents[file] ?? []
                if data.count > Int(length) {
                    data.removeLast(data.count - Int(length))
                } else {
                    data += [UInt8](repeating: 0, count: Int(length) - data.count)
                }
                contents[file] = data
            case .rename(let from, let to):
                if let file = names.removeValue(forKey: from) { names[to] = file }
            case .link(let from, let to):
                if let file = names[from] { names[to] = file }
            case .remove(let path):
                names[path] = nil
            case .sync, .syncDirectory:
                break
            }
        }
        var files: [String: [UInt8]] = [:]
        for (path, file) in names { files[path] = contents[file] ?? [] }
        return Image(files: files)
    }

    /// How much of a torn write of `count` bytes survives: whole 512-byte sectors when it
    /// spans more than one, else half.
    static func tornLength(_ count: Int) -> Int {
        count > 512 ? (count / 2) / 512 * 512 : count / 2
    }

    /// The distinct states a power cut could leave at each point from `points` (a number
    /// of recorded events; every point from 0 to ``mark`` by default), calling `body` with
    /// the point and the state. At each point: none, all, and each kind alone of the
    /// changes not yet durable; with few pending writes each one lost alone; `randomSubsets`
    /// random choices from `random`; and all with the last pending write torn. Returns the
    /// number of distinct states visited.
    @discardableResult
    public func crashStates(
        at points: [Int]? = nil, randomSubsets: Int = 4, random: inout some RandomNumberGenerator,
        _ body: (Int, Image) throws -> Void
    ) rethrows -> Int {
        let all = events
        var visited = 0
        for point in points ?? Array(0...all.count) {
            let prefix = all[..<point]
            let durable = Self.durable(prefix)
            let pending = prefix.indices.filter { !durable[$0] }
            let contentOps = pending.filter { prefix[$0].directories == nil }
            let nameOps = pending.filter { prefix[$0].directories != nil }
            // Names changes are kept as a prefix of their order; writes as any subset.
            var choices: [(names: Int, content: Set<Int>, torn: Int?)] = [
                (0, [], nil), (nameOps.count, Set(contentOps), nil),
                (nameOps.count, [], nil), (0, Set(contentOps), nil),
            ]
            if contentOps.count <= 8 {
                for lost in contentOps { choices.append((nameOps.count, Set(contentOps).subtracting([lost]), nil)) }
            }
            for _ in 0..<randomSubsets where !pending.isEmpty {
                let names = Int.random(in: 0...nameOps.count, using: &random)
                choices.append((names, Set(contentOps.filter { _ in Bool.random(using: &random) }), nil))
            }
            if let last = contentOps.last(where: {
                if case .write(_, _, let bytes) = prefix[$0] { return bytes.count > 1 }
                return false
            }) {
                choices.append((nameOps.count, Set(contentOps), last))
            }
            var seen: Set<Image> = []
            for choice in choices {
                let keptNames = Set(nameOps.prefix(choice.names))
                let state = image(
                    prefix, keep: { durable[$0] || keptNames.contains($0) || choice.content.contains($0) },
                    torn: choice.torn)
                guard seen.insert(state).inserted else { continue }
                visited += 1
                try body(point, state)
            }
        }
        return visited
    }
}
