import Foundation

/// Opening an existing log file, as named steps (`Formats/log.md`, "Opening and recovery"):
///
/// 1. read the preamble (``init(fd:lockFD:path:directory:schema:configuration:)``);
/// 2. reconcile the stored schema with the container's (``reconcileSchema()``);
/// 3. walk the records (``walk(_:)``, in `LogOpening+Walk.swift`);
/// 4. recover from damage at the end (``recover(_:)``);
/// 5. build the table (``buildTable(_:_:)``, in `LogOpening+Table.swift`);
/// 6. make the writer's state (``writerState(_:_:report:)``).
///
/// `LogStore.openExisting` runs them in that order. Each step takes what the ones before
/// it found and changes nothing they hold; only recovery and building the table touch the
/// file system (cutting a damaged tail, removing external files no record refers to).
struct LogOpening {
    let fs: any StoreFileSystem
    let fd: Int32
    let lockFD: Int32
    let path: String
    let directory: String
    let schema: Schema
    let configuration: LogStoreConfiguration
    /// The file's size when it was opened.
    let size: Int64
    let preamble: LogPreamble
    /// The file's layouts (format version 6: the header's, then each layout record's),
    /// read from the frames before the walk; a file of an earlier version has one.
    let layouts: LogLayouts
    /// The record frames that scan read, when it ran (version 6), for the checkpoint prefetch.
    let frames: LogFrames?
    /// The file's schema: the last layout's.
    var fileSchema: StoredSchema { layouts.last.schema }
    /// The last layout's entities, for reading the file's records (each in its own layout,
    /// ``LogLayouts/map(at:)``).
    var map: LogEntityMap { layouts.last.map }

    var header: LogFormat.FileHeader { preamble.header }
    var version: LogFormatVersion { preamble.header.version }
    var storeIdentifier: String { preamble.storeIdentifier }

    /// Step 1: reads and checks the file header and the header record.
    /// - Throws: ``DataStoreError`` `.wrongFormat` for a file that is not a log this Stowage
    ///   reads, `.corruptStore` for a damaged preamble (the file is left untouched).
    /// `limit` ends the file there for this opening: a second opening after damage that
    /// ended the walk before a layout record read from the frames.
    init(
        fd: Int32, lockFD: Int32, path: String, directory: String, schema: Schema,
        configuration: LogStoreConfiguration, limit: Int64? = nil
    ) throws {
        self.fs = configuration.fileSystem
        self.fd = fd
        self.lockFD = lockFD
        self.path = path
        self.directory = directory
        self.schema = schema
        self.configuration = configuration
        self.size = min(try fs.size(fd), limit ?? .max)
        switch try LogPreamble.read(fs, fd, fileSize: size) {
        case .success(let read): preamble = read
        case .failure(.wrongFormat(let reason)):
            throw DataStoreError(.wrongFormat, "\(path) is not a Stowage log store: \(reason); it was left untouched")
        case .failure(.damaged(_, let reason, _)):
            throw DataStoreError(.corruptStore, "\(path): \(reason); it was left untouched")
        }
        if preamble.header.version.hasLayoutRecords {
            (layouts, frames) = try LogLayouts.scan(fs, fd, preamble: preamble, fileSize: size)
        } else {
            (layouts, frames) = (LogLayouts(preamble: preamble), nil)
        }
    }

    // MARK: Step 2

    /// How the stored schema meets the container's.
    struct Reconciliation {
        /// The container's schema, described.
        var live: StoredSchema
        /// Indexes (`#Index`) or uniqueness constraints added, removed or changed: the
        /// indexes are built from the records, not taken from a checkpoint, which holds the
        /// old ones, and the file is rewritten with the new ones.
        var indexesChanged = false
        /// The uniqueness constraints the container adds, by entity: the records must keep them.
        var addedUniqueness: [String: [[String]]] = [:]
        /// How each record becomes one of the container's schema, when more than indexes
        /// changed; the file is then rewritten in the new layout.
        var conversion: SchemaConversion?
        /// The layout record that makes the change instead, when one can (format version 6,
        /// a writer, a change `LogLayoutRecord.make` allows): appended, nothing rewritten.
        var layout: LogLayoutRecord?
    }

    /// Step 2: compares the file's schema (its last layout's) with the container's (in a version 1 file,
    /// without external-storage flags, which it does not record).
    /// - Throws: ``DataStoreError`` `.schemaMismatch` for a difference that needs a migration plan.
    func reconcileSchema() throws -> Reconciliation {
        let live = StoredSchema(schema)
        let compared = version.hasExternalStorage ? live : live.withoutExternalFlags
        var reconciliation = Reconciliation(live: live)
        let stored = fileSchema
        guard let difference = stored.difference(from: compared) else { return reconciliation }
        if !stored.differsOnlyInIndexes(from: compared) {
            do {
                let conversion: SchemaConversion
                if let planned = configuration.plannedConversion, planned.from == stored {
                    conversion = planned.conversion
                } else {
                    conversion = try SchemaConversion.make(
                        from: stored, to: compared, schema: schema, options: configuration.conversionOptions)
                }
                if version.hasLayoutRecords, configuration.allowsSave,
                    let record = LogLayoutRecord.make(from: stored, to: live, conversion: conversion)
                {
                    // The indexes and uniqueness constraints are the file's: a checkpoint holds them.
                    reconciliation.layout = record
                    return reconciliation
                }
                reconciliation.conversion = conversion
            } catch {
                throw DataStoreError(
                    .schemaMismatch,
                    "\(path): the schema does not match the store's: \(difference); it needs a migration: "
                        + error.reason)
            }
        }
        reconciliation.indexesChanged = true
        reconciliation.addedUniqueness = stored.addedUniqueness(in: compared)
        return reconciliation
    }

    /// The layouts the walk decodes the commits with: the file's, then the layout record
    /// the store is about to append (which starts after every record read), if any.
    func decodingLayouts(_ reconciliation: Reconciliation, start: Int64 = .max) -> LogLayouts {
        var decoding = layouts
        if let record = reconciliation.layout { decoding.append(record, start: start) }
        return decoding
    }

    // MARK: Step 4

    /// Step 4: what recovery does with damage the walk ended at. Strict recovery has
    /// thrown already (the walk's sink); point-in-time recovery cuts the file back to the
    /// valid prefix and syncs it, except in a read-only store, which reads the prefix and
    /// leaves the file as it is.
    func recover(_ walked: Walked) throws -> LogStore.RecoveryReport? {
        guard let damage = walked.damage else { return nil }
        if configuration.allowsSave {
            try fs.truncate(fd, to: walked.end)
            try fs.sync(fd)
        }
        return LogStore.RecoveryReport(
            validLength: walked.end, droppedBytes: size - walked.end, reason: damage, commitsReplayed: walked.commits,
            leftInFile: !configuration.allowsSave)
    }

    /// The error strict recovery throws for damage at `offset`.
    func strictRefusal(at offset: Int64, _ reason: String) -> DataStoreError {
        DataStoreError(
            .corruptStore,
            "\(path) is damaged at offset \(offset): \(reason); strict recovery refuses to open it "
                + "(the file is unchanged; point-in-time recovery would keep the first \(offset) bytes)")
    }

    // MARK: Step 6

    /// Step 6: the writer's state: where the next commit goes, the next transaction, the
    /// dead-byte accounting and checkpoints, and the live external values.
    func writerState(_ walked: Walked, _ built: Built, report: LogStore.RecoveryReport?) -> LogStore.WriterState {
        var writer = LogStore.WriterState(
            fd: fd, lockFD: lockFD, salt: header.salt, generation: header.generation, end: walked.end,
            nextTransactionID: walked.lastTransaction + 1)
        writer.dataStart = preamble.commitsStart
        // A reserved zero tail stays: the next saves write into it.
        writer.fileSize = report == nil || !configuration.allowsSave ? size : walked.end
        if !configuration.allowsSave { writer.unusable = "it was opened read-only (allowsSave: false)" }
        writer.versions = built.versions
        writer.formatVersion = version
        writer.checkpointBytes = walked.checkpointBytes
        writer.lastCheckpointBytes = walked.lastCheckpointBytes
        writer.lastCheckpointEnd = walked.checkpointEnd
        writer.lastCommitTransaction = walked.commits > 0 ? walked.lastTransaction : 0
        writer.external = built.external
        if built.converted {
            // The rewrite writes every external value to a new file: under a transaction no
            // file of the old layout has, so that none of theirs is overwritten.
            writer.external = [:]
            writer.nextTransactionID = walked.lastTransaction + 2
        }
        return writer
    }
}
