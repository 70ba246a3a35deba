import Foundation
import StowageTestSupport
import Testing

@_spi(Testing) @testable import Stowage

/// The model-inheritance samples: a log of format version 7 and a JSON document of format
/// version 3, whose schemas name each entity's superentity. The writer still produces them
/// byte for byte (`STOWAGE_WRITE_SAMPLES=1` rewrites them), and they read back as the
/// hierarchy they were written from.
@Suite("Model inheritance in the file formats")
struct InheritanceFormatTests {
    static let samples = LogGoldenTests.samples

    private func checkVoyages(_ container: ModelContainer) throws {
        let context = ModelContext(container)
        let all = try context.fetch(FetchDescriptor<SampleVoyage>(sortBy: [SortDescriptor(\.name)]))
        #expect(all.map(\.name) == ["Lisbon weekend", "Oslo audit", "Talk"])
        #expect(type(of: all[0]) == SampleVoyage.self)
        #expect(type(of: all[1]) == SampleBusinessVoyage.self)
        #expect((all[2] as? SampleConferenceVoyage)?.conference == "Swift Island")
        #expect(try context.fetch(FetchDescriptor<SampleBusinessVoyage>()).map(\.company) == ["Acme", "Acme"])
    }

    @Test func theVersion7LogIsWhatTheWriterWritesAndReadsAsTheHierarchy() throws {
        if ProcessInfo.processInfo.environment["STOWAGE_WRITE_SAMPLES"] == "1" {
            try InheritanceSamples.writeLog(to: Self.samples)
        }
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        try InheritanceSamples.writeLog(to: directory.url)
        let fresh = try Data(contentsOf: directory.url.appendingPathComponent(InheritanceSamples.logFileName))
        let committed = try Data(contentsOf: Self.samples.appendingPathComponent(InheritanceSamples.logFileName))
        #expect(fresh == committed, "the writer no longer produces voyages-v7.stowlog")
        // A schema with superentities is written as version 7; one without stays version 6.
        #expect(fresh[8] == 7)
        #expect(try Data(contentsOf: Self.samples.appendingPathComponent("trips-v6.stowlog"))[8] == 6)

        let (copyDirectory, url) = try LogGoldenTests.copy(InheritanceSamples.logFileName)
        defer { copyDirectory.remove() }
        let container = try ModelContainer(
            for: InheritanceSamples.schema,
            configurations: [LogStoreConfiguration(schema: InheritanceSamples.schema, url: url)])
        try checkVoyages(container)
        let store = try #require(container.storesForTesting.first as? LogStore)
        let recorded = Dictionary(uniqueKeysWithValues: store.storedSchema.entities.map { ($0.name, $0.superentity) })
        #expect(recorded["SampleVoyage"] == .some(nil))
        #expect(recorded["SampleBusinessVoyage"] == "SampleVoyage")
        #expect(recorded["SampleConferenceVoyage"] == "SampleBusinessVoyage")
        store.close()
    }

    @Test func anOlderLogVersionHoldsAHierarchyWithoutRecordingIt() throws {
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        let schema = InheritanceSamples.schema
        do {
            let configuration = LogSamples.configuration(url: directory.storeURL, schema: schema, version: 5)
            let container = try ModelContainer(for: schema, configurations: [configuration])
            try InheritanceSamples.insertVoyagesForTesting(ModelContext(container))
            (container.storesForTesting.first as? LogStore)?.close()
        }
        #expect(try Data(contentsOf: directory.storeURL)[8] == 5)
        let container = try ModelContainer(
            for: schema, configurations: [LogStoreConfiguration(schema: schema, url: directory.storeURL)])
        try checkVoyages(container)
        (container.storesForTesting.first as? LogStore)?.close()
    }

    @Test func theVersion3JSONDocumentIsWhatTheWriterWritesAndReadsAsTheHierarchy() throws {
        if ProcessInfo.processInfo.environment["STOWAGE_WRITE_SAMPLES"] == "1" {
            try InheritanceSamples.writeJSON(to: Self.samples)
        }
        let directory = LogTestDirectory.fresh()
        defer { directory.remove() }
        try InheritanceSamples.writeJSON(to: directory.url)
        let url = directory.url.appendingPathComponent(InheritanceSamples.jsonFileName)
        let text = try String(contentsOf: url, encoding: .utf8)
        let committed = try String(
            contentsOf: Self.samples.appendingPathComponent(InheritanceSamples.jsonFileName), encoding: .utf8)
        #expect(text == committed, "the writer no longer produces json-v3.json")
        #expect(text.contains("\"superentity\": \"SampleBusinessVoyage\""))
        #expect(text.contains("\"version\": 3\n}"))
        let container = try ModelContainer(
            for: InheritanceSamples.schema,
            configurations: [JSONTest.configuration(url, schema: InheritanceSamples.schema)])
        try checkVoyages(container)
    }

    @Test func aJSONDocumentThatMisstatesTheHierarchyIsRefused() throws {
        let text = try String(
            contentsOf: Self.samples.appendingPathComponent(InheritanceSamples.jsonFileName), encoding: .utf8)
        let schema = InheritanceSamples.schema
        func open(_ edited: String) throws -> DataStoreError? {
            let directory = LogTestDirectory.fresh()
            defer { directory.remove() }
            let url = directory.url.appendingPathComponent("store.json")
            try Data(edited.utf8).write(to: url)
            do {
                _ = try JSONTest.open(url, schema: schema)
                return nil
            } catch let error as DataStoreError {
                return error
            }
        }
        // Only version 3 names superentities.
        let old = try #require(try open(text.replacingOccurrences(of: "\"version\": 3\n}", with: "\"version\": 1\n}")))
        #expect(old.code == .corruptStore)
        #expect(old.message.contains("version 1 document's schema names no superentity"))
        // A stored hierarchy other than the container's, over the same properties, is the
        // lightweight kind of difference: each entity's records are its own, so they read as
        // they are, under the container's hierarchy.
        let moved = text.replacingOccurrences(
            of: "\"superentity\": \"SampleBusinessVoyage\"", with: "\"superentity\": \"SampleVoyage\"")
        #expect(moved != text)
        #expect(try open(moved) == nil)
        // A version 3 document whose entities name none is a plain version 3 document.
        let flat = text.replacingOccurrences(of: "\"superentity\": \"SampleBusinessVoyage\",\n", with: "")
            .replacingOccurrences(of: "        \"superentity\": \"SampleVoyage\",\n", with: "")
        #expect(!flat.contains("superentity"))
        #expect(try open(flat) == nil)
    }
}
