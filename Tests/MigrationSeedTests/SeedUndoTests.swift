import Foundation
import Stowage
import Testing

/// The seed's undo code (`Seed000Undo.swift`) does what the seed says.
@Suite("The seed's undo and redo")
struct SeedUndoTests {
    @Test func anInsertionIsUndoneAndRedoneAsTheToolbarWould() throws {
        let modelContext = Seed000Undo.setup(try Seed000Inheritance.container())
        #expect(!(modelContext.undoManager?.canUndo ?? false))
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        let trip = Seed000Undo.Trip(name: "Family", destination: "Lisbon", startDate: start, endDate: start)
        Seed000Undo.insertUndoably(modelContext, trip)
        #expect(modelContext.undoManager?.canUndo ?? false)
        modelContext.undoManager?.undo()
        #expect(!modelContext.hasChanges)
        #expect(try modelContext.fetchCount(FetchDescriptor<Seed000Undo.Trip>()) == 0)
        #expect(modelContext.undoManager?.canRedo ?? false)
        modelContext.undoManager?.redo()
        try modelContext.save()
        #expect(try modelContext.fetch(FetchDescriptor<Seed000Undo.Trip>()).map(\.name) == ["Family"])
    }
}
