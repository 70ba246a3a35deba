// The `stowage` command-line tool: inspect, verify, dump, history, recover and compact a
// Stowage store file (a log store or a JSON store) without its model types. See
// `stowage --help` and the README ("The stowage tool").
import Foundation
import StowageInspection

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Runs one command line and returns its exit status. Every error ends here, so that the
/// messages and exit statuses read the same whichever command failed.
func runStowage(_ arguments: [String], console: Console) -> ExitStatus {
    do {
        switch try ArgumentParser.parse(arguments, specs: Commands.specs) {
        case .help(let name):
            console.print(name.flatMap(Commands.named)?.helpText ?? Commands.overview)
            return .ok
        case .version:
            console.print(Commands.version)
            return .ok
        case .run(let invocation):
            guard let type = Commands.named(invocation.command) else { return .usage }
            return try type.init(invocation).run(console: console)
        }
    } catch let usage as UsageError {
        console.error("stowage: error: \(usage.message)")
        if let command = usage.command {
            console.error("Run 'stowage \(command) --help' for usage.")
        } else {
            console.error("Run 'stowage --help' for usage.")
        }
        return .usage
    } catch let failure as ToolFailure {
        // The file could not be read or written: a fact about the store, not the command line.
        console.error("stowage: error: \(failure.message)")
        return .failed
    } catch {
        console.error("stowage: error: \(error)")
        return .failed
    }
}

let console = Console()
let status = runStowage(Array(CommandLine.arguments.dropFirst()), console: console)
console.flush()
exit(status.rawValue)
