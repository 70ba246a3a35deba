import Foundation
import Stowage
import StowageInspection

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Standard output and standard error, buffered and written as bytes.
final class Console {
    private var out: [UInt8] = []
    private var err: [UInt8] = []

    var isTerminal: Bool { isatty(1) == 1 }

    func print(_ line: String = "") {
        out.append(contentsOf: line.utf8)
        out.append(0x0A)
        if out.count >= 1 << 16 { flush() }
    }

    func error(_ line: String) {
        err.append(contentsOf: line.utf8)
        err.append(0x0A)
    }

    /// Writes straight to the terminal, unbuffered (the progress bar).
    func raw(_ text: String) {
        flush()
        FileHandle.standardOutput.write(Data(text.utf8))
    }

    func flush() {
        if !out.isEmpty {
            FileHandle.standardOutput.write(Data(out))
            out.removeAll(keepingCapacity: true)
        }
        if !err.isEmpty {
            FileHandle.standardError.write(Data(err))
            err.removeAll(keepingCapacity: true)
        }
    }
}

/// A JSON value for `--json` output, rendered deterministically: members in the order
/// given, two-space indentation.
indirect enum JSON {
    case null
    case bool(Bool)
    case int(Int64)
    case number(Double)
    case string(String)
    /// JSON text made elsewhere (a record value).
    case raw(String)
    case array([JSON])
    case object([(String, JSON)])

    static func int(_ value: Int) -> JSON { .int(Int64(value)) }
    static func optional(_ value: String?) -> JSON { value.map(JSON.string) ?? .null }

    func rendered(indent: Int = 0) -> String {
        let pad = String(repeating: "  ", count: indent + 1)
        let closePad = String(repeating: "  ", count: indent)
        switch self {
        case .null: return "null"
        case .bool(let v): return v ? "true" : "false"
        case .int(let v): return String(v)
        case .number(let v): return ToolJSON.number(v)
        case .string(let v): return ToolJSON.quote(v)
        case .raw(let text): return text
        case .array(let items):
            if items.isEmpty { return "[]" }
            return "[\n" + items.map { pad + $0.rendered(indent: indent + 1) }.joined(separator: ",\n") + "\n"
                + closePad + "]"
        case .object(let members):
            if members.isEmpty { return "{}" }
            return "{\n"
                + members.map { pad + ToolJSON.quote($0.0) + ": " + $0.1.rendered(indent: indent + 1) }
                .joined(separator: ",\n") + "\n" + closePad + "}"
        }
    }
}

enum Text {
    /// `count` with the noun, plural when not 1.
    static func count(_ count: Int, _ noun: String, _ plural: String? = nil) -> String {
        "\(count) \(count == 1 ? noun : (plural ?? noun + "s"))"
    }

    static func percent(_ part: Int64, of whole: Int64) -> String {
        guard whole > 0 else { return "0.0%" }
        let tenths = (part * 1000 + whole / 2) / whole
        return "\(tenths / 10).\(tenths % 10)%"
    }

    /// A ratio with two decimals.
    static func ratio(_ a: Int64, _ b: Int64) -> String {
        guard b > 0 else { return "1.00" }
        let hundredths = (a * 100 + b / 2) / b
        let fraction = hundredths % 100
        return "\(hundredths / 100).\(fraction < 10 ? "0" : "")\(fraction)"
    }

    static func padRight(_ s: String, _ width: Int) -> String {
        s + String(repeating: " ", count: max(0, width - s.count))
    }

    static func padLeft(_ s: String, _ width: Int) -> String {
        String(repeating: " ", count: max(0, width - s.count)) + s
    }

    /// A property as `name: Type?`, with its relationship.
    static func property(_ p: ToolSchema.Property) -> String {
        var text = "\(p.name): \(p.typeName)\(p.isOptional ? "?" : "")"
        if let destination = p.destination {
            text += " (\(p.isToMany ? "to-many" : "to-one") relationship to \(destination))"
        }
        if p.isExternal { text += " (external storage)" }
        return text
    }

    static func groups(_ groups: [[String]]) -> String {
        groups.isEmpty ? "none" : groups.map { "(" + $0.joined(separator: ", ") + ")" }.joined(separator: ", ")
    }
}
