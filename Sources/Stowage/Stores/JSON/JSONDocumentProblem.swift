/// One thing wrong with a `stowage-json` document, as ``JSONDocumentWalk`` finds it:
/// what and where, with the store's wording in ``message``.
///
/// The cases before ``repeatedMember(_:)`` end the walk (nothing after them can be read);
/// after the others the walk goes on past the member at fault. A reader that words a
/// problem its own way (the `stowage` tool, for a few) switches on the case; every other
/// reader uses ``code`` and ``message`` as they are, so that the wording is written once.
package enum JSONDocumentProblem: Sendable {
    /// The bytes do not parse as JSON.
    case notJSON(JSONSyntaxError)
    /// The document is a JSON value other than an object.
    case notAnObject(found: String)
    /// The top-level object has no `"format": "stowage-json"` member.
    case noFormat
    /// The document is not of the format version this code reads (`found`: the member, if any).
    case version(found: JSONValue?)
    /// The `history` member (version 2) does not read, for this reason.
    case history(JSONDocument.Problem)
    /// `storeIdentifier` is not a non-empty string (`found`: the member, if any).
    case storeIdentifier(found: JSONValue?)
    /// The schema does not read, for this reason.
    case schema(JSONDocument.Problem)
    /// `records` is not an object.
    case records(found: String)

    /// A member of the top-level object appears twice.
    case repeatedMember(String)
    /// The top-level object has a member the format does not define.
    case unknownMember(String)
    /// `nextPrimaryKey` is not an integer of at least 1.
    case nextPrimaryKey
    /// An entity appears twice in `records`.
    case repeatedEntity(String)
    /// `records` has an entity the reader's schema lacks.
    case unknownEntity(String)
    /// An entity's member of `records` is not an object.
    case entity(String, found: String)
    /// A record's identifier appears twice in its entity.
    case repeatedKey(entity: String, key: String)
    /// A record's identifier is not a positive integer written plainly.
    case key(entity: String, key: String)
    /// A record is not an object.
    case record(entity: String, key: Int64, found: String)
    /// A record's field is wrong.
    case field(entity: String, key: Int64, field: String, Field)

    /// What is wrong with one field of a record.
    package enum Field: Sendable {
        /// The schema has no property of the field's name.
        case noSuchProperty
        /// The record has the field twice.
        case repeated
        /// The record lacks a field it must have.
        case missing
        /// A relationship holds something other than `null` or an identifier (to-one), or an
        /// array (to-many).
        case relationship(destination: String, isToMany: Bool, found: String)
        /// A to-many relationship's array holds something other than an identifier.
        case notAnIdentifier(destination: String, found: String)
        /// The value does not fit its property, for this reason.
        case value(String)

        /// The store's wording.
        package var message: String {
            switch self {
            case .noSuchProperty: "the schema has no such property"
            case .repeated: "it appears twice"
            case .missing: "it is missing"
            case .relationship(let destination, false, let found):
                "a to-one relationship must be null or a \(destination) identifier, found \(found)"
            case .relationship(let destination, true, let found):
                "a to-many relationship must be an array of \(destination) identifiers, found \(found)"
            case .notAnIdentifier(let destination, let found):
                "a to-many relationship must hold \(destination) identifiers, found \(found)"
            case .value(let reason): reason
            }
        }
    }

    /// The store's error code: a document of another format is `.wrongFormat`, one that
    /// breaks this format `.corruptStore`.
    package var code: DataStoreError.Code {
        switch self {
        case .notAnObject, .noFormat, .version: .wrongFormat
        case .schema(let problem): problem.code
        default: .corruptStore
        }
    }

    /// The store's wording (the store's error adds the document's path before it).
    package var message: String {
        let format = JSONDocument.formatName
        switch self {
        case .notJSON(let error): return "it is not valid JSON: \(error)"
        case .notAnObject(let found): return "it is \(found), not a \(format) document"
        case .noFormat: return "it has no \"format\": \"\(format)\" member; it is not a \(format) document"
        case .version(let found):
            let text: String
            switch found {
            case .integer(let version)?: text = String(version)
            case let other?: text = other.typeName
            case nil: text = "(none)"
            }
            return "it is \(format) version \(text); this Stowage reads versions "
                + "\(JSONDocument.readableVersions.lowerBound) to \(JSONDocument.readableVersions.upperBound)"
        case .history(let problem): return "the history does not read: \(problem)"
        case .storeIdentifier(.string?): return "storeIdentifier is empty"
        case .storeIdentifier(let found):
            return "storeIdentifier must be a string, found \(found?.typeName ?? "nothing")"
        case .schema(let problem): return problem.message
        case .records(let found): return "records must be an object, found \(found)"
        case .repeatedMember(let name): return "the document has the member \"\(name)\" twice"
        case .unknownMember(let name): return "the document has an unknown member \"\(name)\""
        case .nextPrimaryKey: return "nextPrimaryKey must be an integer of at least 1"
        case .repeatedEntity(let name): return "records has the member \"\(name)\" twice"
        case .unknownEntity(let name): return "records has an unknown entity \"\(name)\""
        case .entity(let name, let found): return "records.\(name) must be an object, found \(found)"
        case .repeatedKey(let entity, let key): return "\(entity) record \(key): the identifier appears twice"
        case .key(let entity, let key): return "\(entity) record \"\(key)\": the identifier is not a positive integer"
        case .record(let entity, let key, let found): return "\(entity) record \(key) must be an object, found \(found)"
        case .field(let entity, let key, let field, let problem):
            return "\(entity) record \(key), field \"\(field)\": \(problem.message)"
        }
    }
}
