import Foundation
@_spi(Testing) import Stowage
import StowageTestSupport
import Testing

@Suite("Prefetching relationships")
struct PrefetchTests {
    @Test func prefetchedModelsAreRegisteredWhileTheirOwnersLive() throws {
        let container = try memoryContainer()
        let writer = ModelContext(container)
        let trip = Trip(name: "Lisbon")
        writer.insert(trip)
        let items = ["Passport", "Jacket", "Socks"].map { Item(name: $0, trip: trip) }
        for item in items { writer.insert(item) }
        try writer.save()
        let itemIDs = items.map(\.persistentModelID)

        let reader = ModelContext(container)
        var descriptor = FetchDescriptor<Trip>()
        descriptor.relationshipKeyPathsForPrefetching = [\.items]
        do {
            let trips = try reader.fetch(descriptor)
            #expect(trips.count == 1)
            var names: Set<String> = []
            for id in itemIDs {
                let registered: Item? = reader.registeredModel(for: id)
                #expect(registered != nil, "\(id) was not prefetched")
                if let registered { names.insert(registered.name) }
            }
            #expect(names == ["Passport", "Jacket", "Socks"])
            // The relationship is not read here: reading it keeps the items in the context's
            // ring of recently resolved models, which would keep them after the trip goes.
        }
        // Once the trip is let go, the items it kept go too: nothing else holds them.
        for id in itemIDs {
            let registered: Item? = reader.registeredModel(for: id)
            #expect(registered == nil, "\(id) outlived the model it was prefetched for")
        }
    }

    @Test func withoutPrefetchingNothingIsLoadedAhead() throws {
        let container = try memoryContainer()
        let writer = ModelContext(container)
        let trip = Trip(name: "Porto")
        writer.insert(trip)
        let item = Item(name: "Umbrella", trip: trip)
        writer.insert(item)
        try writer.save()
        let reader = ModelContext(container)
        let trips = try reader.fetch(FetchDescriptor<Trip>())
        let registered: Item? = reader.registeredModel(for: item.persistentModelID)
        #expect(trips.count == 1 && registered == nil)
    }
}
