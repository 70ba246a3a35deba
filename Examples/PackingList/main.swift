import Foundation
import Stowage

// The packing list from the SwiftData lesson, as a terminal program. It keeps its list in
// Stowage's default on-disk store, under $XDG_DATA_HOME/packing-list (or
// ~/.local/share/packing-list), so the list is still there the next time it runs.
//
//   packing-list add Lisbon Passport Documents     one command
//   packing-list list Lisbon
//   packing-list                                   commands from standard input, one per line
//   packing-list demo                              a scripted session in a store of its own,
//                                                  closed and reopened to show it persists

let directory = ModelConfiguration.defaultDirectory.appendingPathComponent("packing-list", isDirectory: true)
let arguments = Array(CommandLine.arguments.dropFirst())
let isDemo = arguments == ["demo"]

@MainActor func openList(named name: String) -> (ModelContainer, PackingList) {
    do {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let configuration = ModelConfiguration(url: directory.appendingPathComponent("\(name).store"))
        let container = try ModelContainer(for: Trip.self, PackingItem.self, configurations: configuration)
        return (container, PackingList(context: ModelContext(container)))
    } catch {
        FileHandle.standardError.write(Data("packing-list: cannot open the store: \(error)\n".utf8))
        exit(1)
    }
}

@MainActor func perform(_ words: [String], on list: PackingList) -> Bool {
    do {
        print(try list.run(words))
        return true
    } catch {
        FileHandle.standardError.write(Data("packing-list: \(error)\n".utf8))
        return false
    }
}

if isDemo {
    let script = [
        "add Lisbon Passport Documents", "add Lisbon Jacket Clothes", "add Lisbon Charger Gear",
        "add Lisbon Socks Clothes", "add Oslo Boots Clothes", "pack Lisbon Passport", "pack Lisbon Socks",
        "list Lisbon", "remove Lisbon Charger", "unpack Lisbon Socks", "trips",
    ]
    var ok = true
    do {
        let (container, list) = openList(named: "demo")
        do {
            try container.erase()
        } catch {
            FileHandle.standardError.write(Data("packing-list: cannot reset the demo store: \(error)\n".utf8))
            exit(1)
        }
        for line in script {
            print("$ \(line)")
            ok = perform(line.split(separator: " ").map(String.init), on: list) && ok
        }
    }
    // The first container is gone: open the file again and read the list back from disk.
    print("$ # closed the store; opened it again")
    let (_, reopened) = openList(named: "demo")
    print("$ list Lisbon")
    ok = perform(["list", "Lisbon"], on: reopened) && ok
    print("(kept in \(directory.appendingPathComponent("demo.store").path))")
    exit(ok ? 0 : 1)
}

let (_, list) = openList(named: "list")
if arguments.isEmpty {
    var ok = true
    while let line = readLine() {
        let words = line.split(separator: " ").map(String.init)
        if words.isEmpty { continue }
        ok = perform(words, on: list) && ok
    }
    exit(ok ? 0 : 1)
} else {
    exit(perform(arguments, on: list) ? 0 : 1)
}
