import Foundation
@_spi(Testing) import Stowage

/// The saves of the soak runs (the kill -9 soaks' `soak` mode of LogCrashChild and the
/// disk-full tests): several workers, each with a context of its own, save numbered
/// `CrashBatch` batches of sizes drawn from a seed, and each save is one unit of three
/// changes that must land together or not at all:
///
/// - it inserts the worker's batch `k` (``size(ofBatch:)`` rows, external blobs included
///   when ``withBlobs``);
/// - it updates every row of the worker's batch `k - 1` (payload and blob: "touched"), so
///   that record versions die and automatic compaction has dead bytes to collect;
/// - it deletes every row of the worker's batch `k - window`.
///
/// So after a worker's saves 1...j have landed (and none after), the store holds exactly its
/// batches `j - window + 1 ... j`, each whole, all but batch `j` touched: the state is one
/// number a worker, which ``check(_:)`` reads back and verifies to the last byte.
public struct SoakPlan: Sendable {
    public let seed: UInt64
    public let workers: Int
    public let window: Int
    public let withBlobs: Bool

    public init(seed: UInt64, workers: Int = 2, window: Int = 4, withBlobs: Bool = true) {
        self.seed = seed
        self.workers = max(1, workers)
        self.window = max(2, window)
        self.withBlobs = withBlobs
    }

    /// The batch number of worker `worker`'s `k`th save (k from 1).
    public func batch(worker: Int, save k: Int) -> Int { k * workers + worker }
    public func worker(ofBatch batch: Int) -> Int { batch % workers }
    public func save(ofBatch batch: Int) -> Int { batch / workers }

    private func mix(_ batch: Int, _ salt: UInt64) -> UInt64 {
        var z = seed ^ (UInt64(truncatingIfNeeded: batch) &* 0x9E37_79B9_7F4A_7C15) ^ salt
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// The rows of a batch, drawn from the seed: half the batches 1 to 8 rows, a third 9 to
    /// 40, the rest 41 to 120.
    public func size(ofBatch batch: Int) -> Int {
        let draw = mix(batch, 0x51ED)
        let spread = Int((draw >> 32) % 1_000_000)
        switch draw % 100 {
        case 0..<50: return 1 + spread % 8
        case 50..<85: return 9 + spread % 32
        default: return 41 + spread % 80
        }
    }

    public func payload(batch: Int, row: Int, touched: Bool) -> String {
        String(repeating: "batch \(batch) row \(row) ", count: (batch &* 31 &+ row) % 12)
            + (touched ? "touched \(batch)/\(row)" : "")
    }

    /// The external bytes of a row: empty for about half the rows, and always without
    /// ``withBlobs``.
    public func blob(batch: Int, row: Int, touched: Bool) -> Data {
        guard withBlobs, (batch &+ row &+ (touched ? 1 : 0)) % 2 == 0 else { return Data() }
        let count = (batch &* 131 &+ row &* 17 &+ (touched ? 7 : 0)) % 2000
        let salt = touched ? 101 : 0
        return Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ batch &+ row &+ salt) })
    }

    /// Puts worker `worker`'s save `k` into `context` (inserts, updates and deletes, as the
    /// type describes), for the caller to save.
    public func stage(worker: Int, save k: Int, in context: ModelContext) throws {
        let new = batch(worker: worker, save: k)
        for row in 0..<size(ofBatch: new) {
            context.insert(
                CrashBatch(
                    batch: new, index: row, payload: payload(batch: new, row: row, touched: false),
                    blob: blob(batch: new, row: row, touched: false)))
        }
        if k >= 2 {
            let previous = batch(worker: worker, save: k - 1)
            for model in try context.fetch(FetchDescriptor<CrashBatch>(predicate: #Predicate { $0.batch == previous }))
            {
                model.payload = payload(batch: previous, row: model.index, touched: true)
                model.blob = blob(batch: previous, row: model.index, touched: true)
            }
        }
        if k > window {
            let old = batch(worker: worker, save: k - window)
            for model in try context.fetch(FetchDescriptor<CrashBatch>(predicate: #Predicate { $0.batch == old })) {
                context.delete(model)
            }
        }
    }

    /// One stored row, as a store gives it back.
    public struct Row: Sendable {
        public var batch: Int
        public var index: Int
        public var payload: String
        public var blob: Data

        public init(batch: Int, index: Int, payload: String, blob: Data) {
            self.batch = batch
            self.index = index
            self.payload = payload
            self.blob = blob
        }
    }

    /// Each worker's last landed save (0 when none), read from the rows, and everything that
    /// does not match the state those saves leave: a batch missing from the window or one
    /// outside it, a row missing, extra or twice, a wrong payload or blob (touched or not).
    public func check(_ rows: [Row]) -> (lastSave: [Int], problems: [String]) {
        var problems: [String] = []
        var rowsOfBatch: [Int: [Int: Row]] = [:]
        for row in rows {
            if rowsOfBatch[row.batch, default: [:]].updateValue(row, forKey: row.index) != nil {
                problems.append("batch \(row.batch) row \(row.index): twice")
            }
        }
        var lastSave = [Int](repeating: 0, count: workers)
        for batch in rowsOfBatch.keys where batch >= 0 {
            let w = worker(ofBatch: batch)
            lastSave[w] = max(lastSave[w], save(ofBatch: batch))
        }
        var expected: Set<Int> = []
        for w in 0..<workers where lastSave[w] > 0 {
            for k in max(1, lastSave[w] - window + 1)...lastSave[w] { expected.insert(batch(worker: w, save: k)) }
        }
        for batch in Set(rowsOfBatch.keys).subtracting(expected).sorted() {
            problems.append(
                "batch \(batch) (worker \(worker(ofBatch: batch)), save \(save(ofBatch: batch))) is there "
                    + "and should not be; last saves \(lastSave)")
        }
        for batch in expected.sorted() {
            guard let found = rowsOfBatch[batch] else {
                problems.append(
                    "batch \(batch) (worker \(worker(ofBatch: batch)), save \(save(ofBatch: batch))) is missing; "
                        + "last saves \(lastSave)")
                continue
            }
            let touched = save(ofBatch: batch) < lastSave[worker(ofBatch: batch)]
            let size = size(ofBatch: batch)
            if found.count != size || Set(found.keys) != Set(0..<size) {
                problems.append("batch \(batch) has rows \(found.keys.sorted()) of 0..<\(size): half a save")
            }
            for (index, row) in found.sorted(by: { $0.key < $1.key }) {
                var wrong: [String] = []
                if row.payload != payload(batch: batch, row: index, touched: touched) {
                    wrong.append(
                        row.payload == payload(batch: batch, row: index, touched: !touched)
                            ? "payload \(touched ? "not " : "")touched" : "payload")
                }
                if row.blob != blob(batch: batch, row: index, touched: touched) {
                    wrong.append(
                        row.blob == blob(batch: batch, row: index, touched: !touched)
                            ? "blob \(touched ? "not " : "")touched" : "blob (\(row.blob.count) bytes)")
                }
                if !wrong.isEmpty { problems.append("batch \(batch) row \(index): \(wrong.joined(separator: ", "))") }
            }
        }
        return (lastSave, problems)
    }

    /// Every `CrashBatch` row of `store`, read through its snapshots.
    public static func rows(of store: some SnapshotTableStore) throws -> [Row] {
        let entity = Schema([CrashBatch.self]).entitiesByName["CrashBatch"]!
        return try store.allSnapshots(of: "CrashBatch").map { snapshot in
            var row = Row(batch: -1, index: -1, payload: "", blob: Data())
            if case .int(let batch)? = snapshot.value(forKey: "batch", in: entity) { row.batch = Int(batch) }
            if case .int(let index)? = snapshot.value(forKey: "index", in: entity) { row.index = Int(index) }
            if case .string(let payload)? = snapshot.value(forKey: "payload", in: entity) { row.payload = payload }
            if case .data(let blob)? = snapshot.value(forKey: "blob", in: entity) { row.blob = blob }
            return row
        }
    }
}
