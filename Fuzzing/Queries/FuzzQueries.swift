import Foundation
import StowageTestSupport

/// The fuzz target's entry point: the input as a stream of choices that make one query (a
/// predicate tree up to four deep, a sort, an offset and a limit; `RandomQueries`), run on
/// the memory, log and JSON stores, which hold the same rows written over several saves.
/// The property: every store's result and count equal a plain-Swift evaluation of the same
/// predicate over the same rows; a fetch that throws is a finding too, since every query it
/// makes is one the stores support.
func fuzzQueries(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: count)) } ?? []
    let problems = harness.check(bytes)
    guard problems.isEmpty else {
        fatalError("the stores disagree with the evaluation:\n" + problems.joined(separator: "\n"))
    }
    return 0
}

/// The stores and rows, made once per process.
nonisolated(unsafe) let harness: RandomQueries.Harness = {
    do {
        return try RandomQueries.Harness()
    } catch {
        fatalError("the query fuzzer's stores could not be made: \(error)")
    }
}()

/// Random choice streams of a few lengths.
func queriesSeeds() -> [[UInt8]] {
    var rng = SeededRandom(seed: 42)
    return (0..<64).map { i in (0..<(8 + i)).map { _ in UInt8.random(in: 0...255, using: &rng) } }
}
