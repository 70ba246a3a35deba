import Foundation
import Testing

@_spi(Testing) @testable import Stowage

/// The walk over a `stowage-json` document that the store and the `stowage` tool share:
/// a visitor that lets it go on hears of every problem, in the order its
/// ``JSONDocumentWalk/Order`` says, and still gets the records that read.
@Suite("JSON document walk")
struct JSONDocumentWalkTests {
    /// Collects every problem's message and every record, reading `Item` records of one
    /// `String` property (the value codec maps JSON by its form; the type is the visitor's
    /// to check).
    struct Recorder: JSONDocumentVisitor {
        typealias Failure = Never

        let order: JSONDocumentWalk.Order
        var problems: [String] = []
        var records: [Int64: [SnapshotValue]] = [:]
        var maximumKey: Int64?

        mutating func report(_ problem: JSONDocumentProblem) { problems.append(problem.message) }
        func header(storeIdentifier: String, nextPrimaryKey: Int64?) {}
        func schema(_ stored: StoredSchema) {}

        func entity(named name: String) -> JSONDocumentWalk.Entity? {
            guard name == "Item" else { return nil }
            return JSONDocumentWalk.Entity(
                properties: [.init(name: "name", typeName: "String", destination: nil, isToMany: false, missing: nil)],
                positions: ["name": 0])
        }

        func beginRecords(of entity: String, count: Int) {}
        func field(_ value: SnapshotValue, at position: Int, named field: String, key: Int64) -> String? {
            if case .string = value { return nil }
            return "not a string"
        }
        mutating func record(_ key: Int64, values: [SnapshotValue], reported: [Int]) { records[key] = values }
        func endRecords() {}
        mutating func end(maximumKey: Int64) { self.maximumKey = maximumKey }
    }

    /// An unknown entity written before a known one, a bad identifier, a value of the wrong
    /// type, and an identifier repeated after it.
    static let document = """
        {"format": "stowage-json", "version": 1, "storeIdentifier": "s", "nextPrimaryKey": 1,
         "schema": {"version": "1.0.0", "entities": {"Item": {"indexes": [], "unique": [],
           "properties": [{"name": "name", "optional": false, "type": "String"}]}}},
         "records": {"Zed": {}, "Item": {"x": {}, "2": {"name": 5}, "2": {"name": "b"}, "3": {"name": "c"}}}}
        """

    static func walk(_ order: JSONDocumentWalk.Order) -> Recorder {
        var recorder = Recorder(order: order)
        JSONDocumentWalk.walk(Array(document.utf8), maximumDepth: JSONParser.defaultMaximumDepth, &recorder)
        return recorder
    }

    @Test func asWrittenListsEveryProblemDownTheDocument() {
        let recorder = Self.walk(.asWritten)
        #expect(recorder.problems.count == 4)
        #expect(recorder.problems.first == "records has an unknown entity \"Zed\"")
        #expect(recorder.problems.dropFirst().first == "Item record \"x\": the identifier is not a positive integer")
        #expect(recorder.problems.dropFirst(2).first == "Item record 2, field \"name\": not a string")
        #expect(recorder.problems.last == "Item record 2: the identifier appears twice")
        // The first record 2 is read, with null for its value that did not fit; the repeat is skipped.
        #expect(recorder.records == [2: [.null], 3: [.string("c")]])
        #expect(recorder.maximumKey == 3)
    }

    @Test func namesFirstReportsARepeatAheadOfTheRestAndGroupsByName() {
        let recorder = Self.walk(.namesFirst)
        #expect(recorder.problems.count == 4)
        #expect(recorder.problems.first == "Item record 2: the identifier appears twice")
        #expect(recorder.problems.dropFirst().first == "Item record \"x\": the identifier is not a positive integer")
        #expect(recorder.problems.dropFirst(2).first == "Item record 2, field \"name\": not a string")
        #expect(recorder.problems.last == "records has an unknown entity \"Zed\"")
        #expect(recorder.records == [2: [.null], 3: [.string("c")]])
    }
}
