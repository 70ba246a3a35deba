import Foundation
import Stowage
import StowagePostgres

/// `--save-latency`: single-row saves on PostgreSQL, measured finely enough to tell a few
/// microseconds apart on a noisy machine. Four loops take turns in one process, in chunks
/// of ``chunk`` saves, for several rounds: libpq's one-statement `INSERT` (the peer of
/// stowage-bench's "single-row saves"), the same with 15 and with 30 µs of the app's own
/// work before each insert (a busy loop: what any code between two saves costs the round
/// trip on this machine), and `ModelContext.insert` + `save()` on a `PostgresStore`. Each
/// round's chunks are compared with the same round's libpq chunk (paired), so that a slow
/// moment of the machine falls on both; the first round is a warm-up.
enum SaveLatency {
    static let chunk = 300

    /// The four loops, in the order they take turns.
    enum Loop: CaseIterable {
        case libpq, libpqWork15, libpqWork30, stowage

        var title: String {
            switch self {
            case .libpq: "libpq: one prepared INSERT per save"
            case .libpqWork15: "libpq, with 15 µs of the app's own work before each save"
            case .libpqWork30: "libpq, with 30 µs of the app's own work before each save"
            case .stowage: "Stowage: ModelContext.insert + save() on PostgresStore"
            }
        }

        var workNanoseconds: UInt64 {
            switch self {
            case .libpqWork15: 15_000
            case .libpqWork30: 30_000
            default: 0
            }
        }
    }

    static func run(rounds: Int) throws -> String {
        let name = "stowage_bench_\(getpid())_save_latency"
        let conninfo = try PostgresBench.create(name)
        defer { PostgresBench.drop(name) }
        let description = PostgresBench.describe(conninfo)
        var markdown = ""
        // The container and the peer's connection go before the database is dropped.
        do {
            let container = try ModelContainer(
                for: [Trip.self],
                configurations: [PostgresStoreConfiguration(name: "bench", schema: Schema([Trip.self]), url: conninfo)])
            let context = ModelContext(container)
            let peer = try LibPQPeer(conninfo: conninfo)
            var rng = SplitMix(seed: 42)
            var pk: Int64 = 0
            func row() -> TripRow {
                pk += 1
                let letters = Array("abcdefghijklmnopqrstuvwxyz")
                return TripRow(
                    pk: pk, id: UUID(), destination: "Destination \(rng.next() % 100)",
                    startDate: Date(timeIntervalSince1970: 1_700_000_000 + Double(rng.next() % 31_536_000)),
                    budget: Double(rng.next() % 1_000_000) / 100, flag: rng.next() % 2 == 0,
                    note: String((0..<100).map { _ in letters[Int(rng.next() % 26)] }))
            }
            func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }
            // Microseconds per save, by loop, one sample per round.
            var samples: [Loop: [Double]] = [:]
            for round in 0...rounds {
                progress("\rsave latency: round \(round) of \(rounds)\(round == 0 ? " (warm-up)" : "")   ")
                for loop in Loop.allCases {
                    let rows = (0..<chunk).map { _ in row() }
                    let start = now()
                    for row in rows {
                        switch loop {
                        case .stowage:
                            context.insert(
                                Trip(
                                    id: row.id, destination: row.destination, startDate: row.startDate,
                                    budget: row.budget, flag: row.flag, note: row.note))
                            try context.save()
                        default:
                            let until = now() + loop.workNanoseconds
                            while now() < until {}
                            try peer.insertOne(row)
                        }
                    }
                    if round > 0 { samples[loop, default: []].append(Double(now() - start) / Double(chunk) / 1000) }
                }
            }
            progress("\n")
            let count = try context.fetchCount(FetchDescriptor<Trip>())
            guard count == rounds * chunk + chunk else {
                throw BenchError("the store holds \(count) trips, expected \((rounds + 1) * chunk)")
            }
            let base = samples[.libpq] ?? []
            func median(_ values: [Double]) -> Double {
                let sorted = values.sorted()
                return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
            }
            let host = machine()
            markdown += "### Single-row saves on PostgreSQL, loops taking turns (`--save-latency`)\n\n"
            markdown +=
                "- Machine: \(host.cpu), \(host.cores) cores, \(host.kernel); \(description)\n"
                + "- \(rounds) rounds after a warm-up, each loop \(chunk) saves per round; the ratio is libpq's time "
                + "over the loop's in the same round (above 1 means faster than libpq), median of the rounds\n\n"
            markdown += "| loop | µs per save (median) | vs libpq, same round | extra µs per save |\n"
            markdown += "|---|---:|---:|---:|\n"
            for loop in Loop.allCases {
                let mine = samples[loop] ?? []
                let ratios = zip(base, mine).map { $0 / $1 }
                let extra = zip(base, mine).map { $1 - $0 }
                markdown +=
                    "| \(loop.title) | "
                    + String(format: "%.1f | %.3f× | %+.1f", median(mine), median(ratios), median(extra))
                    + " |\n"
            }
        }
        return markdown
    }
}
