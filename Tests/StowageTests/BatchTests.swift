import Foundation
@_spi(Testing) import Stowage
import StowageTestSupport
import Testing

@Suite("Batched fetching and enumeration")
struct BatchTests {
    func filled(_ count: Int) throws -> ModelContainer {
        let container = try memoryContainer()
        let context = ModelContext(container)
        for i in 0..<count { context.insert(Item(name: "item\(i)", weight: Double(i))) }
        try context.save()
        return container
    }

    @Test func fetchWithBatchSizeIsLazyAndComplete() throws {
        let context = ModelContext(try filled(250))
        let results = try context.fetch(
            FetchDescriptor<Item>(sortBy: [SortDescriptor(\.weight, order: .reverse)]), batchSize: 40)
        #expect(results.count == 250)
        #expect(results.first?.name == "item249")
        #expect(results.map(\.weight) == (0..<250).reversed().map(Double.init))
    }

    @Test func fetchWithBatchSizeRefusesPendingChanges() throws {
        let context = ModelContext(try filled(3))
        context.insert(Item(name: "pending"))
        #expect(throws: SwiftDataError.includePendingChangesWithBatchSize) {
            _ = try context.fetch(FetchDescriptor<Item>(), batchSize: 2)
        }
        var descriptor = FetchDescriptor<Item>()
        descriptor.includePendingChanges = false
        #expect(try context.fetch(descriptor, batchSize: 2).count == 3)
    }

    @Test func enumerateKeepsMemoryFlat() throws {
        let context = ModelContext(try filled(1000))
        var seen = 0
        var total = 0.0
        try context.enumerate(FetchDescriptor<Item>(), batchSize: 100) { item in
            seen += 1
            total += item.weight
        }
        #expect(seen == 1000)
        #expect(total == Double((0..<1000).reduce(0, +)))
        // Objects from finished batches are released from the identity map.
        let registered = (try? context.fetch(FetchDescriptor<Item>(predicate: #Predicate { $0.weight < 0 }))) ?? []
        #expect(registered.isEmpty)
        #expect(context.registeredModelCount <= 100)
    }

    @Test func enumerateGivesTheModelsTheBlockFetchedAndLeavesThemRegistered() throws {
        let context = ModelContext(try filled(10))
        var fetched: [Item] = []
        var same = 0
        try context.enumerate(FetchDescriptor<Item>(), batchSize: 10) { item in
            // The first call fetches every item: the rest of the batch is registered now.
            if fetched.isEmpty { fetched = try context.fetch(FetchDescriptor<Item>()) }
            if fetched.contains(where: { $0 === item }) { same += 1 }
        }
        #expect(fetched.count == 10 && same == 10)
        // The block holds every model, the one enumerate made itself too: the identity map
        // keeps them all while they live, so a later fetch gives these same objects.
        #expect(context.registeredModelCount == 10)
        let again = try context.fetch(FetchDescriptor<Item>())
        #expect(again.allSatisfy { model in fetched.contains { $0 === model } })
    }

    /// The model the block is given is registered while the block runs, and stays so if
    /// the block keeps it, whatever the context does next; one it lets go leaves no entry.
    @Test func enumerateKeepsTheIdentityOfModelsTheBlockKeeps() throws {
        let context = ModelContext(try filled(30))
        var kept: [Item] = []
        var sameInBlock = 0
        var keptStillSame = 0
        try context.enumerate(FetchDescriptor<Item>(sortBy: [SortDescriptor(\.weight)]), batchSize: 7) { item in
            if context.model(for: item.persistentModelID) as? Item === item { sameInBlock += 1 }
            // The models kept before this one are still the context's.
            if kept.allSatisfy({ context.model(for: $0.persistentModelID) as? Item === $0 }) { keptStillSame += 1 }
            if Int(item.weight) % 3 == 0 { kept.append(item) }
        }
        #expect(sameInBlock == 30 && keptStillSame == 30)
        #expect(kept.count == 10)
        #expect(context.registeredModelCount == 10)
        // The last row's model was kept too; a fetch, an insert and a save later, every kept
        // model is still the one the context hands out, and the others are new objects.
        context.insert(Item(name: "new"))
        try context.save()
        let all = try context.fetch(FetchDescriptor<Item>(predicate: #Predicate { $0.name != "new" }))
        #expect(all.count == 30)
        for item in all {
            let wasKept = kept.contains { $0 === item }
            #expect(wasKept == (Int(item.weight) % 3 == 0), "\(item.name)")
        }
        kept = []
        #expect(context.registeredModelCount == all.count)
    }

    @Test func enumerateNoticesModelsTheBlockRegistersMidBatch() throws {
        let context = ModelContext(try filled(10))
        var fetched: [Item] = []
        var seen = 0
        var same = 0
        try context.enumerate(FetchDescriptor<Item>(), batchSize: 10) { item in
            seen += 1
            // The fourth call fetches every item: the six after it are registered by then.
            if seen == 4 { fetched = try context.fetch(FetchDescriptor<Item>()) }
            if seen > 4, fetched.contains(where: { $0 === item }) { same += 1 }
        }
        #expect(seen == 10)
        #expect(same == 6, "enumerate made a second model for an identifier the block had registered")
    }

    @Test func enumerateRefusesEscapingMutationsUnlessAllowed() throws {
        let context = ModelContext(try filled(10))
        #expect(throws: SwiftDataError.escapingMutationsInEnumeration) {
            try context.enumerate(FetchDescriptor<Item>(), batchSize: 5) { $0.isPacked = true }
        }
        context.rollback()
        try context.enumerate(FetchDescriptor<Item>(), batchSize: 5, allowEscapingMutations: true) {
            $0.isPacked = true
        }
        try context.save()
        #expect(try context.fetchCount(FetchDescriptor<Item>(predicate: #Predicate { $0.isPacked })) == 10)
    }

    /// An escaping change is noticed however the context's lists moved meanwhile: after
    /// changes made before the enumeration, and after a save inside the block.
    @Test func enumerateNoticesEscapingMutationsAfterEarlierChangesAndSaves() throws {
        let container = try filled(10)
        let context = ModelContext(container)
        let earlier = try context.fetch(FetchDescriptor<Item>(predicate: #Predicate { $0.weight < 3 }))
        for item in earlier { item.quantity = 2 }
        #expect(context.changedModelsArray.count == 3)
        var calls = 0
        #expect(throws: SwiftDataError.escapingMutationsInEnumeration) {
            try context.enumerate(FetchDescriptor<Item>(predicate: #Predicate { $0.weight >= 3 }), batchSize: 4) {
                calls += 1
                if calls == 1 { try context.save() }
                if calls == 2 { $0.note = "changed after a save" }
            }
        }
        #expect(calls == 4, "the batch of the change ends before the enumeration throws")
        context.rollback()
        // A deletion escapes too.
        #expect(throws: SwiftDataError.escapingMutationsInEnumeration) {
            try context.enumerate(FetchDescriptor<Item>(), batchSize: 4) { context.delete($0) }
        }
        context.rollback()
        // Changes saved inside the block are not escaping.
        try context.enumerate(FetchDescriptor<Item>(), batchSize: 4) {
            $0.isPacked = true
            try context.save()
        }
        #expect(
            try ModelContext(container).fetchCount(FetchDescriptor<Item>(predicate: #Predicate { $0.isPacked })) == 10)
    }

    @Test func deleteWhereDeletesMatchingModels() throws {
        let container = try filled(20)
        let context = ModelContext(container)
        try context.delete(model: Item.self, where: #Predicate { $0.weight >= 15 })
        try context.save()
        #expect(try ModelContext(container).fetchCount(FetchDescriptor<Item>()) == 15)
        try context.delete(model: Item.self)
        try context.save()
        #expect(try ModelContext(container).fetchCount(FetchDescriptor<Item>()) == 0)
    }
}
