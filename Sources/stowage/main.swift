// The `stowage` command-line tool: inspect, verify, dump, history, recover and compact a
// Stowage store file (a log store or a JSON store) without its model types. See
// `stowage --help` and the README ("The stowage tool").
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Runs one command line and returns its exit status.
func runStowage(_ arguments: [String], console: Console) -> ExitStatus {
    do {
        switch try ArgumentParser.parse(arguments, specs: Help.specs) {
        case .help(let command):
            console.print(command.flatMap { Help.texts[$0] } ?? Help.overview)
            return .ok
        case .version:
            console.print("stowage 1 (reads log format versions 1 and 2, stowage-json version 1)")
            return .ok
        case .run(let invocation):
            return Commands(console: console).run(invocation)
        }
    } catch {
        console.error("stowage: error: \(error.message)")
        if let command = error.command {
            console.error("Run 'stowage \(command) --help' for usage.")
        } else {
            console.error("Run 'stowage --help' for usage.")
        }
        return .usage
    }
}

let console = Console()
let status = runStowage(Array(CommandLine.arguments.dropFirst()), console: console)
console.flush()
exit(status.rawValue)
