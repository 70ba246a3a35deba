import Foundation
import StowageTestSupport
import Testing

@_spi(Testing) @testable import Stowage

/// The log reader's block cache on its own: a clock (second chance) evicts, where a read the
/// cache answers with a decoded write counts as a use of its block.
@Suite("LogStore block cache")
struct BlockCacheTests {
    static func savedBlock(_ key: Int64) -> CachedBlock {
        let snapshot = DefaultSnapshot(
            persistentIdentifier: .permanent(entityName: "Person", storeIdentifier: "cache-test", primaryKey: key),
            values: [.int(key)])
        // One write of 100 bytes: 64 + 2 × 100 + 48 = 312 for the cache.
        return CachedBlock(length: 100, slots: [0], decoded: [snapshot])
    }

    @Test func aDecodedWriteReadFromABlockKeepsItFromBeingEvictedNext() {
        var cache = BlockCache(capacity: 1000)
        for offset: Int64 in [100, 200, 300] { cache.put(offset, Self.savedBlock(offset)) }
        #expect(cache.count == 3)
        // 100 came in first; reading its write marks it, so 200 is the one to go.
        let read = cache.decodedWrite(100, slot: 0)
        #expect(read?.persistentIdentifier.primaryKey == 100)
        cache.put(400, Self.savedBlock(400))
        #expect(cache.offsets.cached == [100, 300, 400])
        // A block not cached gives nothing and moves nothing: 300 is the next to go.
        #expect(cache.decodedWrite(200, slot: 0) == nil)
        cache.put(500, Self.savedBlock(500))
        #expect(cache.offsets.cached == [100, 400, 500])
        // A slot the block does not have gives nothing.
        #expect(cache.decodedWrite(500, slot: 1) == nil)
        #expect(cache.decodedWrite(500, slot: 0)?.persistentIdentifier.primaryKey == 500)
    }

    @Test func aSweepPassesOverBlocksReadSinceItLastPassedAndClearsTheirMarks() {
        // Room for three blocks of 312.
        var cache = BlockCache(capacity: 1000)
        for offset: Int64 in [100, 200, 300] { cache.put(offset, Self.savedBlock(offset)) }
        _ = cache.decodedWrite(200, slot: 0)
        _ = cache.decodedWrite(300, slot: 0)
        // 100 was never read: it goes first.
        cache.put(400, Self.savedBlock(400))
        #expect(cache.offsets.cached == [200, 300, 400])
        // 200 and 300 were read and 400 was not: 400 goes, though it came in last (a list in
        // order of use would have let 200 go). The sweep cleared 200's and 300's marks.
        cache.put(500, Self.savedBlock(500))
        #expect(cache.offsets.cached == [200, 300, 500])
        // Unread since, 500 goes next, then 200 and 300 in the sweep's order.
        cache.put(600, Self.savedBlock(600))
        #expect(cache.offsets.cached == [200, 300, 600])
        cache.put(700, Self.savedBlock(700))
        #expect(cache.offsets.cached == [300, 600, 700])
        #expect(cache.used <= cache.capacity)
    }

    @Test func aBlockJustPutIsNotEvictedToMakeRoomForItself() {
        var cache = BlockCache(capacity: 1000)
        for offset: Int64 in [100, 200, 300] { cache.put(offset, Self.savedBlock(offset)) }
        for offset: Int64 in [100, 200, 300] { _ = cache.decodedWrite(offset, slot: 0) }
        // Every other block is marked: the sweep clears them all, passes over 400, and
        // evicts the first it comes back to.
        cache.put(400, Self.savedBlock(400))
        #expect(cache.offsets.cached == [200, 300, 400])
        #expect(cache.decodedWrite(400, slot: 0)?.persistentIdentifier.primaryKey == 400)
    }

    @Test func randomPutsAndReadsStayWithinTheCapacityAndReadTheRightBlock() {
        var rng = SeededRandom(seed: 11)
        var cache = BlockCache(capacity: 3000)
        var everPut: Set<Int64> = []
        for step in 0..<20_000 {
            let offset = Int64(rng.next() % 40) * 100 + 100
            if rng.next() % 3 == 0 {
                cache.put(offset, Self.savedBlock(offset))
                everPut.insert(offset)
                // The block just put is never the one evicted for it.
                #expect(cache.offsets.cached.contains(offset), "step \(step)")
                #expect(cache.used <= cache.capacity, "step \(step)")
                #expect(cache.count == cache.offsets.cached.count)
            } else {
                let read = cache.decodedWrite(offset, slot: 0)
                #expect(read == nil || read?.persistentIdentifier.primaryKey == offset, "step \(step)")
                #expect((read != nil) == cache.offsets.cached.contains(offset), "step \(step)")
            }
        }
        // Nine blocks fit: the cache is full, and holds only blocks that were put.
        #expect(cache.count == 9)
        #expect(cache.offsets.cached.isSubset(of: everPut))
    }
}
