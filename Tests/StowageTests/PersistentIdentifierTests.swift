import Foundation
import Testing

@testable import Stowage

/// Identifiers share an interned scope (entity, store, kind) and hash with their own mix;
/// equality, hashing, ordering and the coded form must be what they were when each
/// identifier held its own strings.
@Suite("PersistentIdentifier")
struct PersistentIdentifierTests {
    @Test("equal exactly when entity, store and key are equal, however the identifier was made")
    func equality() {
        let a = PersistentIdentifier.permanent(entityName: "Trip", storeIdentifier: "s1", primaryKey: 7)
        // Strings built at run time, so that they are not the same buffers as the literals.
        let entity = String("Tr") + String("ip")
        let store = String("s") + String(1)
        let b = PersistentIdentifier(entityName: entity, storeIdentifier: store, storage: .permanent(7))
        #expect(a == b)
        #expect(a.hashValue == b.hashValue)
        #expect(Set([a, b]).count == 1)
        let different = [
            PersistentIdentifier.permanent(entityName: "Trip", storeIdentifier: "s1", primaryKey: 8),
            PersistentIdentifier.permanent(entityName: "Trip", storeIdentifier: "s2", primaryKey: 7),
            PersistentIdentifier.permanent(entityName: "Person", storeIdentifier: "s1", primaryKey: 7),
            PersistentIdentifier(entityName: "Trip", storeIdentifier: "s1", storage: .temporary(7)),
            PersistentIdentifier(entityName: "Trip", storeIdentifier: nil, storage: .permanent(7)),
        ]
        for other in different { #expect(a != other, "\(a) and \(other)") }
        #expect(Set(different + [a, b]).count == different.count + 1)
    }

    @Test("the parts read back as they were given")
    func parts() {
        let temporary = PersistentIdentifier(entityName: "Trip", storeIdentifier: nil, storage: .temporary(UInt64.max))
        #expect(temporary.isTemporary)
        #expect(temporary.primaryKey == nil)
        #expect(temporary.storage == .temporary(UInt64.max))
        #expect(temporary.storeIdentifier == nil)
        let permanent = PersistentIdentifier.permanent(entityName: "Trip", storeIdentifier: "s", primaryKey: -3)
        #expect(!permanent.isTemporary)
        #expect(permanent.primaryKey == -3)
        #expect(permanent.storage == .permanent(-3))
        #expect(permanent.entityName == "Trip")
        #expect(permanent.storeIdentifier == "s")
    }

    @Test("a dictionary keyed by many identifiers finds each one")
    func dictionary() {
        var byID: [PersistentIdentifier: Int] = [:]
        for key in 0..<20_000 {
            byID[
                .permanent(entityName: key % 2 == 0 ? "Trip" : "Person", storeIdentifier: "s", primaryKey: Int64(key))] =
                key
        }
        #expect(byID.count == 20_000)
        for key in stride(from: 0, to: 20_000, by: 37) {
            let id = PersistentIdentifier.permanent(
                entityName: key % 2 == 0 ? "Trip" : "Person", storeIdentifier: "s", primaryKey: Int64(key))
            #expect(byID[id] == key)
            let otherEntity = PersistentIdentifier.permanent(
                entityName: key % 2 == 0 ? "Person" : "Trip", storeIdentifier: "s", primaryKey: Int64(key))
            #expect(byID[otherEntity] == nil)
        }
    }

    @Test("orders by store, then entity, then key; temporary after permanent")
    func ordering() {
        let ids = [
            PersistentIdentifier(entityName: "A", storeIdentifier: nil, storage: .temporary(1)),
            PersistentIdentifier.permanent(entityName: "B", storeIdentifier: "s2", primaryKey: 1),
            PersistentIdentifier.permanent(entityName: "A", storeIdentifier: "s1", primaryKey: 10),
            PersistentIdentifier.permanent(entityName: "A", storeIdentifier: "s1", primaryKey: 2),
            PersistentIdentifier.permanent(entityName: "B", storeIdentifier: "s1", primaryKey: 1),
            PersistentIdentifier(entityName: "A", storeIdentifier: "s1", storage: .temporary(1)),
        ]
        #expect(
            ids.sorted().map(\.description) == [
                "A/p2@s1", "A/p10@s1", "A/t1", "B/p1@s1", "B/p1@s2", "A/t1",
            ])
        #expect(ids.sorted().last?.storeIdentifier == nil)
    }

    @Test("codes to the same keyed form as before, and decodes it")
    func coding() throws {
        let id = PersistentIdentifier.permanent(entityName: "Trip", storeIdentifier: "log-1", primaryKey: 42)
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let text = String(decoding: try encoder.encode(id), as: UTF8.self)
        #expect(text == #"{"entityName":"Trip","storage":{"permanent":{"_0":42}},"storeIdentifier":"log-1"}"#)
        #expect(try JSONDecoder().decode(PersistentIdentifier.self, from: Data(text.utf8)) == id)
        let temporary = #"{"entityName":"Trip","storage":{"temporary":{"_0":5}}}"#
        let decoded = try JSONDecoder().decode(PersistentIdentifier.self, from: Data(temporary.utf8))
        #expect(decoded.storage == .temporary(5))
        #expect(decoded.storeIdentifier == nil)
    }
}
