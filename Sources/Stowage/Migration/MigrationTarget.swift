import Foundation

/// A disk store's part in running a migration plan (``MigrationRunner``): how to read the
/// schema a file holds without opening it, how to open a working copy with a given schema,
/// and which files beside the store belong to it.
struct MigrationTarget {
    /// The store's file, its directory, and the file operations.
    var path: String
    var directory: String
    var fs: any StoreFileSystem
    /// "log store" or "JSON store", for messages.
    var kind: String
    /// Directories beside the file that hold its values, as suffixes of its path (the
    /// log's `.blobs`). Their files are never changed once written, only added and
    /// removed, so a working copy links them instead of copying them.
    var companionSuffixes: [String]
    /// The schema the file at a path holds, or `nil` when there is no file.
    var storedSchema: (_ path: String) throws -> StoredSchema?
    /// A configuration of this kind of store for the file at `path` with `schema`,
    /// converting on open as `options` allow, and opening it for reading only when asked.
    var configuration:
        (_ schema: Schema, _ path: String, _ options: SchemaConversion.Options, _ readOnly: Bool) ->
            any DataStoreConfiguration
    /// Makes a store opened with a conversion hold its new schema on disk, when opening did
    /// not (the JSON store writes its document on the next save; this writes it now).
    var settle: (any DataStore<DefaultSnapshot>) throws -> Void
    /// Closes a store and releases its lock.
    var close: (any DataStore<DefaultSnapshot>) -> Void
}
