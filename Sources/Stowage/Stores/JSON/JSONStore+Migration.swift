import Foundation

extension JSONStore {
    /// The JSON store as a migration's target (`Formats/json.md`, "Schema versions").
    static func migrationTarget(_ configuration: JSONStoreConfiguration, path: String, directory: String)
        -> MigrationTarget
    {
        let fs = configuration.fileSystem
        return MigrationTarget(
            path: path, directory: directory, fs: fs, kind: "JSON store", companionSuffixes: [],
            storedSchema: { path in
                guard let fd = try fs.open(path, mode: .readOnly) else { return nil }
                defer { fs.close(fd) }
                let bytes = try readDocument(fd, path: path, configuration: configuration)
                do {
                    return try JSONDocument.storedSchema(of: bytes)
                } catch let error as JSONDocument.Problem {
                    throw DataStoreError(error.code, "\(path): \(error.message); the file was left untouched")
                }
            },
            configuration: { schema, path, options, readOnly in
                var stage = configuration
                stage.schema = schema
                stage.fileURL = URL(fileURLWithPath: path)
                stage.conversionOptions = options
                if readOnly { stage.allowsSave = false }
                return stage
            },
            settle: { store in try (store as? JSONStore)?.writeDocument() },
            close: { ($0 as? JSONStore)?.close() })
    }
}

/// Reads a document's stored schema and stops: what a migration needs to find the
/// document's version before it opens it.
private struct JSONSchemaReader: JSONDocumentVisitor {
    enum Failure: Error {
        case found(StoredSchema)
        case problem(JSONDocument.Problem)
    }

    var order: JSONDocumentWalk.Order { .namesFirst }

    func report(_ problem: JSONDocumentProblem) throws(Failure) {
        throw .problem(JSONDocument.Problem(problem.code, problem.message))
    }
    func header(storeIdentifier: String, nextPrimaryKey: Int64?) {}
    func schema(_ stored: StoredSchema) throws(Failure) { throw .found(stored) }
    func entity(named name: String) -> JSONDocumentWalk.Entity? { nil }
    func beginRecords(of entity: String, count: Int) {}
    func field(_ value: SnapshotValue, at position: Int, named field: String, key: Int64) -> String? { nil }
    func record(_ key: Int64, values: [SnapshotValue], reported: [Int]) {}
    func endRecords() {}
    func end(maximumKey: Int64) {}
}

extension JSONDocument {
    /// The schema a document stores, read without its records.
    /// - Throws: The first problem before the schema.
    static func storedSchema(of bytes: [UInt8]) throws(Problem) -> StoredSchema {
        var reader = JSONSchemaReader()
        do {
            try JSONDocumentWalk.walk(bytes, maximumDepth: JSONParser.defaultMaximumDepth, &reader)
        } catch {
            switch error {
            case .found(let schema): return schema
            case .problem(let problem): throw problem
            }
        }
        throw Problem(.corruptStore, "the document has no schema")
    }
}
