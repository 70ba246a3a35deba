// swift-format-ignore-file
// The background import of `shared/seeds/002_…` ("How do you write SwiftData in bulk on a
// background thread?"), as written there but for the import. It names the tutorial's
// model `TodoItem`, which this target keeps inside `Seed002`; the file-private alias below
// (not in the seed) lets the code use the name as written. How it is called is in
// `SeedActorTests.swift`.
import Foundation
import Stowage

private typealias TodoItem = Seed002.TodoItem

@ModelActor
actor TodoBackgroundImporter {
    func importTitles(_ titles: [String]) throws -> Int {
        for title in titles {
            modelContext.insert(TodoItem(title: title))
        }
        try modelContext.save()
        return titles.count
    }
}

@MainActor
func runBackgroundImport(container: ModelContainer) async {
    let importer = TodoBackgroundImporter(modelContainer: container)
    do {
        let count = try await importer.importTitles(["Sample 1", "Sample 2"])
        print("Imported \(count) items in the background")
    } catch {
        print("Background import failed \(error)")
    }
}
