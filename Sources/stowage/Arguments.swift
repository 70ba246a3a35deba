/// The exit statuses of every command (documented in `stowage --help` and the README).
enum ExitStatus: Int32 {
    /// Done; for `verify`, the store is healthy.
    case ok = 0
    /// The store is damaged, is not a Stowage store, cannot be read or written, or is open
    /// in another process.
    case failed = 1
    /// The command line is wrong: an unknown command or option, a missing PATH.
    case usage = 2
}

/// A wrong command line, with the message for standard error.
struct UsageError: Error {
    let message: String
    /// The command whose `--help` to point at, if one was recognized.
    let command: String?
}

/// A parsed command line, by option name; each command reads it into its own typed
/// properties (`StowageCommand.init`).
struct Invocation {
    var command: String
    var path: String
    var flags: Set<String> = []
    var options: [String: String] = [:]

    func has(_ flag: String) -> Bool { flags.contains(flag) }
}

/// What the command line asked for.
enum Request {
    case run(Invocation)
    case help(command: String?)
    case version
}

/// A small parser: `stowage COMMAND [--flag] [--option VALUE | --option=VALUE] PATH`.
/// Options and PATH may come in any order; `--` ends the options.
enum ArgumentParser {
    static func parse(_ arguments: [String], specs: [String: CommandSpec]) throws(UsageError) -> Request {
        guard let first = arguments.first else { return .help(command: nil) }
        switch first {
        case "--help", "-h", "help":
            if first == "help", arguments.count > 1 {
                let topic = arguments[1]
                guard specs[topic] != nil else {
                    throw UsageError(message: "unknown command '\(topic)'", command: nil)
                }
                return .help(command: topic)
            }
            return .help(command: nil)
        case "--version":
            return .version
        default:
            break
        }
        guard let spec = specs[first] else {
            if first.hasPrefix("-") { throw UsageError(message: "unknown option '\(first)'", command: nil) }
            throw UsageError(message: "unknown command '\(first)'", command: nil)
        }
        var invocation = Invocation(command: first, path: "")
        var positional: [String] = []
        var index = 1
        var optionsEnded = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if optionsEnded || argument == "-" || !argument.hasPrefix("-") {
                positional.append(argument)
                continue
            }
            if argument == "--" {
                optionsEnded = true
                continue
            }
            if argument == "--help" || argument == "-h" { return .help(command: first) }
            var name = argument
            var inlineValue: String?
            if let equals = argument.firstIndex(of: "=") {
                name = String(argument[..<equals])
                inlineValue = String(argument[argument.index(after: equals)...])
            }
            guard let option = spec.option(named: name) else {
                throw UsageError(message: "unknown option '\(name)' for 'stowage \(first)'", command: first)
            }
            if case .none = option.value {
                guard inlineValue == nil else {
                    throw UsageError(message: "the option '\(name)' takes no value", command: first)
                }
                invocation.flags.insert(name)
                continue
            }
            let value: String
            if let inlineValue {
                value = inlineValue
            } else {
                guard index < arguments.count else {
                    throw UsageError(message: "the option '\(name)' needs a value", command: first)
                }
                value = arguments[index]
                index += 1
            }
            if case .oneOf(let allowed) = option.value, !allowed.contains(value) {
                throw UsageError(
                    message: "'\(value)' is not a value of '\(name)' (use \(allowed.joined(separator: " or ")))",
                    command: first)
            }
            invocation.options[name] = value
        }
        guard let path = positional.first else {
            throw UsageError(message: "missing PATH: the store file to \(first)", command: first)
        }
        guard positional.count == 1 else {
            throw UsageError(message: "unexpected argument '\(positional[1])': give one PATH", command: first)
        }
        guard !path.isEmpty else { throw UsageError(message: "PATH is empty", command: first) }
        invocation.path = path
        return .run(invocation)
    }
}
