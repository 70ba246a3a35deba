import Foundation
@_spi(Testing) import Stowage
import StowageInspection
import StowageTestSupport

/// The fuzz target's entry point: the input as a log store file of one of the format
/// samples' schemas (`Formats/samples/*.stowlog`; ``SampleFamily`` chooses it from the
/// schema the file names), opened as an app opens it, point-in-time and then strict. The
/// property: opening throws a `DataStoreError` or `SwiftDataError` (a clear error), or gives
/// a store whose every record fetches and reads; and after a point-in-time open, which cuts
/// a damaged tail, `ToolStore.read` (what `stowage verify` reads) finds no damage in what is
/// left. Anything else stops the run as a finding.
func fuzzLogOpen(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    for recovery in [LogStoreConfiguration.Recovery.pointInTime, .strict] {
        let url = FuzzDriver.write(data, count, as: "store.stowlog")
        let family = SampleFamily(ofFileAt: url.path)
        do {
            let schema = family.schema
            let configuration = LogStoreConfiguration(schema: schema, url: url, recovery: recovery)
            let container = try ModelContainer(for: schema, configurations: [configuration])
            let context = ModelContext(container)
            var seen = 0
            switch family {
            case .trips:
                for trip in try context.fetch(FetchDescriptor<LogSampleTrip>()) {
                    seen &+= trip.name.utf8.count &+ trip.items.count &+ (trip.note?.utf8.count ?? 0)
                }
                for item in try context.fetch(FetchDescriptor<LogSampleItem>()) { seen &+= item.name.utf8.count }
            case .grownTrips:
                for trip in try context.fetch(FetchDescriptor<LogSamplesGrown.LogSampleTrip>()) {
                    seen &+= trip.name.utf8.count &+ trip.items.count &+ trip.rating &+ (trip.remark?.utf8.count ?? 0)
                }
                for stop in try context.fetch(FetchDescriptor<LogSamplesGrown.LogSampleStop>()) {
                    seen &+= stop.name.utf8.count
                }
            case .voyages:
                for voyage in try context.fetch(FetchDescriptor<SampleVoyage>()) {
                    seen &+= voyage.name.utf8.count &+ voyage.destination.utf8.count
                    if let business = voyage as? SampleBusinessVoyage { seen &+= business.company.utf8.count }
                }
            }
            fuzzSink = seen
            if verbose { print("\(recovery): opened, \(seen) bytes of names read") }
        } catch let error as DataStoreError {
            if verbose { print("\(recovery): \(error)") }
            continue
        } catch let error as SwiftDataError {
            if verbose { print("\(recovery): \(error)") }
            continue
        } catch {
            fatalError("opening threw something other than a store error: \(error)")
        }
        if recovery == .pointInTime, let store = try? ToolStore.read(path: url.path), let damage = store.damage {
            fatalError("a point-in-time open left damage that verify finds: \(damage.message)")
        }
    }
    return 0
}

/// The sample schemas a file may be opened with: the one its stored schema names (the
/// version 6 sample's grown trips, or the version 7 sample's voyages), so that the records of
/// every sample are read, not only refused with a schema mismatch; the first samples' trips
/// for a file whose schema does not read.
enum SampleFamily {
    case trips, grownTrips, voyages

    init(ofFileAt path: String) {
        let fs = POSIXStoreFileSystem()
        guard let fd = try? fs.open(path, mode: .readOnly) else {
            self = .trips
            return
        }
        defer { fs.close(fd) }
        guard let size = try? fs.size(fd), case .success(let preamble)? = try? LogPreamble.read(fs, fd, fileSize: size)
        else {
            self = .trips
            return
        }
        let names = Set(preamble.schema.entities.map(\.name))
        self = names.contains("SampleVoyage") ? .voyages : names.contains("LogSampleStop") ? .grownTrips : .trips
    }

    var schema: Schema {
        switch self {
        case .trips: LogSamples.schema
        case .grownTrips: LogSamplesGrown.schema
        case .voyages: InheritanceSamples.schema
        }
    }
}

/// Whether to say what each input did (`STOWAGE_FUZZ_VERBOSE=1`, for a run on chosen files).
let verbose = ProcessInfo.processInfo.environment["STOWAGE_FUZZ_VERBOSE"] != nil

/// Where the walk's total goes, so that the optimizer keeps the walk.
nonisolated(unsafe) var fuzzSink = 0
