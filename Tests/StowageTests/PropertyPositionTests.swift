import Foundation
import Stowage
import Testing

/// Persisted properties between transient, computed and static members: `@Model` reads
/// and writes each by its position among the persisted ones.
@Model final class Interleaved {
    @Transient var scratch = 7
    var first = ""
    var doubled: Int { second * 2 }
    static let shared = 0
    var second = 0
    @Transient var label = "transient"
    var third: Double = 0
    #if false
        func unrelated() {}
    #endif
    var fourth: String?

    init(first: String, second: Int, third: Double, fourth: String?) {
        self.first = first
        self.second = second
        self.third = third
        self.fourth = fourth
    }
}

@Suite("Properties read and written by position")
struct PropertyPositionTests {
    @Test func valuesLandInTheirOwnPropertiesThroughASaveAndALoad() throws {
        let container = try ModelContainer(
            for: Interleaved.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let writer = ModelContext(container)
        let model = Interleaved(first: "one", second: 2, third: 3.5, fourth: "four")
        model.scratch = 99
        writer.insert(model)
        try writer.save()
        #expect(model.first == "one" && model.second == 2 && model.third == 3.5 && model.fourth == "four")
        #expect(model.scratch == 99 && model.label == "transient" && model.doubled == 4)

        let reader = ModelContext(container)
        let loaded = try #require(try reader.fetch(FetchDescriptor<Interleaved>()).first)
        #expect(loaded !== model)
        #expect(loaded.first == "one" && loaded.second == 2 && loaded.third == 3.5 && loaded.fourth == "four")
        #expect(loaded.scratch == 7 && loaded.label == "transient")

        loaded.second = 20
        loaded.fourth = nil
        try reader.save()
        let again = try #require(try ModelContext(container).fetch(FetchDescriptor<Interleaved>()).first)
        #expect(again.first == "one" && again.second == 20 && again.third == 3.5 && again.fourth == nil)
        #expect(again.doubled == 40)
    }
}
