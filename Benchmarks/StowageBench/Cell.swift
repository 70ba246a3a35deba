import CSQLite
import Foundation
import Stowage
import StowagePostgres

// One cell: one side (a Stowage store or an SQLite peer) at one workload shape, a warm-up
// run and then `runs` timed runs, in a process of its own. It prints one JSON line.

/// The phases, in the order they run. `open` is part of `reopen`, shown on its own.
enum PhaseKey: String, CaseIterable, Codable, Sendable {
    case insert, point, equality, range, count, enumerate, update, singles, observe, refetch, steps, steps100, delete,
        imports, reopen, open

    /// A short name for charts and progress lines.
    var short: String {
        switch self {
        case .insert: "insert"
        case .point: "point fetch by id"
        case .equality: "equality fetch"
        case .range: "range fetch, sorted, limit 20"
        case .count: "count, unindexed predicate"
        case .enumerate: "full enumerate, batchSize"
        case .update: "update 10%, saves of 1000"
        case .singles: "single-row saves"
        case .observe: "live results: save, results current"
        case .refetch: "save, then fetch again"
        case .steps: "fetch-and-change steps, one save"
        case .steps100: "the same steps, saved every 100"
        case .imports: "import, a look-up before each insert"
        case .delete: "batch delete 10%"
        case .reopen: "close, reopen and count"
        case .open: "of which open and count"
        }
    }

    /// What one operation is, for ops/s.
    var unit: String {
        switch self {
        case .insert, .enumerate, .update, .delete: "rows"
        case .point, .equality, .range: "fetches"
        case .count: "counts"
        case .singles, .observe, .refetch: "saves"
        case .steps, .steps100: "steps"
        case .imports: "rows"
        case .reopen, .open: "opens"
        }
    }

    /// Phases that only a store with a file has.
    var needsFile: Bool { self == .reopen || self == .open }
}

/// The enumerate phase's batch size.
let enumerateBatchSize = 5000

struct PhaseSamples: Codable, Sendable {
    var key: PhaseKey
    var title: String
    var operations: Int
    var seconds: [Double]
}

/// What a child prints: every sample of one side.
struct CellResult: Codable, Sendable {
    var spec: CellSpec
    var phases: [PhaseSamples]
    /// Per timed run; empty for a side with no file.
    var bytesOnDisk: [Int64]
    /// `VmHWM` at the end: the process's peak, warm-up and every run included.
    var peakRSSBytes: Int64
    /// `VmRSS` after the rows were generated and before any store existed.
    var baselineRSSBytes: Int64
    var wallSeconds: Double

    func samples(_ key: PhaseKey) -> PhaseSamples? { phases.first { $0.key == key } }
}

/// Seconds taken by `body`.
func time(_ body: () throws -> Void) rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

/// A field of `/proc/self/status` in bytes (`VmHWM`, `VmRSS`), or 0.
func procStatusBytes(_ field: String) -> Int64 {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
    for line in status.split(separator: "\n") where line.hasPrefix(field + ":") {
        let kb = line.split(separator: " ").dropFirst().first.flatMap { Int64($0) } ?? 0
        return kb * 1024
    }
    return 0
}

func progress(_ text: String) {
    FileHandle.standardError.write(Data(text.utf8))
}

/// Runs one cell and collects its samples.
final class CellRunner {
    let spec: CellSpec
    let workload: Workload
    let directory: URL
    let expectedDeleted: Int
    let expectedFinalCount: Int
    private var phases: [PhaseSamples] = []
    private var bytesOnDisk: [Int64] = []
    private let label: String
    /// The PostgreSQL database of each run of a `postgres` cell, made at its first open.
    private var postgresDatabases: [Int: String] = [:]

    init(spec: CellSpec) throws {
        self.spec = spec
        workload = Workload(spec.shape)
        directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "stowage-bench-\(getpid())-\(spec.system)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let doomed = Set(workload.doomedDestinations)
        expectedDeleted = (workload.rows + workload.singles).filter { doomed.contains($0.destination) }.count
        expectedFinalCount = workload.rows.count + workload.singles.count - expectedDeleted + workload.imports.count
        label = "\(spec.system) N=\(spec.shape.n)"
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    func title(_ key: PhaseKey) -> String {
        let shape = spec.shape
        return switch key {
        case .insert: "insert \(shape.n) in one save"
        case .point: "\(shape.pointFetches) point fetches by id"
        case .equality: "equality fetch on destination (x\(workload.destinations.count), \(shape.n) rows in all)"
        case .range: "\(shape.rangeFetches) range fetches, sorted, limit 20"
        case .count: "count, unindexed predicate (x10)"
        case .enumerate: "full enumerate (\(shape.n) rows), batchSize \(enumerateBatchSize)"
        case .update: "update \(workload.updates.count) rows (10%) in saves of 1000"
        case .singles: "\(workload.singles.count) single-row saves"
        case .observe:
            "\(shape.observeSaves) saves moving one row, each followed by reading a sorted result of every row "
                + "(first 20 models): ResultsObserver vs SQLite's query again"
        case .refetch:
            "\(shape.refetchSaves) saves moving one row, each followed by fetching the sorted result again "
                + "(identifiers, first 20 models)"
        case .steps: "\(workload.lookupIDs.count) steps (fetch by unique id, change a property) saved once"
        case .steps100: "the same \(workload.lookupIDs.count) steps, saved every 100"
        case .imports: "import of \(workload.imports.count) rows, each looked up by id first, one save"
        case .delete: "batch delete of 10 destinations (\(expectedDeleted) rows)"
        case .reopen: "close, reopen and count"
        case .open: "of which open and count"
        }
    }

    func operations(_ key: PhaseKey) -> Int {
        switch key {
        case .insert, .enumerate: spec.shape.n
        case .point: workload.lookupIDs.count
        case .equality: workload.destinations.count
        case .range: workload.rangeStarts.count
        case .count: 10
        case .update: workload.updates.count
        case .singles: workload.singles.count
        case .observe: spec.shape.observeSaves
        case .refetch: spec.shape.refetchSaves
        case .steps, .steps100: workload.lookupIDs.count
        case .imports: workload.imports.count
        case .delete: expectedDeleted
        case .reopen, .open: 1
        }
    }

    /// Times `body` as phase `key`; records it when `record` is set.
    func phase(_ key: PhaseKey, record: Bool, _ body: () throws -> Void) throws {
        progress(" \(key.rawValue)")
        let seconds = try time(body)
        if record { self.record(key, seconds) }
    }

    func record(_ key: PhaseKey, _ seconds: Double) {
        if let index = phases.firstIndex(where: { $0.key == key }) {
            phases[index].seconds.append(seconds)
        } else {
            phases.append(PhaseSamples(key: key, title: title(key), operations: operations(key), seconds: [seconds]))
        }
    }

    func run() throws -> CellResult {
        let baseline = procStatusBytes("VmRSS")
        let start = DispatchTime.now().uptimeNanoseconds
        for run in 0...spec.runs {
            if spec.lockstep {
                guard readLine() != nil else { throw BenchError("the parent closed standard input") }
            }
            let runStart = DispatchTime.now().uptimeNanoseconds
            progress("    \(label) \(run == 0 ? "warm-up" : "run \(run)/\(spec.runs)"):")
            if let store = spec.store {
                try runStowage(store, run: run, record: run > 0)
            } else if let peer = spec.peer {
                try runPeer(peer, run: run, record: run > 0)
            }
            let seconds = Double(DispatchTime.now().uptimeNanoseconds - runStart) / 1e9
            progress(String(format: " (%.1f s)\n", seconds))
            if spec.lockstep {
                print("ran \(run)")
                fflush(nil)
            }
        }
        return CellResult(
            spec: spec, phases: phases, bytesOnDisk: bytesOnDisk, peakRSSBytes: procStatusBytes("VmHWM"),
            baselineRSSBytes: baseline, wallSeconds: Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
    }

    // MARK: Stowage

    func storeURL(run: Int) -> URL { directory.appendingPathComponent("run\(run).store") }

    func makeContainer(_ store: StoreKind, run: Int) throws -> ModelContainer {
        switch store {
        case .memory:
            return try ModelContainer(for: Trip.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        case .json:
            let configuration = JSONStoreConfiguration(
                name: "bench", schema: Schema([Trip.self]), fileURL: storeURL(run: run))
            return try ModelContainer(for: [Trip.self], configurations: [configuration])
        case .logFull, .logRelaxed:
            var configuration = LogStoreConfiguration(
                name: "bench", schema: Schema([Trip.self]), url: storeURL(run: run),
                durability: store == .logFull ? .full : .relaxed)
            // The same memory budget as SQLite's page cache, when one is set.
            if spec.sqliteCacheMiB > 0 { configuration.cacheCapacity = spec.sqliteCacheMiB << 20 }
            configuration.blockBytes = spec.blockKiB << 10
            return try ModelContainer(for: [Trip.self], configurations: [configuration])
        case .postgres, .postgresHistory:
            let conninfo = try postgresDatabases[run] ?? PostgresBench.create(postgresName(run))
            postgresDatabases[run] = conninfo
            var configuration = PostgresStoreConfiguration(name: "bench", schema: Schema([Trip.self]), url: conninfo)
            configuration.keepsHistory = store == .postgresHistory
            return try ModelContainer(for: [Trip.self], configurations: [configuration])
        }
    }

    /// The database a run of this cell makes on the PostgreSQL server.
    func postgresName(_ run: Int) -> String {
        "stowage_bench_\(getpid())_\(spec.system.replacingOccurrences(of: "-", with: "_"))_\(run)"
    }

    func makeTrip(_ row: TripRow) -> Trip {
        Trip(
            id: row.id, destination: row.destination, startDate: row.startDate, budget: row.budget, flag: row.flag,
            note: row.note)
    }

    /// Every phase up to the reopen, on one container. Its contexts and models are gone when it returns.
    func stowagePhases(_ container: ModelContainer, record: Bool) throws {
        let writer = ModelContext(container)
        var inserted: [Trip] = []
        inserted.reserveCapacity(workload.rows.count)
        try phase(.insert, record: record) {
            for row in workload.rows {
                let trip = makeTrip(row)
                writer.insert(trip)
                inserted.append(trip)
            }
            try writer.save()
        }
        // The identifiers play the part of SQLite's integer primary key in the update phase.
        let updateIDs = stride(from: 0, to: inserted.count, by: 10).map { inserted[$0].persistentModelID }
        guard updateIDs.allSatisfy({ !$0.isTemporary }), updateIDs.count == workload.updates.count else {
            throw BenchError("the insert left temporary identifiers")
        }
        inserted = []

        let reader = ModelContext(container)
        var found = 0
        try phase(.point, record: record) {
            if asWritten {
                // As an app writes it: the predicate alone, and every property read.
                for id in workload.lookupIDs {
                    for trip in try reader.fetch(FetchDescriptor<Trip>(predicate: #Predicate { $0.id == id })) {
                        readAll(trip)
                        found += 1
                    }
                }
                return
            }
            for id in workload.lookupIDs {
                var descriptor = FetchDescriptor<Trip>(predicate: #Predicate { $0.id == id })
                descriptor.fetchLimit = 1
                found += try reader.fetch(descriptor).count
            }
        }
        guard found == workload.lookupIDs.count else { throw BenchError("point fetches found \(found)") }

        let equalityReader = ModelContext(container)
        var equalityRows = 0
        try phase(.equality, record: record) {
            for destination in workload.destinations {
                let trips = try equalityReader.fetch(
                    FetchDescriptor<Trip>(predicate: #Predicate { $0.destination == destination }))
                if asWritten { for trip in trips { readAll(trip) } }
                equalityRows += trips.count
            }
        }
        guard equalityRows == workload.rows.count else { throw BenchError("equality fetches found \(equalityRows)") }

        let rangeReader = ModelContext(container)
        var rangeRows = 0
        try phase(.range, record: record) {
            for start in workload.rangeStarts {
                var descriptor = FetchDescriptor<Trip>(
                    predicate: #Predicate { $0.startDate > start }, sortBy: [SortDescriptor(\.startDate)])
                descriptor.fetchLimit = 20
                let trips = try rangeReader.fetch(descriptor)
                if asWritten { for trip in trips { readAll(trip) } }
                rangeRows += trips.count
            }
        }

        let counter = ModelContext(container)
        var counted = 0
        try phase(.count, record: record) {
            for i in 0..<10 {
                let threshold = Double(i * 100)
                counted += try counter.fetchCount(
                    FetchDescriptor<Trip>(predicate: #Predicate { $0.budget > threshold && $0.flag == false }))
            }
        }

        let enumerator = ModelContext(container)
        var enumerated = 0
        var budgets = 0.0
        var noteBytes = 0
        try phase(.enumerate, record: record) {
            try enumerator.enumerate(FetchDescriptor<Trip>(), batchSize: enumerateBatchSize) { trip in
                enumerated += 1
                budgets += trip.budget
                noteBytes &+= trip.note.utf8.count
                if asWritten { readAll(trip) }
            }
        }
        guard enumerated == workload.rows.count, noteBytes == 100 * enumerated else {
            throw BenchError("enumerate saw \(enumerated) rows, \(noteBytes) note bytes")
        }

        let updater = ModelContext(container)
        try phase(.update, record: record) {
            if asWritten {
                // Fetch, change, save every 1000: the common way to update records.
                for (i, row) in workload.updates.enumerated() {
                    let id = row.id
                    guard
                        let trip = try updater.fetch(FetchDescriptor<Trip>(predicate: #Predicate { $0.id == id })).first
                    else { throw BenchError("no trip \(id)") }
                    trip.budget = row.budget + 1
                    if (i + 1) % 1000 == 0 { try updater.save() }
                }
                try updater.save()
                return
            }
            var start = 0
            while start < updateIDs.count {
                let end = min(start + 1000, updateIDs.count)
                for i in start..<end {
                    guard let trip = try updater.existingModel(for: updateIDs[i]) as? Trip else {
                        throw BenchError("not a Trip")
                    }
                    trip.budget = workload.updates[i].budget + 1
                }
                try updater.save()
                start = end
            }
        }

        let single = ModelContext(container)
        try phase(.singles, record: record) {
            for row in workload.singles {
                single.insert(makeTrip(row))
                try single.save()
            }
        }

        try livePhases(container, updateIDs: updateIDs, record: record)
        if asWritten { try stepPhases(container, record: record) }

        let deleter = ModelContext(container)
        let doomed = workload.doomedDestinations
        // Counted outside the phase: a delete by predicate on an entity without
        // relationships loads no models, so `deletedModelsArray` does not list them.
        let before = try deleter.fetchCount(FetchDescriptor<Trip>())
        try phase(.delete, record: record) {
            try deleter.delete(model: Trip.self, where: #Predicate { doomed.contains($0.destination) })
            try deleter.save()
        }
        let deleted = before - (try deleter.fetchCount(FetchDescriptor<Trip>()))
        guard deleted == expectedDeleted else { throw BenchError("deleted \(deleted), expected \(expectedDeleted)") }
        if asWritten {
            // An import that skips rows it has: a look-up by id before each insert, one save.
            let importer = ModelContext(container)
            try phase(.imports, record: record) {
                for row in workload.imports {
                    let id = row.id
                    if try importer.fetch(FetchDescriptor<Trip>(predicate: #Predicate { $0.id == id })).isEmpty {
                        importer.insert(makeTrip(row))
                    }
                }
                try importer.save()
            }
        }
        checksum = checksum &+ counted &+ rangeRows &+ Int(budgets)
    }

    /// Whether the cell runs the workload as an app writes it (`--as-written`).
    var asWritten: Bool { spec.shape.asWritten }

    /// Reads every property of `trip`, as a row shown in full.
    func readAll(_ trip: Trip) {
        sink &+= trip.id.hashValue &+ trip.destination.utf8.count &+ Int(trip.startDate.timeIntervalSinceReferenceDate)
        sink &+= Int(trip.budget) &+ (trip.flag ? 1 : 0) &+ trip.note.utf8.count
    }

    /// The transaction phases of the as-written workload: `lookupIDs.count` steps, each a
    /// fetch by the unique id and a change of the budget, saved once, and then the same
    /// steps saved every 100.
    func stepPhases(_ container: ModelContainer, record: Bool) throws {
        func steps(_ context: ModelContext, savingEvery interval: Int?) throws {
            for (i, id) in workload.lookupIDs.enumerated() {
                guard let trip = try context.fetch(FetchDescriptor<Trip>(predicate: #Predicate { $0.id == id })).first
                else { throw BenchError("no trip \(id)") }
                trip.budget += 1
                if let interval, (i + 1) % interval == 0 { try context.save() }
            }
            try context.save()
        }
        let once = ModelContext(container)
        try phase(.steps, record: record) { try steps(once, savingEvery: nil) }
        let often = ModelContext(container)
        try phase(.steps100, record: record) { try steps(often, savingEvery: 100) }
    }

    /// The rows after the single-row saves, before the batch delete.
    var rowsBeforeDelete: Int { workload.rows.count + workload.singles.count }

    /// The live-results phase (a `ResultsObserver` of every trip by start date, read after
    /// each save that moves one trip) and the re-fetch phase (the same saves, each followed
    /// by fetching the sorted result again). After each save the app reads the result's
    /// count and its first 20 models.
    func livePhases(_ container: ModelContainer, updateIDs: [PersistentIdentifier], record: Bool) throws {
        let mover = ModelContext(container)
        let viewer = ModelContext(container)
        let sorted = FetchDescriptor<Trip>(sortBy: [SortDescriptor(\.startDate)])
        var shown = 0.0
        func move(_ save: Int, to date: Date) throws {
            guard let trip = try mover.existingModel(for: updateIDs[save % updateIDs.count]) as? Trip else {
                throw BenchError("not a Trip")
            }
            trip.startDate = date
            try mover.save()
        }
        func read(_ results: FetchResultsCollection<Trip>) throws {
            guard results.count == rowsBeforeDelete else {
                throw BenchError("the sorted result has \(results.count) rows, expected \(rowsBeforeDelete)")
            }
            for k in 0..<20 { shown += results[k].startDate.timeIntervalSinceReferenceDate }
        }
        do {
            // Made (and its first fetch run) outside the phase; gone before the re-fetch
            // phase, so that its saves do not keep it current too.
            let observer = try ResultsObserver<Trip, Never>(fetchDescriptor: sorted, modelContext: viewer)
            try phase(.observe, record: record) {
                for i in 0..<spec.shape.observeSaves {
                    try move(i, to: workload.moves[i])
                    try read(observer.results)
                }
            }
        }
        try phase(.refetch, record: record) {
            for i in 0..<spec.shape.refetchSaves {
                try move(i + spec.shape.observeSaves, to: workload.moves[i].addingTimeInterval(1))
                try read(try viewer.fetch(sorted, batchSize: 256))
            }
        }
        checksum = checksum &+ Int(shown) % 1000
    }

    func runStowage(_ store: StoreKind, run: Int, record: Bool) throws {
        let url = storeURL(run: run)
        defer {
            for suffix in ["", ".lock", ".tmp"] {
                try? FileManager.default.removeItem(atPath: url.path + suffix)
            }
            if store.isPostgres { PostgresBench.drop(postgresName(run)) }
        }
        var container: ModelContainer? = try makeContainer(store, run: run)
        if let container { try stowagePhases(container, record: record) }
        guard store.persists else {
            // Nothing to reopen: the memory store's records go with its container.
            container = nil
            return
        }
        var reopenedCount = 0
        progress(" reopen")
        // Dropping the container closes the store: it must release its lock, or the open below fails.
        let close = time { container = nil }
        let open = try time {
            let again = try makeContainer(store, run: run)
            reopenedCount = try ModelContext(again).fetchCount(FetchDescriptor<Trip>())
            container = again
        }
        guard reopenedCount == expectedFinalCount else {
            throw BenchError("reopened \(reopenedCount), expected \(expectedFinalCount)")
        }
        container = nil
        let size = try postgresDatabases[run].map(PostgresBench.size) ?? directoryBytes()
        if record {
            self.record(.reopen, close + open)
            self.record(.open, open)
            bytesOnDisk.append(size)
        }
    }

    /// The bytes of every file in this cell's directory: the store and its lock file (only
    /// the current run's files exist; each run removes its own).
    func directoryBytes() throws -> Int64 {
        var total: Int64 = 0
        for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) {
            let attributes = try FileManager.default.attributesOfItem(
                atPath: directory.appendingPathComponent(name).path)
            total += (attributes[.size] as? NSNumber)?.int64Value ?? 0
        }
        return total
    }

    // MARK: The peer

    func runPeer(_ kind: PeerKind, run: Int, record: Bool) throws {
        let path = kind.persists ? directory.appendingPathComponent("peer\(run).sqlite").path : ":memory:"
        let database = kind == .libpq ? postgresName(run) : nil
        let conninfo = try database.map(PostgresBench.create)
        defer {
            if let database { PostgresBench.drop(database) }
            if kind.persists {
                for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
            }
        }
        let cache = spec.sqliteCacheMiB
        func open(reopen: Bool) throws -> any TripPeer {
            if let conninfo { return try LibPQPeer(conninfo: conninfo, reopen: reopen) }
            return try SQLitePeer(path: path, synchronous: kind.synchronous, cacheMiB: cache, reopen: reopen)
        }
        var peer = try open(reopen: false)
        try phase(.insert, record: record) { try peer.insert(workload.rows) }

        var found = 0
        try phase(.point, record: record) {
            for id in workload.lookupIDs {
                guard let row = try peer.fetch(id: id) else { continue }
                if asWritten { readAll(row) }
                found += 1
            }
        }
        guard found == workload.lookupIDs.count else { throw BenchError("SQLite point fetches found \(found)") }

        var equalityRows = 0
        try phase(.equality, record: record) {
            for destination in workload.destinations {
                let rows = try peer.fetch(destination: destination)
                if asWritten { for row in rows { readAll(row) } }
                equalityRows += rows.count
            }
        }
        guard equalityRows == workload.rows.count else {
            throw BenchError("SQLite equality fetches found \(equalityRows)")
        }

        var rangeRows = 0
        try phase(.range, record: record) {
            for start in workload.rangeStarts {
                let rows = try peer.fetch(after: start, limit: 20)
                if asWritten { for row in rows { readAll(row) } }
                rangeRows += rows.count
            }
        }

        var counted = 0
        try phase(.count, record: record) {
            for i in 0..<10 { counted += try peer.countUnindexed(budgetAbove: Double(i * 100)) }
        }

        var enumerated = 0
        var budgets = 0.0
        var noteBytes = 0
        try phase(.enumerate, record: record) {
            try peer.enumerateAll { row in
                enumerated += 1
                budgets += row.budget
                noteBytes &+= row.note.utf8.count
                if asWritten { readAll(row) }
            }
        }
        guard enumerated == workload.rows.count, noteBytes == 100 * enumerated else {
            throw BenchError("SQLite enumerate saw \(enumerated) rows, \(noteBytes) note bytes")
        }

        try phase(.update, record: record) {
            if asWritten {
                try peer.fetchAndUpdateBudgets(workload.updates.map { ($0.id, $0.budget + 1) }, batch: 1000)
            } else {
                try peer.updateBudgets(workload.updates, batch: 1000)
            }
        }
        try phase(.singles, record: record) {
            for row in workload.singles { try peer.insertOne(row) }
        }
        // What an app without an observer does after each save: runs the query again.
        var shown = 0.0
        func moveAndQuery(_ save: Int, to date: Date) throws {
            let pk = workload.updates[save % workload.updates.count].pk
            let (count, sum) = try peer.move(pk: pk, to: date, thenReadSortedShowing: 20)
            guard count == rowsBeforeDelete else {
                throw BenchError("SQLite's sorted result has \(count) rows, expected \(rowsBeforeDelete)")
            }
            shown += sum
        }
        try phase(.observe, record: record) {
            for i in 0..<spec.shape.observeSaves { try moveAndQuery(i, to: workload.moves[i]) }
        }
        try phase(.refetch, record: record) {
            for i in 0..<spec.shape.refetchSaves {
                try moveAndQuery(i + spec.shape.observeSaves, to: workload.moves[i].addingTimeInterval(1))
            }
        }
        checksum = checksum &+ Int(shown) % 1000
        if asWritten {
            try phase(.steps, record: record) { try peer.steps(workload.lookupIDs, commitEvery: nil) }
            try phase(.steps100, record: record) { try peer.steps(workload.lookupIDs, commitEvery: 100) }
        }
        var deleted = 0
        try phase(.delete, record: record) { deleted = try peer.delete(destinations: workload.doomedDestinations) }
        guard deleted == expectedDeleted else {
            throw BenchError("SQLite deleted \(deleted), expected \(expectedDeleted)")
        }
        if asWritten {
            try phase(.imports, record: record) { try peer.importLookingUp(workload.imports) }
        }
        checksum = checksum &+ counted &+ rangeRows &+ Int(budgets)
        guard kind.persists else {
            peer.close()
            return
        }
        var reopenedCount = 0
        progress(" reopen")
        let close = time { peer.close() }
        let open = try time {
            peer = try open(reopen: true)
            reopenedCount = try peer.count()
        }
        guard reopenedCount == expectedFinalCount else {
            throw BenchError("SQLite reopened \(reopenedCount), expected \(expectedFinalCount)")
        }
        let size = try peer.bytesOnDisk()
        peer.close()
        if record {
            self.record(.reopen, close + open)
            self.record(.open, open)
            bytesOnDisk.append(size)
        }
    }
}

/// Folded into by every phase so that no result goes unused.
nonisolated(unsafe) var checksum = 0
/// Folded into by every property the as-written workload reads.
nonisolated(unsafe) var sink = 0

extension CellRunner {
    /// Reads every column of `row`, as the Stowage side reads every property.
    func readAll(_ row: TripRow) {
        sink &+= row.id.hashValue &+ row.destination.utf8.count &+ Int(row.startDate.timeIntervalSinceReferenceDate)
        sink &+= Int(row.budget) &+ (row.flag ? 1 : 0) &+ row.note.utf8.count
    }
}

/// The child's entry point: runs the cell and prints its result as one JSON line.
func runCell(_ spec: CellSpec) -> Int32 {
    do {
        let runner = try CellRunner(spec: spec)
        let result = try runner.run()
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let line = String(decoding: try encoder.encode(result), as: UTF8.self)
        print(line)
        return 0
    } catch {
        progress("\nstowage-bench: cell \(spec.argument) failed: \(error)\n")
        return 1
    }
}
