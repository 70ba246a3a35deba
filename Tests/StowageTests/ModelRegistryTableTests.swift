import Foundation
import StowageTestSupport
import Testing

@testable import Stowage

/// The identity map is a hash table of its own (dense arrays and a table of positions):
/// after any mix of registrations, replacements and removals it must answer as a
/// dictionary does.
@Suite("Model registry table")
struct ModelRegistryTableTests {
    @Test func anyMixOfChangesAnswersAsADictionaryDoes() {
        var rng = SeededRandom.fromEnvironment()
        let seed = rng.seed
        let models = (0..<64).map { Trip(name: "T\($0)") }
        // Identifiers of two scopes, with keys that collide in the low bits, and temporary ones.
        let ids: [PersistentIdentifier] =
            (0..<150).map {
                PersistentIdentifier.permanent(entityName: "Trip", storeIdentifier: "s", primaryKey: $0 * 64)
            }
            + (0..<100).map {
                PersistentIdentifier.permanent(entityName: "Chore", storeIdentifier: "s", primaryKey: $0)
            }
            + (0..<50).map { _ in PersistentIdentifier.temporary(entityName: "Trip") }
        for round in 0..<20 {
            var registry = round % 2 == 0 ? ModelRegistry() : ModelRegistry(minimumCapacity: round * 10)
            var expected: [PersistentIdentifier: ObjectIdentifier] = [:]
            var registrations = 0
            for _ in 0..<3000 {
                let id = ids.randomElement(using: &rng)!
                let model = models.randomElement(using: &rng)!
                switch Int.random(in: 0..<10, using: &rng) {
                case 0..<4:
                    registry[id] = model
                    expected[id] = ObjectIdentifier(model)
                    registrations += 1
                case 4..<6:
                    let previous = registry.updateValue(model, forKey: id)
                    #expect(previous.map { ObjectIdentifier($0) } == expected[id], "seed \(seed), round \(round)")
                    expected[id] = ObjectIdentifier(model)
                    registrations += 1
                case 6..<8:
                    let removed = registry.removeValue(forKey: id)
                    #expect(
                        removed.map { ObjectIdentifier($0) } == expected.removeValue(forKey: id),
                        "seed \(seed), round \(round)")
                case 8:
                    // Forgetting takes the entry out only if it is still that model's.
                    registry.forget(id, data: ObjectIdentifier(model.persistentBackingData))
                    if expected[id] == ObjectIdentifier(model) { expected[id] = nil }
                default:
                    registry[id] = nil
                    expected[id] = nil
                }
                #expect(registry.count == expected.count, "seed \(seed), round \(round)")
            }
            #expect(registry.registrations == registrations, "seed \(seed), round \(round)")
            for id in ids {
                #expect(
                    registry[id].map { ObjectIdentifier($0) } == expected[id], "seed \(seed), round \(round), \(id)")
            }
            // Emptied one by one, it finds every remaining entry until the last.
            for id in ids.shuffled(using: &rng) where expected[id] != nil {
                #expect(
                    registry.removeValue(forKey: id).map { ObjectIdentifier($0) } == expected.removeValue(forKey: id),
                    "seed \(seed), round \(round)")
                #expect(
                    expected.keys.allSatisfy { registry[$0].map { ObjectIdentifier($0) } == expected[$0] },
                    "seed \(seed), round \(round)")
            }
            #expect(registry.isEmpty, "seed \(seed), round \(round)")
        }
    }
}
