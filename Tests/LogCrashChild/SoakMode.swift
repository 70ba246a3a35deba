// The soak mode of the crash child (the kill -9 soaks of Tests/StowageTests/LogCrashTests.swift
// and JSONCrashTests.swift):
//
//   LogCrashChild soak log|json <store-file> <seed> <round> [dead=<bytes>] [chunk=<bytes>]
//
// Two workers, `@ModelActor` actors each with a context of its own, save at once, forever,
// the batches of `SoakPlan(seed:)`: each save inserts a batch of a size drawn from the seed,
// touches the worker's previous batch and deletes its batch `window` saves back, as one
// unit. Each worker goes on from the last save of its own that the store holds. Prints
// "ready" once the store is open, "saving N" before each save of batch N and "N" once it
// returned.
//
// On a log store, automatic compaction is on with a dead-byte floor of `dead` (default
// 32 KiB) and a dead fraction of a quarter, so that compactions run in the background while
// the workers save; the main thread prints "compacted C" whenever the store's compaction
// count changes and "error ..." if one failed. After a save a worker writes a checkpoint one
// time in four (drawn from the seed, the round and the worker), printing "checkpointing"
// before and "checkpointed" after. `chunk` writes commits over that many bytes in pieces,
// frame last (`commitChunkBytes`).
import Foundation
@_spi(Testing) import Stowage
import StowageTestSupport

/// One of the soak mode's workers: a `@ModelActor` with a context of its own.
@ModelActor
actor SoakSaver {
    func save(_ plan: SoakPlan, worker: Int, save k: Int) throws {
        try plan.stage(worker: worker, save: k, in: modelContext)
        try modelContext.save()
    }
}

func runSoak(_ arguments: ArraySlice<String>) throws -> Never {
    let arguments = Array(arguments)
    guard arguments.count >= 4, let seed = UInt64(arguments[2]), let round = UInt64(arguments[3]) else {
        say("usage: LogCrashChild soak log|json <store-file> <seed> <round> [dead=<bytes>] [chunk=<bytes>]")
        exit(64)
    }
    var options: [String: Int] = [:]
    for option in arguments.dropFirst(4) {
        let parts = option.split(separator: "=")
        if parts.count == 2, let value = Int(parts[1]) { options[String(parts[0])] = value }
    }
    let log = arguments[0] == "log"
    let plan = SoakPlan(seed: seed, withBlobs: log)
    let schema = Schema([CrashBatch.self])
    let url = URL(fileURLWithPath: arguments[1])
    let configuration: any DataStoreConfiguration
    if log {
        var logConfiguration = LogStoreConfiguration(url: url)
        logConfiguration.automaticCompaction = .init(
            minimumDeadBytes: Int64(options["dead"] ?? 32 << 10), deadFraction: 0.25)
        if let chunk = options["chunk"] { logConfiguration.commitChunkBytes = chunk }
        configuration = logConfiguration
    } else {
        configuration = JSONStoreConfiguration(name: "soak", schema: schema, fileURL: url)
    }
    let container = try ModelContainer(for: schema, configurations: [configuration])
    var lastSave = [Int](repeating: 0, count: plan.workers)
    for batch in try ModelContext(container).fetch(FetchDescriptor<CrashBatch>()).map(\.batch) {
        lastSave[plan.worker(ofBatch: batch)] = max(lastSave[plan.worker(ofBatch: batch)], plan.save(ofBatch: batch))
    }
    say("ready")
    for worker in 0..<plan.workers {
        let first = lastSave[worker] + 1
        Task.detached {
            var random = SeededRandom(seed: seed ^ (round &* 0x1_0000_0001) ^ UInt64(worker + 1) &* 0x9E37_79B9)
            let store = container.storesForTesting.first as? LogStore
            do {
                let saver = SoakSaver(modelContainer: container)
                for k in first... {
                    let batch = plan.batch(worker: worker, save: k)
                    say("saving \(batch)")
                    try await saver.save(plan, worker: worker, save: k)
                    say(String(batch))
                    if let store, Int.random(in: 0..<4, using: &random) == 0 {
                        say("checkpointing")
                        try store.checkpoint()
                        say("checkpointed")
                    }
                }
            } catch {
                say("error \(error)")
                exit(1)
            }
        }
    }
    let store = container.storesForTesting.first as? LogStore
    var compactions = 0
    while true {
        usleep(1000)
        guard let store else { continue }
        let count = store.compactionCount
        if count != compactions {
            compactions = count
            say("compacted \(count)")
        }
        if let failure = store.lastAutomaticCompactionFailure {
            say("error automatic compaction: \(failure)")
            exit(1)
        }
    }
}
