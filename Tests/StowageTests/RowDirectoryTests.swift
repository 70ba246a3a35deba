import StowageTestSupport
import Testing

@testable import Stowage

/// The primary-key directory against a plain dictionary, through random inserts,
/// replacements and removals: keys in pages, keys past the dense range and negative keys.
@Suite("Row directory")
struct RowDirectoryTests {
    /// A row that carries its key and a version, so a look-up can say which write it found.
    static func row(_ key: Int64, _ version: Int) -> StoredRow {
        .location(RecordLocation(blockOffset: Int64(version), slot: Int(key & 4095)))
    }

    static func version(_ row: StoredRow?) -> Int64? {
        guard case .location(let location)? = row else { return nil }
        return location.blockOffset
    }

    func expectSame(_ directory: RowDirectory, _ model: [Int64: Int], _ when: String = "") {
        #expect(directory.count == model.count, "count \(when)")
        #expect(directory.isEmpty == model.isEmpty, "isEmpty \(when)")
        let listed = directory.map { ($0.key, Self.version($0.value) ?? -1) }
        let expected = model.keys.sorted().map { ($0, Int64(model[$0] ?? -1)) }
        #expect(listed.map(\.0) == expected.map(\.0), "keys in ascending order \(when)")
        #expect(listed.map(\.1) == expected.map(\.1), "each key's latest row \(when)")
        #expect(directory.first?.key == expected.first?.0, "first \(when)")
        #expect(directory.last?.key == expected.last?.0, "last \(when)")
    }

    @Test func randomWritesMatchADictionary() {
        var rng = SeededRandom(seed: 7)
        let limit = Int64(RowDirectory.denseLimit)
        // Keys near page edges, far apart, past the dense range and below zero.
        let pool: [Int64] =
            Array(0..<3000) + [1023, 1024, 1025, 4095, 4096, 99_999, 1 << 20]
            + [limit - 1, limit, limit + 1, Int64.max, -1, -2, Int64.min]
        var directory = RowDirectory()
        var model: [Int64: Int] = [:]
        for step in 1...20_000 {
            let key = pool[Int(rng.next() % UInt64(pool.count))]
            if rng.next() % 3 == 0 {
                let removed = directory.removeValue(forKey: key)
                let expected = model.removeValue(forKey: key)
                #expect(Self.version(removed) == expected.map(Int64.init), "remove \(key) at step \(step)")
            } else {
                let replaced = directory.updateValue(Self.row(key, step), forKey: key)
                let expected = model.updateValue(step, forKey: key)
                #expect(Self.version(replaced) == expected.map(Int64.init), "write \(key) at step \(step)")
            }
            if step % 2000 == 0 { expectSame(directory, model, "after step \(step)") }
        }
        for key in pool {
            #expect(Self.version(directory.value(forKey: key)) == model[key].map(Int64.init), "look up \(key)")
        }
        // Emptying every page leaves nothing behind, and the directory fills again.
        for key in pool { directory.removeValue(forKey: key) }
        expectSame(directory, [:], "after removing every key")
        directory.updateValue(Self.row(5, 1), forKey: 5)
        expectSame(directory, [5: 1])
    }

    @Test func aCopyIsUnchangedByWritesToTheOriginal() {
        var original = RowDirectory(sortedElements: (1...2000).map { (Int64($0), Self.row(Int64($0), 1)) })
        let copy = original
        original.updateValue(Self.row(5, 2), forKey: 5)
        original.removeValue(forKey: 1500)
        original.updateValue(Self.row(-4, 2), forKey: -4)
        #expect(Self.version(copy.value(forKey: 5)) == 1)
        #expect(copy.value(forKey: 1500) != nil)
        #expect(copy.value(forKey: -4) == nil)
        #expect(copy.count == 2000)
        #expect(original.count == 2000)
        #expect(Array(copy.map(\.key)) == (1...2000).map { Int64($0) })
    }

    @Test func missingKeysAreAbsent() {
        let directory = RowDirectory(sortedElements: [(Int64(10), Self.row(10, 1))])
        for key: Int64 in [0, 9, 11, 1023, 1024, 5_000_000, Int64(RowDirectory.denseLimit), -10, .max, .min] {
            #expect(directory.value(forKey: key) == nil, "key \(key)")
        }
        #expect(directory.count == 1)
    }
}
