import Foundation

extension LogStore {
    /// The log store as a migration's target (`Formats/log.md`, "Schema versions").
    static func migrationTarget(_ configuration: LogStoreConfiguration, path: String, directory: String)
        -> MigrationTarget
    {
        let fs = configuration.fileSystem
        return MigrationTarget(
            path: path, directory: directory, fs: fs, kind: "log store", companionSuffixes: [".blobs"],
            storedSchema: { path in
                guard let fd = try fs.open(path, mode: .readOnly) else { return nil }
                defer { fs.close(fd) }
                let size = try fs.size(fd)
                switch try LogPreamble.read(fs, fd, fileSize: size) {
                case .success(let preamble):
                    // The file's schema is its last layout's (format version 6).
                    return try LogLayouts.scan(fs, fd, preamble: preamble, fileSize: size).layouts.last.schema
                case .failure(.wrongFormat(let reason)):
                    throw DataStoreError(
                        .wrongFormat, "\(path) is not a Stowage log store: \(reason); it was left untouched")
                case .failure(.damaged(_, let reason, _)):
                    throw DataStoreError(.corruptStore, "\(path): \(reason); it was left untouched")
                }
            },
            configuration: { schema, path, options, readOnly in
                var stage = configuration
                stage.schema = schema
                stage.url = URL(fileURLWithPath: path)
                stage.conversionOptions = options
                if readOnly { stage.allowsSave = false }
                return stage
            },
            settle: { _ in },
            close: { ($0 as? LogStore)?.close() })
    }
}
