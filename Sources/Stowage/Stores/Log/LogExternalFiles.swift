import Foundation

/// One external value's place: a record's property (`Formats/log.md`, "External values").
package struct LogExternalSlot: Hashable, Sendable {
    /// The entity's index in the stored schema.
    package var entity: Int
    package var key: Int64
    /// The property's position in the entity's values.
    package var property: Int
}

/// The files of a log store's external values, in `<log>.blobs/`.
package struct LogExternalFiles: Sendable {
    package let fs: any StoreFileSystem
    /// `<log>.blobs`.
    package let directory: String
    /// The directory that holds the log (synced when `.blobs` is created).
    let parent: String

    package init(fs: any StoreFileSystem, logPath: String, parent: String) {
        self.fs = fs
        self.directory = logPath + ".blobs"
        self.parent = parent
    }

    package func path(_ name: String) -> String { directory + "/" + name }

    /// Writes each file, syncs it, then syncs the directory: after this returns, a commit
    /// may refer to them. On failure, removes what it wrote and throws `ioFailure`.
    package func write(_ files: [(name: String, bytes: Data)]) throws {
        guard !files.isEmpty else { return }
        var written: [String] = []
        do {
            var isDirectory: ObjCBool = false
            if !FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) {
                try FileManager.default.createDirectory(
                    atPath: directory, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
                try fs.syncDirectory(parent)
            } else if !isDirectory.boolValue {
                throw DataStoreError(.ioFailure, "\(directory) is in the way of the store's external values")
            }
            for file in files {
                let path = path(file.name)
                try fs.remove(path)
                guard let fd = try fs.open(path, mode: .createNew) else {
                    throw DataStoreError(.ioFailure, "cannot create \(path)")
                }
                written.append(path)
                defer { fs.close(fd) }
                try fs.write(fd, Array(file.bytes), at: 0)
                try fs.sync(fd)
            }
            try fs.syncDirectory(directory)
        } catch {
            for path in written { try? fs.remove(path) }
            throw DataStoreError(
                .ioFailure, "writing an external value into \(directory) failed; nothing was saved", underlying: error)
        }
    }

    /// Removes files this save wrote, after its commit could not be appended.
    func removeQuietly(_ names: [String]) {
        for name in names { try? fs.remove(path(name)) }
    }

    /// Reads an external value back and checks its length and checksum.
    /// - Throws: `corruptStore` naming the file when it is missing or differs.
    package func read(_ reference: LogExternalReference, entity: String, entityIndex: Int, key: Int64) throws -> Data {
        let path = path(reference.fileName(entityIndex: entityIndex, primaryKey: key))
        guard let fd = try fs.open(path, mode: .readOnly) else {
            throw Self.damaged(reference, path: path, entity: entity, key: key, "is missing")
        }
        defer { fs.close(fd) }
        let size = try Self.checkedLength(try fs.size(fd), reference, path, entity, key)
        let bytes = try fs.read(fd, count: Int(size), at: 0)
        guard bytes.count == Int(size), CRC32C.checksum(bytes) == reference.checksum else {
            throw Self.damaged(reference, path: path, entity: entity, key: key, "does not match its checksum")
        }
        return Data(bytes)
    }

    /// Checks that an external value's file is there with the length the log gives,
    /// without reading it: opening a store checks every live value this way (one `stat`
    /// each), and its checksum is checked when it is read.
    /// - Throws: `corruptStore` naming the file when it is missing or has another length.
    package func check(_ reference: LogExternalReference, entity: String, entityIndex: Int, key: Int64) throws {
        let path = path(reference.fileName(entityIndex: entityIndex, primaryKey: key))
        _ = try Self.checkedLength(try fs.size(ofFileAt: path), reference, path, entity, key)
    }

    /// `size`, when the file exists (`size` is not `nil`) and has the length the log gives.
    private static func checkedLength(
        _ size: Int64?, _ reference: LogExternalReference, _ path: String, _ entity: String, _ key: Int64
    ) throws -> Int64 {
        guard let size else { throw damaged(reference, path: path, entity: entity, key: key, "is missing") }
        guard UInt64(size) == reference.byteCount else {
            throw damaged(
                reference, path: path, entity: entity, key: key,
                "has \(size) bytes where the log says \(reference.byteCount)")
        }
        return size
    }

    private static func damaged(
        _ reference: LogExternalReference, path: String, entity: String, key: Int64, _ what: String
    ) -> DataStoreError {
        DataStoreError(
            .corruptStore,
            "the external value of \(entity) \(key) (property \(reference.property + 1)) in \(path) \(what); "
                + "the record cannot be read without it")
    }

    /// Deletes every file in the directory whose name is not in `live`. Only names of the
    /// external-value form are touched; failures are ignored (the next pass tries again).
    func collectGarbage(keeping live: Set<String>) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return }
        var removed = false
        for name in names where !live.contains(name) && Self.isValueFileName(name) {
            if (try? fs.remove(path(name))) != nil { removed = true }
        }
        if removed { try? fs.syncDirectory(directory) }
    }

    /// `<entityIndex>-<primaryKey>-<propertyIndex>-<transactionID>`, all decimal.
    static func isValueFileName(_ name: String) -> Bool {
        let parts = name.split(separator: "-", omittingEmptySubsequences: false)
        return parts.count == 4
            && parts.allSatisfy { !$0.isEmpty && $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }
    }

    package static func checksum(_ data: Data) -> UInt32 {
        data.withUnsafeBytes { CRC32C.update(0, $0) }
    }
}
