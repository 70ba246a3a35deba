import Foundation
import StowageTestSupport
import Testing

@_spi(Testing) @testable import Stowage

/// The committed sample `Formats/samples/json-v1.json`, hand edits, and every kind of
/// malformed document. `STOWAGE_WRITE_SAMPLES=1 swift test --filter JSONFormat` rewrites
/// the sample after a deliberate format change.
@Suite("JSONStore format")
struct JSONFormatTests {
    typealias T = JSONStoreTesting

    static let samples = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Formats/samples")

    static var sampleText: String {
        String(decoding: T.bytes(samples.appendingPathComponent(JSONSamples.fileName)), as: UTF8.self)
    }

    /// Writes `text` as a document in a fresh directory.
    static func document(_ text: String) throws -> URL {
        let url = JSONTest.freshURL()
        try Data(text.utf8).write(to: url)
        return url
    }

    /// Opening `text` fails with `code`, the message contains every fragment, and the file
    /// is left as it was.
    static func refuses(
        _ text: String, _ code: DataStoreError.Code, _ fragments: [String],
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let url = try document(text)
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        do {
            _ = try JSONTest.open(url, schema: T.schema)
            Issue.record("the document opened", sourceLocation: sourceLocation)
        } catch let error as DataStoreError {
            #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
            for fragment in fragments {
                #expect(
                    error.message.contains(fragment), "\(error.message) lacks \(fragment)",
                    sourceLocation: sourceLocation)
            }
        }
        #expect(T.bytes(url) == Array(text.utf8), "the file was modified", sourceLocation: sourceLocation)
    }

    /// The sample with one exact substring replaced (which must occur).
    static func edited(_ old: String, _ new: String) -> String {
        let text = sampleText
        #expect(text.contains(old), "the sample has no \(old)")
        guard let range = text.range(of: old) else { return text }
        return text.replacingCharacters(in: range, with: new)
    }

    @Test func theWriterReproducesTheSampleByteForByte() throws {
        if ProcessInfo.processInfo.environment["STOWAGE_WRITE_SAMPLES"] == "1" {
            try JSONSamples.write(to: Self.samples)
        }
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        try JSONSamples.write(to: directory.url)
        let fresh = T.bytes(directory.url.appendingPathComponent(JSONSamples.fileName))
        #expect(fresh == Array(Self.sampleText.utf8), "json-v1.json differs from what the writer produces")
    }

    /// `json-v2.json`, a document with a history (version 2), is what the writer writes, and
    /// its history reads: the first save's five inserts, an update that changed one
    /// attribute, a delete whose tombstone holds the item's name.
    @Test func theVersion2SampleIsWhatTheWriterWritesAndItsHistoryReads() throws {
        if ProcessInfo.processInfo.environment["STOWAGE_WRITE_SAMPLES"] == "1" {
            try JSONSamples.writeVersion2(to: Self.samples)
        }
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        try JSONSamples.writeVersion2(to: directory.url)
        let url = directory.url.appendingPathComponent(JSONSamples.historyFileName)
        #expect(T.bytes(url) == T.bytes(Self.samples.appendingPathComponent(JSONSamples.historyFileName)))
        let text = String(decoding: T.bytes(url), as: UTF8.self)
        #expect(text.hasSuffix("\"version\": 2\n}\n"))
        // Opened without keepsHistory: the document keeps its history.
        let container = try ModelContainer(
            for: T.schema, configurations: [JSONTest.configuration(url, schema: T.schema)])
        let history = try ModelContext(container).fetchHistory(HistoryDescriptor<DefaultHistoryTransaction>())
        #expect(history.map(\.transactionIdentifier) == [1, 2, 3])
        #expect(history.map(\.author) == [nil, "sampler", "sampler"])
        #expect(history.allSatisfy { $0.bundleIdentifier == "stowage-samples" && $0.processIdentifier == "4242" })
        #expect(history.map { $0.timestamp.timeIntervalSince1970 } == [1_790_000_000, 1_790_000_001, 1_790_000_002])
        #expect(history.map(\.changes.count) == [5, 1, 2])
        if case .update(let update as DefaultHistoryUpdate<JSONSampleTrip>)? = history[1].changes.first {
            #expect(update.updatedAttributes.map { $0 as AnyKeyPath } == [\JSONSampleTrip.budget])
        } else {
            Issue.record("the second transaction is not an update of a trip: \(history[1].changes)")
        }
        let delete = history[2].changes.compactMap { change -> DefaultHistoryDelete<JSONSampleItem>? in
            if case .delete(let delete as DefaultHistoryDelete<JSONSampleItem>) = change { return delete }
            return nil
        }
        #expect(delete.count == 1)
        #expect(delete.first?.tombstone[\.name] as? String == "Charger")
        (container.stores.first as? JSONStore)?.close()
    }

    @Test func theSampleOpensAndRewritesItselfIdentically() throws {
        let url = try Self.document(Self.sampleText)
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        let store = try JSONTest.open(url, schema: T.schema)
        #expect(store.identifier == JSONSamples.storeIdentifier)
        #expect(try T.names(store) == ["Lisbon", "Oslo"])
        #expect(try T.names(store, "JSONSampleItem") == ["Charger", "Passport", "Wool socks"])
        let lisbon = try store.allSnapshots(of: "JSONSampleTrip").first!
        #expect(lisbon.value(forKey: "capacity", in: T.trip) == .uint(.max))
        #expect(lisbon.value(forKey: "visitors", in: T.trip) == .int(9_007_199_254_740_993))
        #expect(lisbon.value(forKey: "price", in: T.trip) == .decimal(Decimal(string: "1234.56")!))
        #expect(lisbon.value(forKey: "startDate", in: T.trip) == .date(Date(timeIntervalSince1970: 1_780_000_000.25)))
        #expect(store.documentBytes() == Array(Self.sampleText.utf8))
        // Queries go through the indexes, as on the memory store.
        let container = try ModelContainer(for: T.schema, configurations: [MemoryStoreConfiguration(schema: T.schema)])
        _ = container
        store.close()
    }

    @Test func aHandEditedDocumentOpensWithTheEdits() throws {
        var text = Self.edited("\"name\": \"Passport\"", "\"name\": \"Visa\"")
        func replace(_ old: String, _ new: String) {
            #expect(text.contains(old), "no \(old)")
            if let range = text.range(of: old) { text.replaceSubrange(range, with: new) }
        }
        replace("\"budget\": 900.5", "\"budget\": 1000")  // an integer for a Double
        // A record added by hand, with a fresh key and a missing optional; a plain-string date.
        replace(
            "\"JSONSampleItem\": {\n",
            "\"JSONSampleItem\": {\n      \"40\": {\"name\": \"Hat\", \"quantity\": 1, \"weight\": 0.5},\n")
        replace(
            "\"startDate\": {\n          \"$date\": \"2001-01-01T00:00:00.100Z\"\n        }",
            "\"startDate\": \"2001-01-02T00:00:00Z\"")
        let url = try Self.document(text)
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        let store = try JSONTest.open(url, schema: T.schema)
        #expect(try T.names(store, "JSONSampleItem") == ["Charger", "Hat", "Visa", "Wool socks"])
        let trips = try store.allSnapshots(of: "JSONSampleTrip")
        #expect(trips[0].value(forKey: "budget", in: T.trip) == .double(1000))
        #expect(trips[1].value(forKey: "startDate", in: T.trip) == .date(Date(timeIntervalSinceReferenceDate: 86_400)))
        // The next key continues after the hand-added one.
        let ids = try JSONTest.save(store, inserted: [T.trip("New")])
        #expect(ids.values.first?.primaryKey == 41)
    }

    @Test func badJSONIsRefusedWithLineAndColumn() throws {
        try Self.refuses(
            "{\n  \"format\": \"stowage-json\",\n  \"version\": 1,,\n}", .corruptStore, ["line 3, column 16"])
        try Self.refuses("{\"format\": \"stowage-json\"", .corruptStore, ["line 1, column 26"])
        try Self.refuses("{\"a\": \"tab\there\"}", .corruptStore, ["line 1", "control character"])
        try Self.refuses("{\"a\": 01}", .corruptStore, ["leading zeros"])
        try Self.refuses("", .corruptStore, ["line 1, column 1"])
        try Self.refuses(Self.sampleText + "x", .corruptStore, ["after the document"])
        try Self.refuses(
            String(repeating: "[", count: 100) + String(repeating: "]", count: 100), .corruptStore,
            ["nesting deeper than 64"])
        let invalid = Self.edited("\"Oslo\"", "\"Os\u{FFFF}lo\"").replacingOccurrences(of: "\u{FFFF}", with: "\\ud800")
        try Self.refuses(invalid, .corruptStore, ["surrogate"])
    }

    @Test func somethingElseIsWrongFormat() throws {
        try Self.refuses("[1, 2]", .wrongFormat, ["not a stowage-json document"])
        try Self.refuses("{\"format\": \"other\"}", .wrongFormat, ["format"])
        try Self.refuses(Self.edited("\"version\": 1\n}", "\"version\": 4\n}"), .wrongFormat, ["version 4"])
        // Version 2 is the document with history: without its history member it is damaged.
        try Self.refuses(
            Self.edited("\"version\": 1\n}", "\"version\": 2\n}"), .corruptStore, ["version 2", "history member"])
    }

    @Test func aDifferentSchemaIsSchemaMismatch() throws {
        try Self.refuses(Self.edited("\"version\": \"1.0.0\"", "\"version\": \"2.0.0\""), .schemaMismatch, ["version"])
        try Self.refuses(
            Self.edited("\"type\": \"Int64\"", "\"type\": \"Int\""), .schemaMismatch, ["JSONSampleTrip", "visitors"])
        // The same document opened with another container schema.
        let url = try Self.document(Self.sampleText)
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        #expect(throws: DataStoreError.schemaMismatch) { _ = try JSONTest.open(url, schema: Schema([Trip.self])) }
    }

    @Test func malformedRecordsNameTheEntityRecordAndField() throws {
        // A wrong type in a field.
        try Self.refuses(
            Self.edited("\"quantity\": 2", "\"quantity\": \"two\""), .corruptStore,
            ["JSONSampleItem record 4", "field \"quantity\""])
        try Self.refuses(
            Self.edited("\"quantity\": 2", "\"quantity\": 2.5"), .corruptStore, ["JSONSampleItem record 4", "quantity"])
        try Self.refuses(
            Self.edited("\"quantity\": 2", "\"quantity\": null"), .corruptStore, ["record 4", "not optional"])
        try Self.refuses(
            Self.edited("\"$uuid\": \"E621E1F8", "\"$uuid\": \"X621E1F8"), .corruptStore,
            ["JSONSampleTrip record 1", "code"])
        try Self.refuses(
            Self.edited("\"$data\": \"AAEC/v8=\"", "\"$data\": \"!!\""), .corruptStore, ["record 1", "photo", "base64"])
        try Self.refuses(
            Self.edited("\"$decimal\"", "\"$decimel\""), .corruptStore, ["record 1", "price", "unknown tag"])
        // An unknown entity.
        try Self.refuses(
            Self.edited("\"records\": {\n", "\"records\": {\n    \"Ghost\": {},\n"), .corruptStore,
            ["unknown entity \"Ghost\""])
        // A duplicate identifier.
        try Self.refuses(
            Self.edited("\"JSONSampleItem\": {\n", "\"JSONSampleItem\": {\n      \"3\": {\"name\": \"Dup\"},\n"),
            .corruptStore, ["JSONSampleItem record 3", "appears twice"])
        // A relationship pointing at a missing record.
        try Self.refuses(
            Self.edited("\"trip\": 2", "\"trip\": 99"), .corruptStore,
            ["JSONSampleItem record 5", "field \"trip\"", "JSONSampleTrip 99", "does not exist"])
        try Self.refuses(Self.edited("\"trip\": 2", "\"trip\": \"2\""), .corruptStore, ["record 5", "to-one"])
        // A missing field, an unknown field, a bad key, a unique collision.
        try Self.refuses(Self.edited("\"quantity\": 2,\n", ""), .corruptStore, ["record 4", "\"quantity\"", "missing"])
        try Self.refuses(
            Self.edited("\"quantity\": 2,", "\"quantity\": 2, \"colour\": 1,"), .corruptStore, ["record 4", "colour"])
        try Self.refuses(Self.edited("\"4\": {", "\"04\": {"), .corruptStore, ["JSONSampleItem record \"04\""])
        try Self.refuses(
            Self.edited("\"name\": \"Oslo\"", "\"name\": \"Lisbon\""), .corruptStore,
            ["JSONSampleTrip", "name", "unique"])
    }

    @Test func theSizeLimitIsEnforcedOnOpenAndSave() throws {
        let url = try Self.document(Self.sampleText)
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        #expect(throws: DataStoreError.corruptStore) {
            _ = try JSONTest.open(url, schema: T.schema, maximumFileSize: 1000)
        }
        let store = try JSONTest.open(url, schema: T.schema, maximumFileSize: Self.sampleText.utf8.count + 100)
        #expect(throws: DataStoreError.unsupportedFeature) {
            try JSONTest.save(store, inserted: [T.trip("too much")])
        }
        #expect(T.bytes(url) == Array(Self.sampleText.utf8))
        #expect(try T.names(store) == ["Lisbon", "Oslo"])
    }
}
