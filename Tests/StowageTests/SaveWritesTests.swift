import Foundation
import StowageTestSupport
import Testing

@testable import Stowage

/// A save's writes are held column by column, with the entity once per run: reading them
/// back, by position or in order, must give every write as it was appended.
@Suite("Save writes")
struct SaveWritesTests {
    static func write(_ entity: String, _ key: Int64, insert: Bool) -> SaveWrites.Element {
        let id = PersistentIdentifier.permanent(entityName: entity, storeIdentifier: "s", primaryKey: key)
        return (entity, key, DefaultSnapshot(persistentIdentifier: id, values: [.int(key)]), insert)
    }

    static func same(_ a: SaveWrites.Element, _ b: SaveWrites.Element) -> Bool {
        a.entity == b.entity && a.key == b.key && a.snapshot == b.snapshot && a.isInsert == b.isInsert
    }

    @Test func writesReadBackByPositionAndInOrder() {
        var rng = SeededRandom.fromEnvironment()
        let seed = rng.seed
        for round in 0..<50 {
            // Runs of one entity of random lengths, an entity coming back after another.
            var expected: [SaveWrites.Element] = []
            var entity = "A"
            for key in 0..<Int64.random(in: 0...300, using: &rng) {
                if Int.random(in: 0..<8, using: &rng) == 0 { entity = ["A", "B", "C"].randomElement(using: &rng)! }
                expected.append(Self.write(entity, key, insert: Bool.random(using: &rng)))
            }
            var writes = SaveWrites()
            for write in expected { writes.append(write) }
            let context: Comment = "seed \(seed), round \(round)"
            #expect(writes.count == expected.count, context)
            #expect(zip(writes, expected).allSatisfy(Self.same) && Array(writes).count == expected.count, context)
            #expect(expected.indices.allSatisfy { Self.same(writes[$0], expected[$0]) }, context)
            #expect(expected.indices.allSatisfy { writes.isInsert(at: $0) == expected[$0].isInsert }, context)
            #expect(writes.keys == expected.map(\.key) && writes.snapshots == expected.map(\.snapshot), context)
            // The runs cover every position once, in order, each of one entity, and no two
            // neighbours name the same entity.
            let runs = writes.entityRuns
            #expect(runs.flatMap { Array($0.positions) } == Array(expected.indices), context)
            #expect(runs.allSatisfy { run in run.positions.allSatisfy { expected[$0].entity == run.entity } }, context)
            #expect(zip(runs, runs.dropFirst()).allSatisfy { $0.entity != $1.entity }, context)
        }
    }

    @Test func aSnapshotIsReplacedInPlaceAndTheListEmptied() {
        var writes: SaveWrites = [Self.write("A", 1, insert: true), Self.write("B", 2, insert: false)]
        let replacement = DefaultSnapshot(
            persistentIdentifier: writes[1].snapshot.persistentIdentifier, values: [.string("new")])
        writes.setSnapshot(replacement, at: 1)
        #expect(writes[1].snapshot == replacement && writes[1].entity == "B" && !writes[1].isInsert)
        #expect(Self.same(writes[0], Self.write("A", 1, insert: true)))
        writes.removeAll(keepingCapacity: true)
        #expect(writes.isEmpty && writes.entityRuns.isEmpty && Array(writes).isEmpty)
        writes.append(Self.write("C", 3, insert: true))
        #expect(writes.count == 1 && writes[0].entity == "C" && writes.entityRuns.map(\.entity) == ["C"])
    }
}
