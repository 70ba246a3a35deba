import Foundation
import Stowage

// The seed's "Undo/Redo Support" (000): its setup and its "Process pending changes to
// register undo actions" snippet, as written but for the import, over the seed's trip
// model of `Seed000Inheritance`. The SwiftUI parts (the `App`, the toolbar buttons, the
// environment's undo manager) are left out: Linux has no SwiftUI. Their calls,
// `modelContext.undoManager?.undo()`, `redo()`, `canUndo` and `canRedo`, are the test's.
enum Seed000Undo {
    typealias Trip = Seed000Inheritance.Trip

    static func setup(_ container: ModelContainer) -> ModelContext {
        let context = ModelContext(container)
        context.undoManager = UndoManager()
        return context
    }

    static func insertUndoably(_ modelContext: ModelContext, _ trip: Trip) {
        modelContext.insert(trip)
        modelContext.processPendingChanges()
        // Now undo is available for the insertion
    }
}
