import Foundation
@_spi(Testing) import Stowage
import Synchronization

/// The models of the model-inheritance format samples: a base class, a subclass of it,
/// and a subclass of that (`Formats/log.md` version 7, `Formats/json.md` version 3).
@Model
public class SampleVoyage {
    #Unique<SampleVoyage>([\.name])
    public var name: String
    public var destination: String

    public init(name: String, destination: String) {
        self.name = name
        self.destination = destination
    }
}

@Model
public class SampleBusinessVoyage: SampleVoyage {
    public var company: String

    public init(name: String, destination: String, company: String) {
        self.company = company
        super.init(name: name, destination: destination)
    }
}

@Model
public final class SampleConferenceVoyage: SampleBusinessVoyage {
    public var conference: String = "Swift Island"
}

/// Writes `voyages-v7.stowlog` and `json-v3.json`: one save of a voyage, a business voyage
/// and a conference voyage, through a model context as an app would write them.
public enum InheritanceSamples {
    /// Only the base class and the deepest subclass: the schema finds the one between.
    public static let schema = Schema([SampleVoyage.self, SampleConferenceVoyage.self])
    public static let logFileName = "voyages-v7.stowlog"
    public static let jsonFileName = "json-v3.json"

    public static func insertVoyagesForTesting(_ context: ModelContext) throws { try insertVoyages(context) }

    static func insertVoyages(_ context: ModelContext) throws {
        context.insert(SampleVoyage(name: "Lisbon weekend", destination: "Lisbon"))
        context.insert(SampleBusinessVoyage(name: "Oslo audit", destination: "Oslo", company: "Acme"))
        context.insert(SampleConferenceVoyage(name: "Talk", destination: "Texel", company: "Acme"))
        try context.save()
    }

    public static func writeLog(to directory: URL) throws {
        let url = directory.appendingPathComponent(logFileName)
        try? FileManager.default.removeItem(at: url)
        do {
            let configuration = LogSamples.configuration(url: url, schema: schema, version: 6)
            let container = try ModelContainer(for: schema, configurations: [configuration])
            try insertVoyages(ModelContext(container))
        }
        try? FileManager.default.removeItem(at: directory.appendingPathComponent(logFileName + ".lock"))
    }

    public static func writeJSON(to directory: URL) throws {
        let url = directory.appendingPathComponent(jsonFileName)
        try? FileManager.default.removeItem(at: url)
        do {
            var configuration = JSONTest.configuration(url, schema: schema)
            configuration.fixedStoreIdentifier = JSONSamples.storeIdentifier
            let container = try ModelContainer(for: schema, configurations: [configuration])
            try insertVoyages(ModelContext(container))
        }
        try? FileManager.default.removeItem(at: directory.appendingPathComponent(jsonFileName + ".lock"))
    }
}
