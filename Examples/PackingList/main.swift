import Foundation
import Stowage

// The packing list from the SwiftData lesson, as a terminal program.
//
//   packing-list demo          runs a short scripted session
//   packing-list               reads commands from standard input, one per line
//   packing-list add Lisbon Passport Documents
//
// It keeps its data in memory until Stowage's on-disk store lands, so a list lasts for
// one run: use `demo`, or type several commands into one session.

let container: ModelContainer
do {
    container = try ModelContainer(
        for: Trip.self, PackingItem.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
} catch {
    FileHandle.standardError.write(Data("packing-list: cannot open the store: \(error)\n".utf8))
    exit(1)
}
let list = PackingList(context: ModelContext(container))

@MainActor func perform(_ words: [String]) -> Bool {
    do {
        print(try list.run(words))
        return true
    } catch {
        FileHandle.standardError.write(Data("packing-list: \(error)\n".utf8))
        return false
    }
}

let arguments = Array(CommandLine.arguments.dropFirst())
if arguments == ["demo"] {
    let script = [
        "add Lisbon Passport Documents", "add Lisbon Jacket Clothes", "add Lisbon Charger Gear",
        "add Lisbon Socks Clothes", "add Oslo Boots Clothes", "pack Lisbon Passport", "pack Lisbon Socks",
        "list Lisbon", "remove Lisbon Charger", "unpack Lisbon Socks", "list Lisbon", "trips",
    ]
    var ok = true
    for line in script {
        print("$ \(line)")
        ok = perform(line.split(separator: " ").map(String.init)) && ok
    }
    exit(ok ? 0 : 1)
} else if arguments.isEmpty {
    var ok = true
    while let line = readLine() {
        let words = line.split(separator: " ").map(String.init)
        if words.isEmpty { continue }
        ok = perform(words) && ok
    }
    exit(ok ? 0 : 1)
} else {
    exit(perform(arguments) ? 0 : 1)
}
