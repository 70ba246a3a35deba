import Foundation

/// A parsed JSON value, as the JSON store reads a document.
///
/// Objects keep their members in document order, duplicates included, so that the code
/// that interprets them can report a duplicate with its context (entity, record, field).
package indirect enum JSONValue: Sendable {
    case null
    case bool(Bool)
    /// An integer that fits in `Int64`.
    case integer(Int64)
    /// An integer above `Int64.max` that fits in `UInt64`.
    case unsigned(UInt64)
    /// A number with a fraction or an exponent.
    case float(Double)
    /// An integer outside both ranges, as written.
    case hugeInteger(String)
    case string(String)
    case array([JSONValue])
    case object([(key: String, value: JSONValue)])

    /// The JSON type's name, for messages.
    package var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .integer, .unsigned, .hugeInteger: "an integer"
        case .float: "a number with a fraction"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

/// A syntax error, with where it is: 1-based line and column (columns count bytes).
package struct JSONSyntaxError: Error, CustomStringConvertible {
    package let line: Int
    package let column: Int
    package let reason: String
    package var description: String { "line \(line), column \(column): \(reason)" }
}

/// A strict RFC 8259 parser over UTF-8 bytes, with a nesting-depth limit so that deeply
/// nested input cannot exhaust the stack.
package struct JSONParser {
    package static let defaultMaximumDepth = 64

    private let bytes: [UInt8]
    private var position = 0
    private let maximumDepth: Int

    private init(_ bytes: [UInt8], maximumDepth: Int) {
        self.bytes = bytes
        self.maximumDepth = maximumDepth
    }

    /// Parses one document: a value with only whitespace around it.
    package static func parse(_ bytes: [UInt8], maximumDepth: Int = defaultMaximumDepth) throws(JSONSyntaxError)
        -> JSONValue
    {
        var parser = JSONParser(bytes, maximumDepth: maximumDepth)
        // A byte-order mark is not JSON; say so plainly.
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { throw parser.error("a byte-order mark (U+FEFF) is not allowed") }
        parser.skipWhitespace()
        let value = try parser.value(depth: 0)
        parser.skipWhitespace()
        if parser.position < bytes.count { throw parser.error("unexpected content after the document") }
        return value
    }

    private func error(_ reason: String, at offset: Int? = nil) -> JSONSyntaxError {
        let offset = min(offset ?? position, bytes.count)
        var line = 1
        var lineStart = 0
        for i in 0..<offset where bytes[i] == UInt8(ascii: "\n") {
            line += 1
            lineStart = i + 1
        }
        return JSONSyntaxError(line: line, column: offset - lineStart + 1, reason: reason)
    }

    private func describeHere() -> String {
        guard position < bytes.count else { return "the end of the file" }
        let b = bytes[position]
        if b >= 0x21 && b < 0x7F { return "'\(Character(Unicode.Scalar(b)))'" }
        return "byte 0x" + String(b, radix: 16, uppercase: true)
    }

    private mutating func skipWhitespace() {
        while position < bytes.count {
            switch bytes[position] {
            case 0x20, 0x0A, 0x0D, 0x09: position += 1
            default: return
            }
        }
    }

    private mutating func value(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        guard position < bytes.count else { throw error("expected a value, found the end of the file") }
        switch bytes[position] {
        case UInt8(ascii: "{"):
            guard depth < maximumDepth else { throw error("nesting deeper than \(maximumDepth) levels") }
            return try object(depth: depth + 1)
        case UInt8(ascii: "["):
            guard depth < maximumDepth else { throw error("nesting deeper than \(maximumDepth) levels") }
            return try array(depth: depth + 1)
        case UInt8(ascii: "\""):
            return .string(try string())
        case UInt8(ascii: "t"):
            try literal("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try literal("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try literal("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return try number()
        default:
            throw error("expected a value, found \(describeHere())")
        }
    }

    private mutating func literal(_ word: String) throws(JSONSyntaxError) {
        let count = word.utf8.count
        guard position + count <= bytes.count, bytes[position..<position + count].elementsEqual(word.utf8) else {
            throw error("expected \(word), found \(describeHere())")
        }
        position += count
    }

    private mutating func object(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        position += 1
        var members: [(key: String, value: JSONValue)] = []
        skipWhitespace()
        if position < bytes.count && bytes[position] == UInt8(ascii: "}") {
            position += 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else {
                throw error("expected a member name in quotes, found \(describeHere())")
            }
            let key = try string()
            skipWhitespace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else {
                throw error("expected ':' after the member name \"\(key)\", found \(describeHere())")
            }
            position += 1
            skipWhitespace()
            members.append((key, try value(depth: depth)))
            skipWhitespace()
            guard position < bytes.count else { throw error("an object is not closed before the end of the file") }
            if bytes[position] == UInt8(ascii: ",") {
                position += 1
                continue
            }
            if bytes[position] == UInt8(ascii: "}") {
                position += 1
                return .object(members)
            }
            throw error("expected ',' or '}' in an object, found \(describeHere())")
        }
    }

    private mutating func array(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        position += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if position < bytes.count && bytes[position] == UInt8(ascii: "]") {
            position += 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try value(depth: depth))
            skipWhitespace()
            guard position < bytes.count else { throw error("an array is not closed before the end of the file") }
            if bytes[position] == UInt8(ascii: ",") {
                position += 1
                continue
            }
            if bytes[position] == UInt8(ascii: "]") {
                position += 1
                return .array(elements)
            }
            throw error("expected ',' or ']' in an array, found \(describeHere())")
        }
    }

    private static func hex(_ b: UInt8) -> UInt32? {
        switch b {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(b - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt32(b - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt32(b - UInt8(ascii: "A") + 10)
        default: nil
        }
    }

    private mutating func hex4() throws(JSONSyntaxError) -> UInt32 {
        guard position + 4 <= bytes.count else { throw error("a \\u escape needs four hex digits") }
        var v: UInt32 = 0
        for i in 0..<4 {
            guard let d = Self.hex(bytes[position + i]) else {
                throw error("a \\u escape needs four hex digits", at: position + i)
            }
            v = v << 4 | d
        }
        position += 4
        return v
    }

    private mutating func string() throws(JSONSyntaxError) -> String {
        let start = position
        position += 1
        let contentStart = position
        // Fast path: no escapes.
        while position < bytes.count {
            let b = bytes[position]
            if b == UInt8(ascii: "\"") {
                let text = bytes.withUnsafeBufferPointer {
                    String(validating: UnsafeBufferPointer(rebasing: $0[contentStart..<position]), as: UTF8.self)
                }
                guard let text else { throw error("a string is not valid UTF-8", at: contentStart) }
                position += 1
                return text
            }
            if b == UInt8(ascii: "\\") { break }
            if b < 0x20 { throw error("a control character (0x\(String(b, radix: 16))) must be escaped in a string") }
            position += 1
        }
        guard position < bytes.count else {
            throw error("a string is not closed before the end of the file", at: start)
        }
        // Slow path: decode escapes into bytes, then validate.
        var out = Array(bytes[contentStart..<position])
        while true {
            guard position < bytes.count else {
                throw error("a string is not closed before the end of the file", at: start)
            }
            let b = bytes[position]
            if b == UInt8(ascii: "\"") {
                position += 1
                guard let text = String(validating: out, as: UTF8.self) else {
                    throw error("a string is not valid UTF-8", at: contentStart)
                }
                return text
            }
            if b < 0x20 { throw error("a control character (0x\(String(b, radix: 16))) must be escaped in a string") }
            if b != UInt8(ascii: "\\") {
                out.append(b)
                position += 1
                continue
            }
            position += 1
            guard position < bytes.count else { throw error("a string is not closed before the end of the file") }
            let e = bytes[position]
            position += 1
            switch e {
            case UInt8(ascii: "\""): out.append(0x22)
            case UInt8(ascii: "\\"): out.append(0x5C)
            case UInt8(ascii: "/"): out.append(0x2F)
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                let escapeStart = position - 2
                var scalar = try hex4()
                if scalar >= 0xD800 && scalar < 0xDC00 {
                    guard position + 2 <= bytes.count, bytes[position] == UInt8(ascii: "\\"),
                        bytes[position + 1] == UInt8(ascii: "u")
                    else { throw error("a lone high surrogate in a \\u escape", at: escapeStart) }
                    position += 2
                    let low = try hex4()
                    guard low >= 0xDC00 && low < 0xE000 else {
                        throw error("a high surrogate not followed by a low one", at: escapeStart)
                    }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                } else if scalar >= 0xDC00 && scalar < 0xE000 {
                    throw error("a lone low surrogate in a \\u escape", at: escapeStart)
                }
                UTF8.encode(Unicode.Scalar(scalar)!) { out.append($0) }
            default:
                throw error("an unknown escape \\\(Character(Unicode.Scalar(e)))", at: position - 2)
            }
        }
    }

    private mutating func number() throws(JSONSyntaxError) -> JSONValue {
        let start = position
        func digit(_ i: Int) -> Bool { i < bytes.count && bytes[i] >= 0x30 && bytes[i] <= 0x39 }
        if bytes[position] == UInt8(ascii: "-") { position += 1 }
        guard digit(position) else { throw error("a '-' must be followed by a digit") }
        if bytes[position] == UInt8(ascii: "0") {
            position += 1
            if digit(position) { throw error("a number may not have leading zeros") }
        } else {
            while digit(position) { position += 1 }
        }
        var isInteger = true
        if position < bytes.count && bytes[position] == UInt8(ascii: ".") {
            isInteger = false
            position += 1
            guard digit(position) else { throw error("a '.' must be followed by a digit") }
            while digit(position) { position += 1 }
        }
        if position < bytes.count && (bytes[position] == UInt8(ascii: "e") || bytes[position] == UInt8(ascii: "E")) {
            isInteger = false
            position += 1
            if position < bytes.count && (bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-"))
            {
                position += 1
            }
            guard digit(position) else { throw error("an exponent needs digits") }
            while digit(position) { position += 1 }
        }
        let text = String(decoding: bytes[start..<position], as: UTF8.self)
        if isInteger {
            if let v = Int64(text) { return .integer(v) }
            if let v = UInt64(text) { return .unsigned(v) }
            return .hugeInteger(text)
        }
        guard let v = Double(text), v.isFinite else { throw error("the number \(text) is out of range", at: start) }
        return .float(v)
    }
}
