import Foundation
@_spi(Testing) import Stowage
import StowageTestSupport
import Testing

/// A model `enumerate` may refill: a final class whose whole state is persisted, of
/// attributes of common types.
@Model final class Meter {
    var sensor: String
    var value: Double
    var takenAt: Date

    init(sensor: String, value: Double, takenAt: Date) {
        self.sensor = sensor
        self.value = value
        self.takenAt = takenAt
    }
}

/// The same, with state of its own that the backing data does not hold: never refilled.
@Model final class MarkedMeter {
    var sensor: String
    @Transient var mark = 0

    init(sensor: String) { self.sensor = sensor }
}

/// `enumerate` hands the next record to a model its block let go, instead of freeing that
/// model and making another, and never to a model that anything still holds.
@Suite("Enumerate refills the models its block lets go")
struct EnumerateRefillTests {
    static let stores = [StoreFactory.memory, StoreFactory.log]

    func filled(_ factory: StoreFactory, count: Int) throws -> ModelContainer {
        let container = try factory.make(Schema([Meter.self, MarkedMeter.self]))
        let writer = ModelContext(container)
        for i in 0..<count {
            writer.insert(
                Meter(sensor: "s\(i)", value: Double(i), takenAt: Date(timeIntervalSince1970: Double(i * 60))))
            writer.insert(MarkedMeter(sensor: "m\(i)"))
        }
        try writer.save()
        return container
    }

    /// What a reading holds, to compare with the stored records.
    struct Seen: Equatable {
        var id: PersistentIdentifier
        var sensor: String
        var value: Double
        var takenAt: Date

        init(_ reading: Meter) {
            id = reading.persistentModelID
            sensor = reading.sensor
            value = reading.value
            takenAt = reading.takenAt
        }
    }

    func stored(_ container: ModelContainer) throws -> [Seen] {
        try ModelContext(container).fetch(FetchDescriptor<Meter>(sortBy: [SortDescriptor(\.value)])).map(Seen.init)
    }

    @Test(arguments: stores)
    func aModelTheBlockLetsGoHoldsTheNextRecord(_ factory: StoreFactory) throws {
        let container = try filled(factory, count: 20)
        let expected = try stored(container)
        let context = ModelContext(container)
        var seen: [Seen] = []
        var objects: Set<ObjectIdentifier> = []
        var registeredAsItself = 0
        try context.enumerate(FetchDescriptor<Meter>(sortBy: [SortDescriptor(\.value)]), batchSize: 6) { reading in
            seen.append(Seen(reading))
            objects.insert(ObjectIdentifier(reading))
            if context.model(for: reading.persistentModelID) as? Meter === reading { registeredAsItself += 1 }
        }
        #expect(seen == expected)
        // One model held every record, across batches: each was refilled from the last.
        #expect(objects.count == 1)
        #expect(registeredAsItself == 20)
        // The refilled model leaves the context with the enumeration, as a freed one does.
        #expect(context.registeredModelCount == 0)
    }

    /// A model the block keeps (strongly, weakly or unowned), or whose backing data it
    /// keeps, goes on holding its own record; the next record gets a model of its own.
    @Test(arguments: stores)
    func aModelAnythingStillHoldsIsNeverRefilled(_ factory: StoreFactory) throws {
        final class Weak {
            weak var reading: Meter?
            let id: PersistentIdentifier
            init(_ reading: Meter) {
                self.reading = reading
                id = reading.persistentModelID
            }
        }
        final class Unowned {
            unowned let reading: Meter
            init(_ reading: Meter) { self.reading = reading }
        }
        let container = try filled(factory, count: 40)
        let expected = try stored(container)
        let context = ModelContext(container)
        var kept: [(reading: Meter, seen: Seen)] = []
        var weak: [Weak] = []
        var unowned: [Unowned] = []
        var unownedObject: ObjectIdentifier?
        var data: [(data: ModelBackingData, id: PersistentIdentifier)] = []
        var position = 0
        var handedAnUnownedModel = 0
        var weakPointsElsewhere = 0
        try context.enumerate(FetchDescriptor<Meter>(sortBy: [SortDescriptor(\.value)]), batchSize: 6) { reading in
            #expect(Seen(reading) == expected[position])
            // No model held weakly became another record's, nor is this one.
            for held in weak {
                if let model = held.reading, model.persistentModelID != held.id || model === reading {
                    weakPointsElsewhere += 1
                }
            }
            // The model held unowned was not handed out again (it is never read: once its
            // last strong reference is gone, reading it would stop the program).
            if unownedObject == ObjectIdentifier(reading) { handedAnUnownedModel += 1 }
            unownedObject = nil
            switch position % 8 {
            case 1: kept.append((reading, Seen(reading)))
            case 3: weak.append(Weak(reading))
            case 5:
                unowned.append(Unowned(reading))
                unownedObject = ObjectIdentifier(reading)
            case 7: data.append((reading.persistentBackingData, reading.persistentModelID))
            default: break
            }
            position += 1
        }
        #expect(position == 40)
        #expect(weakPointsElsewhere == 0)
        #expect(handedAnUnownedModel == 0)
        #expect(kept.count == 5 && kept.allSatisfy { Seen($0.reading) == $0.seen })
        #expect(data.count == 5 && data.allSatisfy { $0.data.persistentModelID == $0.id })
        _ = unowned
    }

    /// A model set aside to hold the next record cannot be found meanwhile: a block handed
    /// a model the context already had, that looks up the record before it, gets a model
    /// of its own for that record, which the next record does not take over.
    @Test(arguments: stores)
    func aRecordLookedUpBetweenRowsGetsAModelOfItsOwn(_ factory: StoreFactory) throws {
        let container = try filled(factory, count: 24)
        let expected = try stored(container)
        let context = ModelContext(container)
        // The odd rows' models are the context's before the enumeration starts.
        let registeredBefore = try context.fetch(FetchDescriptor<Meter>()).filter { Int($0.value) % 2 == 1 }
        var kept: [(reading: Meter, seen: Seen)] = []
        var position = 0
        try context.enumerate(FetchDescriptor<Meter>(sortBy: [SortDescriptor(\.value)]), batchSize: 5) { reading in
            #expect(Seen(reading) == expected[position])
            if position % 2 == 1, let previous = context.model(for: expected[position - 1].id) as? Meter {
                kept.append((previous, Seen(previous)))
            }
            position += 1
        }
        #expect(kept.count == 12)
        #expect(kept.allSatisfy { Seen($0.reading) == $0.seen })
        #expect(kept.map(\.seen) == stride(from: 0, to: 24, by: 2).map { expected[$0] })
        #expect(registeredBefore.count == 12)
    }

    /// A model the block changed or deleted stays the context's until saved, and its change
    /// saves to its own record.
    @Test(arguments: stores)
    func changedAndDeletedModelsKeepTheirRecords(_ factory: StoreFactory) throws {
        let container = try filled(factory, count: 30)
        let context = ModelContext(container)
        var position = 0
        try context.enumerate(
            FetchDescriptor<Meter>(sortBy: [SortDescriptor(\.value)]), batchSize: 4, allowEscapingMutations: true
        ) { reading in
            if position % 5 == 0 {
                context.delete(reading)
            } else if position % 2 == 0 {
                reading.value += 1000
            }
            position += 1
        }
        try context.save()
        let after = try stored(container)
        var expected: [String: Double] = [:]
        for i in 0..<30 where i % 5 != 0 {
            let raised: Double = i % 2 == 0 ? 1000 : 0
            expected["s\(i)"] = Double(i) + raised
        }
        var found: [String: Double] = [:]
        for reading in after { found[reading.sensor] = reading.value }
        #expect(found == expected)
    }

    /// A refilled model is read through the registrar of the batch it holds a record of:
    /// an observer from an earlier batch is not told of a change in a later one.
    @Test(arguments: stores)
    func aRefilledModelIsObservedThroughItsOwnBatch(_ factory: StoreFactory) throws {
        let container = try filled(factory, count: 6)
        let context = ModelContext(container)
        var watches: [ObservationTests.Watch] = []
        var objects: Set<ObjectIdentifier> = []
        var position = 0
        try context.enumerate(
            FetchDescriptor<Meter>(sortBy: [SortDescriptor(\.value)]), batchSize: 3, allowEscapingMutations: true
        ) { reading in
            objects.insert(ObjectIdentifier(reading))
            let watch = ObservationTests.Watch()
            watch.arm { _ = reading.value }
            watches.append(watch)
            if position == 4 { reading.value = -1 }
            position += 1
        }
        // Rows 0-4 shared one model, refilled each time; the change keeps row 4's.
        #expect(objects.count == 2)
        // Batches of 3: rows 0-2, then 3-5. The change to row 4 reaches its own observer
        // and row 3's, of the same batch (as `enumerate` documents), and none of the first
        // batch's, though the same object held their records.
        #expect(watches.map(\.count) == [0, 0, 0, 1, 1, 0])
    }

    /// A model whose class keeps state outside its backing data is never refilled: each
    /// record gets a new model, its transient state as `init` left it.
    @Test(arguments: stores)
    func aModelWithStateOfItsOwnIsNeverRefilled(_ factory: StoreFactory) throws {
        let container = try filled(factory, count: 12)
        let context = ModelContext(container)
        var fresh = 0
        var sensors: [String] = []
        try context.enumerate(FetchDescriptor<MarkedMeter>(sortBy: [SortDescriptor(\.sensor)]), batchSize: 5) {
            reading in
            if reading.mark == 0 { fresh += 1 }
            reading.mark = 1
            sensors.append(reading.sensor)
        }
        #expect(fresh == 12)
        #expect(sensors == (0..<12).map { "m\($0)" }.sorted())
    }

    /// A nested enumeration of the same context inside the block: each level's models hold
    /// their own records.
    @Test(arguments: stores)
    func nestedEnumerationsHoldTheirOwnRecords(_ factory: StoreFactory) throws {
        let container = try filled(factory, count: 10)
        let expected = try stored(container)
        let context = ModelContext(container)
        var outer: [Seen] = []
        var inner: [Seen] = []
        let sorted = FetchDescriptor<Meter>(sortBy: [SortDescriptor(\.value)])
        try context.enumerate(sorted, batchSize: 3) { reading in
            let before = Seen(reading)
            if outer.count % 4 == 0 {
                try context.enumerate(sorted, batchSize: 4) { inner.append(Seen($0)) }
            }
            #expect(Seen(reading) == before)
            outer.append(before)
        }
        #expect(outer == expected)
        #expect(inner == expected + expected + expected)
    }
}
