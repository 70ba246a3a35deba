import Foundation
import Testing

@_spi(Testing) @testable import Stowage

/// The log reader's block cache on its own: least recently used out, where a read the cache
/// answers with a decoded write counts as a use of its block.
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
        // 100 is the least recently used; reading its write makes 200 the one to go.
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
}
