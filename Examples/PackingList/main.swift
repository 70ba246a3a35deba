import Foundation
import Stowage
import StowagePostgres

// The packing list from the SwiftData lesson, as a terminal program. It keeps its list in
// Stowage's default on-disk store, under $XDG_DATA_HOME/packing-list (or
// ~/.local/share/packing-list), so the list is still there the next time it runs.
//
//   packing-list add Lisbon Passport Documents     one command
//   packing-list list Lisbon
//   packing-list                                   commands from standard input, one per line
//   packing-list demo                              a scripted session in a store of its own,
//                                                  closed and reopened to show it persists
//
// With `--postgres <connection string>` first (or PACKING_LIST_POSTGRES in the
// environment) the list is kept in that PostgreSQL database instead, through
// `PostgresStore`: the same models and the same code, another configuration. The demo
// erases the database's packing-list tables first, so give it a database of its own.

let directory = ModelConfiguration.defaultDirectory.appendingPathComponent("packing-list", isDirectory: true)
var arguments = Array(CommandLine.arguments.dropFirst())
var postgres = ProcessInfo.processInfo.environment["PACKING_LIST_POSTGRES"].flatMap { $0.isEmpty ? nil : $0 }
if arguments.first == "--postgres" {
    guard arguments.count >= 2 else {
        FileHandle.standardError.write(Data("packing-list: --postgres needs a connection string\n".utf8))
        exit(2)
    }
    postgres = arguments[1]
    arguments.removeFirst(2)
}
let isDemo = arguments == ["demo"]

@MainActor func openList(named name: String) -> (ModelContainer, PackingList) {
    do {
        let schema = Schema([Trip.self, PackingItem.self])
        let container: ModelContainer
        if let postgres {
            let configuration = PostgresStoreConfiguration(name: name, schema: schema, url: postgres)
            container = try ModelContainer(for: schema, configurations: [configuration])
        } else {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let configuration = ModelConfiguration(url: directory.appendingPathComponent("\(name).store"))
            container = try ModelContainer(for: schema, configurations: configuration)
        }
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
    // The first container is gone: open the store again and read the list back.
    print("$ # closed the store; opened it again")
    let (_, reopened) = openList(named: "demo")
    print("$ list Lisbon")
    ok = perform(["list", "Lisbon"], on: reopened) && ok
    if postgres != nil {
        print("(kept in PostgreSQL)")
    } else {
        print("(kept in \(directory.appendingPathComponent("demo.store").path))")
    }
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
