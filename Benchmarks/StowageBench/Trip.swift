import Foundation
import Stowage

/// The benchmark's model: a unique id, an indexed destination (100 values), an indexed
/// start date, a budget, a flag and a 100-byte note.
@Model
final class Trip {
    @Attribute(.unique) var id: UUID
    var destination: String
    var startDate: Date
    var budget: Double
    var flag: Bool
    var note: String
    #Index<Trip>([\.destination], [\.startDate])

    init(id: UUID, destination: String, startDate: Date, budget: Double, flag: Bool, note: String) {
        self.id = id
        self.destination = destination
        self.startDate = startDate
        self.budget = budget
        self.flag = flag
        self.note = note
    }
}

/// The same row as a plain struct, which the SQLite side materialises into.
struct TripRow {
    var pk: Int64
    var id: UUID
    var destination: String
    var startDate: Date
    var budget: Double
    var flag: Bool
    var note: String
}

/// Deterministic rows, the same for both sides.
struct Workload {
    let rows: [TripRow]
    let destinations: [String]
    let lookupIDs: [UUID]
    let rangeStarts: [Date]
    /// Every tenth row, whose budget the update phase raises by 1.
    let updates: [TripRow]
    /// More rows, for the single-row saves (1000 by default).
    let singles: [TripRow]
    /// The destinations the batch delete removes (10 of 100).
    let doomedDestinations: [String]
    /// The new start dates of the live-results and re-fetch phases' saves: save `i` moves
    /// `updates[i % updates.count]` to `moves[i]`.
    let moves: [Date]
    /// New rows for the as-written workload's import (10,000): each looked up by its id
    /// first, as an import that avoids duplicates does.
    let imports: [TripRow]

    init(_ shape: WorkloadShape) {
        let count = shape.n
        let seed = shape.seed
        var rng = SplitMix(seed: seed)
        destinations = (0..<100).map { "Destination \($0)" }
        let base = Date(timeIntervalSinceReferenceDate: 800_000_000)
        // Notes of random letters by default, which LZ4 cannot shrink much; `--uniform-notes`
        // repeats one letter, which flatters a compressing store's bytes on disk.
        let randomNotes = shape.randomNotes
        var noteRNG = SplitMix(seed: seed ^ 0x4E0735)
        let letters = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789".utf8)
        func makeNote() -> String {
            guard randomNotes else { return String(repeating: "n", count: 100) }
            var bytes = [UInt8](repeating: 0, count: 100)
            for i in 0..<100 { bytes[i] = letters[Int(noteRNG.next() % UInt64(letters.count))] }
            return String(decoding: bytes, as: UTF8.self)
        }
        let rows: [TripRow] = (0..<count).map { i in
            var bytes = (rng.next(), rng.next())
            let id = withUnsafeBytes(of: &bytes) { raw in
                UUID(uuid: raw.load(as: uuid_t.self))
            }
            return TripRow(
                pk: Int64(i + 1), id: id, destination: "Destination \(rng.next() % 100)",
                startDate: base.addingTimeInterval(Double(rng.next() % 31_536_000)),
                budget: Double(rng.next() % 10_000) / 10, flag: rng.next() % 2 == 0, note: makeNote())
        }
        self.rows = rows
        lookupIDs = (0..<shape.pointFetches).map { _ in rows[Int(rng.next() % UInt64(count))].id }
        rangeStarts = (0..<shape.rangeFetches).map { _ in base.addingTimeInterval(Double(rng.next() % 31_536_000)) }
        updates = stride(from: 0, to: count, by: 10).map { rows[$0] }
        singles = (0..<shape.singleSaves).map { i in
            var bytes = (rng.next(), rng.next())
            let id = withUnsafeBytes(of: &bytes) { raw in UUID(uuid: raw.load(as: uuid_t.self)) }
            return TripRow(
                pk: Int64(count + i + 1), id: id, destination: "Destination \(rng.next() % 100)",
                startDate: base.addingTimeInterval(Double(rng.next() % 31_536_000)),
                budget: Double(rng.next() % 10_000) / 10, flag: rng.next() % 2 == 0, note: makeNote())
        }
        doomedDestinations = (0..<10).map { "Destination \($0 * 10 + 3)" }
        moves = (0..<shape.observeSaves).map { _ in base.addingTimeInterval(Double(rng.next() % 31_536_000)) }
        let first = count + shape.singleSaves
        imports = (0..<(shape.asWritten ? 10_000 : 0)).map { i in
            var bytes = (rng.next(), rng.next())
            let id = withUnsafeBytes(of: &bytes) { raw in UUID(uuid: raw.load(as: uuid_t.self)) }
            return TripRow(
                pk: Int64(first + i + 1), id: id, destination: "Destination \(rng.next() % 100)",
                startDate: base.addingTimeInterval(Double(rng.next() % 31_536_000)),
                budget: Double(rng.next() % 10_000) / 10, flag: rng.next() % 2 == 0, note: "imported")
        }
    }
}

struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
