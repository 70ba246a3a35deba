import Foundation
import Stowage

/// The packing list's commands, over one model context.
struct PackingList {
    let context: ModelContext

    enum Failure: Error, CustomStringConvertible {
        case usage(String)
        case notFound(String)
        var description: String {
            switch self {
            case .usage(let s): "usage: \(s)"
            case .notFound(let s): s
            }
        }
    }

    func trip(named name: String, create: Bool) throws -> Trip {
        let descriptor = FetchDescriptor<Trip>(predicate: #Predicate { $0.name == name })
        if let found = try context.fetch(descriptor).first { return found }
        guard create else { throw Failure.notFound("no trip called \(name)") }
        let trip = Trip(name: name)
        context.insert(trip)
        return trip
    }

    func item(named name: String, in trip: Trip) throws -> PackingItem {
        guard let item = trip.items.first(where: { $0.name.localizedStandardContains(name) }) else {
            throw Failure.notFound("no item called \(name) for \(trip.name)")
        }
        return item
    }

    /// Runs one command line and returns what it prints.
    func run(_ words: [String]) throws -> String {
        guard let command = words.first else { throw Failure.usage("add|list|pack|unpack|remove|trips …") }
        let args = Array(words.dropFirst())
        switch command {
        case "add":
            guard args.count >= 2, args.prefix(3).allSatisfy({ !$0.trimmingCharacters(in: .whitespaces).isEmpty })
            else { throw Failure.usage("add TRIP ITEM [CATEGORY], each a name that is not blank") }
            let category = args.count > 2 ? args[2] : PackingItem.categories[0]
            let trip = try trip(named: args[0], create: true)
            let item = PackingItem(name: args[1], category: category, trip: trip)
            context.insert(item)
            try context.save()
            return "added \(item.name) (\(category)) to \(trip.name)"
        case "list":
            guard args.count == 1 else { throw Failure.usage("list TRIP") }
            let trip = try trip(named: args[0], create: false)
            let tripID = trip.persistentModelID
            // The lesson's sectioned list, outside a view: a ResultsObserver in sections by
            // category, each sorted by name. It would stay current as the list is saved.
            let observer = try ResultsObserver<PackingItem, String>(
                filterBy: #Predicate { $0.trip?.persistentModelID == tripID }, sortBy: [SortDescriptor(\.name)],
                sectionBy: \.category, modelContext: context)
            let items = observer.results
            var lines = ["Packing for \(trip.name): \(items.filter(\.isPacked).count) of \(items.count) packed"]
            for section in observer.sections.map(Array.init) ?? [] {
                lines.append("  \(section.title)")
                for item in section { lines.append("    [\(item.isPacked ? "x" : " ")] \(item.name)") }
            }
            return lines.joined(separator: "\n")
        case "pack", "unpack":
            guard args.count == 2 else { throw Failure.usage("\(command) TRIP ITEM") }
            let item = try item(named: args[1], in: try trip(named: args[0], create: false))
            item.isPacked = command == "pack"
            try context.save()
            return "\(command == "pack" ? "packed" : "unpacked") \(item.name)"
        case "remove":
            guard args.count == 2 else { throw Failure.usage("remove TRIP ITEM") }
            let item = try item(named: args[1], in: try trip(named: args[0], create: false))
            context.delete(item)
            try context.save()
            return "removed \(item.name)"
        case "trips":
            let trips = try context.fetch(FetchDescriptor<Trip>(sortBy: [SortDescriptor(\.name)]))
            return trips.map { "\($0.name): \($0.items.count) items" }.joined(separator: "\n")
        default:
            throw Failure.usage("add|list|pack|unpack|remove|trips …")
        }
    }
}
