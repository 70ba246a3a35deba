import Foundation
import StowageTestSupport
import Synchronization
import Testing

@testable import Stowage

/// A model's property accessors find their property's position from the key path: through
/// the entity's table of key path objects, then the key paths themselves.
@Suite("Key path positions")
struct KeyPathIndexTests {
    /// Every stored property's key path finds its position, read in turn many times over
    /// from two threads at once; and a key path that names no stored property finds none.
    @Test func keyPathsFindTheirPropertiesAcrossSlotsAndThreads() throws {
        let entity = try #require(Schema([Trip.self]).entitiesByName["Trip"])
        let paths: [(AnyKeyPath, String)] = [
            (\Trip.name, "name"), (\Trip.destination, "destination"), (\Trip.startDate, "startDate"),
            (\Trip.budget, "budget"), (\Trip.isFavorite, "isFavorite"), (\Trip.place, "place"),
            (\Trip.items, "items"), (\Trip.tags, "tags"),
        ]
        let expected = try paths.map { try #require(entity.property(named: $0.1)?.index) }
        // Key paths are immutable; AnyKeyPath is not marked Sendable.
        nonisolated(unsafe) let keyPaths = paths.map(\.0)
        let wrong = PosixMutex(0)
        DispatchQueue.concurrentPerform(iterations: 2) { _ in
            for _ in 0..<2000 {
                for (i, path) in keyPaths.enumerated() where entity.index(forKeyPath: path) != expected[i] {
                    wrong.withLock { $0 += 1 }
                }
            }
        }
        #expect(wrong.withLock { $0 } == 0)
        #expect(entity.index(forKeyPath: \Trip.isSelected) == nil)
    }
}
