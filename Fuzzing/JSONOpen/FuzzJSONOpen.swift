import Foundation
@_spi(Testing) import Stowage
import StowageInspection
import StowageTestSupport

/// The fuzz target's entry point: the input as a JSON store document, after one byte that
/// chooses the schema it is opened with (the trips of `json-v1.json` and `json-v2.json`, or
/// the voyages of `json-v3.json`), opened as an app opens it. The properties: opening throws
/// a `DataStoreError` or `SwiftDataError` (a clear error), or gives a store whose every
/// record fetches and reads, which `stowage verify` finds no damage in, and to which a save
/// lands: reopened, the store holds what it held and the saved record.
func fuzzJSONOpen(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    guard let data, count >= 1 else { return 0 }
    let voyages = data[0] % 2 == 1
    let url = FuzzDriver.write(data + 1, count - 1, as: "store.json")
    let schema = voyages ? InheritanceSamples.schema : JSONSamples.schema
    let before: [String]
    do {
        before = try contents(url, schema: schema, voyages: voyages, saving: true)
    } catch let error as DataStoreError {
        if verbose { print("open: \(error)") }
        return 0
    } catch let error as SwiftDataError {
        if verbose { print("open: \(error)") }
        return 0
    } catch {
        fatalError("opening threw something other than a store error: \(error)")
    }
    do {
        let after = try contents(url, schema: schema, voyages: voyages, saving: false)
        // The name is unique: a record of the document already named so is replaced.
        let expected = (before.filter { $0 != "saved by the fuzzer" } + ["saved by the fuzzer"]).sorted()
        guard after == expected else {
            fatalError("reopened after a save, the store holds \(after), not \(before) and the saved record")
        }
    } catch {
        fatalError("a store that opened and saved does not reopen: \(error)")
    }
    if let store = try? ToolStore.read(path: url.path), let damage = store.damage {
        fatalError("a document the store opened and saved has damage that verify finds: \(damage.message)")
    }
    return 0
}

/// Opens the document and reads every record, and with `saving` inserts one and saves;
/// returns the names the records hold, sorted.
func contents(_ url: URL, schema: Schema, voyages: Bool, saving: Bool) throws -> [String] {
    let container = try ModelContainer(for: schema, configurations: [JSONTest.configuration(url, schema: schema)])
    let context = ModelContext(container)
    var names: [String] = []
    if voyages {
        for voyage in try context.fetch(FetchDescriptor<SampleVoyage>()) {
            names.append(voyage.name)
            var seen = voyage.destination.utf8.count
            if let business = voyage as? SampleBusinessVoyage { seen &+= business.company.utf8.count }
            if let conference = voyage as? SampleConferenceVoyage { seen &+= conference.conference.utf8.count }
            fuzzSink &+= seen
        }
        if saving {
            context.insert(SampleVoyage(name: "saved by the fuzzer", destination: "nowhere"))
        }
    } else {
        for trip in try context.fetch(FetchDescriptor<JSONSampleTrip>()) {
            names.append(trip.name)
            fuzzSink &+=
                trip.items.count &+ trip.tags.count &+ trip.photo.count &+ (trip.note?.utf8.count ?? 0)
                &+ Int(trip.budget.isNaN ? 0 : 1) &+ trip.code.hashValue &+ trip.price.hashValue
                &+ (trip.website?.absoluteString.utf8.count ?? 0) &+ Int(truncatingIfNeeded: trip.visitors)
                &+ Int(truncatingIfNeeded: trip.capacity) &+ (trip.place == nil ? 0 : 1)
                &+ Int(trip.startDate.timeIntervalSinceReferenceDate.isFinite ? 1 : 0)
        }
        for item in try context.fetch(FetchDescriptor<JSONSampleItem>()) {
            fuzzSink &+= item.name.utf8.count &+ item.quantity &+ (item.trip == nil ? 0 : 1)
        }
        if saving {
            context.insert(JSONSampleTrip(name: "saved by the fuzzer", startDate: Date(), code: UUID()))
        }
    }
    if saving { try context.save() }
    return names.sorted()
}

/// Whether to say what each input did (`STOWAGE_FUZZ_VERBOSE=1`, for a run on chosen files).
let verbose = ProcessInfo.processInfo.environment["STOWAGE_FUZZ_VERBOSE"] != nil

/// Where the reads' total goes, so that the optimizer keeps them.
nonisolated(unsafe) var fuzzSink = 0

/// The JSON format samples, each after the byte that chooses its schema.
func jsonOpenSeeds() -> [[UInt8]] {
    let directory = FuzzSamples.directory
    return [("json-v1.json", 0), ("json-v2.json", 0), ("json-v3.json", 1)].compactMap { name, choice in
        FileManager.default.contents(atPath: directory + "/" + name).map { [UInt8(choice)] + Array($0) }
    }
}
