import Foundation
import StowageTestSupport
import Testing

@testable import Stowage

/// The chunked order a `ResultsObserver` keeps, against a sorted array.
@Suite("OrderedEntries")
struct OrderedEntriesTests {
    private static let order = EntryOrder(ascending: [false])

    private func id(_ n: Int64) -> PersistentIdentifier {
        PersistentIdentifier(entityName: "Thing", storeIdentifier: "s", storage: .permanent(n))
    }

    /// Random inserts, moves and removes over enough entries to split chunks and empty
    /// them: positions, order and identifiers stay those of a sorted array.
    @Test func randomChangesKeepTheOrderOfASortedArray() throws {
        var random = SeededRandom(seed: 7)
        var reference: [ObservedEntry] = []
        var entries = OrderedEntries()
        var keys: [Int64: Int] = [:]
        for step in 0..<6000 {
            let n = Int64.random(in: 0..<3000, using: &random)
            let entry = ObservedEntry(id: id(n), keys: [.int(Int64.random(in: 0..<50, using: &random))])
            if let old = keys[n] {
                let oldEntry = ObservedEntry(id: id(n), keys: [.int(Int64(old))])
                let position = entries.remove(oldEntry, Self.order)
                let expected = reference.firstIndex { $0.id == oldEntry.id }
                #expect(position == expected, "step \(step)")
                if let expected { reference.remove(at: expected) }
                keys[n] = nil
                if step.isMultiple(of: 3) { continue }
            }
            let position = entries.insert(entry, Self.order)
            let expected = reference.firstIndex { Self.order.precedes(entry, $0) } ?? reference.count
            #expect(position == expected, "step \(step)")
            reference.insert(entry, at: expected)
            if case .int(let key) = entry.keys[0] { keys[n] = Int(key) }
        }
        #expect(entries.count == reference.count)
        #expect(entries.allIdentifiers == reference.map(\.id))
        #expect(entries.chunks.count > 2, "the test reaches more than one chunk")
        #expect(entries.chunks.allSatisfy { !$0.isEmpty && $0.count <= OrderedEntries.chunkLimit })
        for position in stride(from: 0, to: reference.count, by: 97) {
            #expect(entries[position].id == reference[position].id)
        }
        #expect(entries.identifiers(in: 100..<700) == reference[100..<700].map(\.id))
        // Removing something that is not there changes nothing.
        #expect(entries.remove(ObservedEntry(id: id(99_999), keys: [.int(1)]), Self.order) == nil)
        #expect(entries.count == reference.count)
    }

    @Test func aListBuiltFromSortedEntriesSplitsIntoChunks() {
        let list = (0..<2000).map { ObservedEntry(id: id(Int64($0)), keys: [.int(Int64(2000 - $0))]) }
        let entries = OrderedEntries(sorted: list)
        #expect(entries.count == 2000)
        #expect(entries.allIdentifiers == list.map(\.id))
        #expect(entries.insertionPoint(of: list[1234], Self.order) == 1234)
    }
}
