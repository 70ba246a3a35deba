/// A reader of `stowage-json` documents, as ``JSONDocumentWalk`` sees it: where the walk's
/// problems go, and the steps in which the readers differ.
///
/// The walk checks the document's structure and reads every value the same way for
/// every reader; a visitor says what becomes of what it reads (the store builds a
/// ``SnapshotTable``, the `stowage` tool a list of records) and which schema the records
/// are read with (the container's, or the one the document stores). The walk calls, in
/// order: ``header(storeIdentifier:nextPrimaryKey:)``, ``schema(_:)``, then for each entity
/// group ``entity(named:)`` and, when the group reads, ``beginRecords(of:count:)``, per
/// record ``field(_:at:named:key:)`` for each field and ``record(_:values:reported:)``,
/// and ``endRecords()``; last ``end(maximumKey:)``. A problem that ends the walk ends it
/// before the next of these.
package protocol JSONDocumentVisitor {
    associatedtype Failure: Error

    /// Where the walk reports repeated names, and in which order it visits entity groups.
    var order: JSONDocumentWalk.Order { get }

    /// Hears of one problem. Throwing stops the walk with that error; returning lets it go
    /// on past the member at fault, or end where nothing after the problem can be read.
    mutating func report(_ problem: JSONDocumentProblem) throws(Failure)

    /// The document's identity: its store identifier, and its `nextPrimaryKey` when that
    /// is valid (`nil` was reported).
    mutating func header(storeIdentifier: String, nextPrimaryKey: Int64?) throws(Failure)

    /// The schema the document stores, before any record.
    mutating func schema(_ stored: StoredSchema) throws(Failure)

    /// How the records of the entity called `name` read, or `nil` for an entity this
    /// reader does not know (the walk reports it and skips its records).
    func entity(named name: String) -> JSONDocumentWalk.Entity?

    /// The records of `entity` follow: `count` of them, at most.
    mutating func beginRecords(of entity: String, count: Int) throws(Failure)

    /// One field of the record `key` was read into `value`, for the property at
    /// `position` of the current entity's ``JSONDocumentWalk/Entity``.
    /// - Returns: Why the value does not fit that property, when it does not: the walk
    ///   reports it and the record holds `null` there.
    mutating func field(_ value: SnapshotValue, at position: Int, named field: String, key: Int64) -> String?

    /// One whole record: a value for every property of the current entity, in its order.
    /// `reported` lists the positions already reported (each holds `null`).
    mutating func record(_ key: Int64, values: [SnapshotValue], reported: [Int]) throws(Failure)

    /// The current entity's records are done.
    mutating func endRecords() throws(Failure)

    /// The walk is done: `maximumKey` is the largest identifier of a record (0 for none).
    mutating func end(maximumKey: Int64) throws(Failure)

    /// The document's history (version 2), after the records.
    mutating func history(_ entries: [HistoryEntry], next: Int64) throws(Failure)

    /// The document's format version, one of ``JSONDocument/readableVersions``, before
    /// ``header(storeIdentifier:nextPrimaryKey:)``.
    mutating func version(_ version: Int64) throws(Failure)
}

extension JSONDocumentVisitor {
    /// A reader that does not keep the history skips it.
    package mutating func history(_ entries: [HistoryEntry], next: Int64) throws(Failure) {}

    /// A reader that does not report the version ignores it.
    package mutating func version(_ version: Int64) throws(Failure) {}
}
