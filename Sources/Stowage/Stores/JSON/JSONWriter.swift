import Foundation

/// Writes the deterministic, pretty-printed JSON of `Formats/json.md` straight into a byte
/// buffer: two-space indentation, one member or element per line.
package struct JSONWriter {
    package private(set) var bytes: [UInt8] = []
    private var depth = 0
    /// Whether the current container has had a member or element yet.
    private var hasItems: [Bool] = []

    package init(capacity: Int = 0) {
        bytes.reserveCapacity(capacity)
    }

    private mutating func newline() {
        bytes.append(0x0A)
        for _ in 0..<depth {
            bytes.append(0x20)
            bytes.append(0x20)
        }
    }

    /// Starts an element of the current container (comma, newline and indent as needed).
    private mutating func beginItem() {
        guard !hasItems.isEmpty else { return }
        if hasItems[hasItems.count - 1] { bytes.append(UInt8(ascii: ",")) }
        hasItems[hasItems.count - 1] = true
        newline()
    }

    /// Starts a value: right after a key, or as a new element of the current container.
    private mutating func beginValue() {
        if pendingMember {
            pendingMember = false
        } else {
            beginItem()
        }
    }

    package mutating func beginObject() { openContainer(UInt8(ascii: "{")) }
    package mutating func beginArray() { openContainer(UInt8(ascii: "[")) }

    /// Starts a member of the current object: `"key": `; the value follows.
    package mutating func key(_ key: String) {
        beginItem()
        appendString(key)
        bytes.append(UInt8(ascii: ":"))
        bytes.append(0x20)
        pendingMember = true
    }

    private var pendingMember = false

    private mutating func openContainer(_ open: UInt8) {
        beginValue()
        bytes.append(open)
        depth += 1
        hasItems.append(false)
    }

    package mutating func endObject() { closeContainer(UInt8(ascii: "}")) }
    package mutating func endArray() { closeContainer(UInt8(ascii: "]")) }

    private mutating func closeContainer(_ close: UInt8) {
        depth -= 1
        if hasItems.removeLast() { newline() }
        bytes.append(close)
    }

    /// Writes a scalar value (raw JSON text) as an element or after a key.
    private mutating func scalar(_ write: (inout [UInt8]) -> Void) {
        beginValue()
        write(&bytes)
    }

    package mutating func null() { scalar { $0.append(contentsOf: "null".utf8) } }
    package mutating func bool(_ v: Bool) { scalar { $0.append(contentsOf: (v ? "true" : "false").utf8) } }
    package mutating func int(_ v: Int64) { scalar { $0.append(contentsOf: String(v).utf8) } }
    package mutating func uint(_ v: UInt64) { scalar { $0.append(contentsOf: String(v).utf8) } }
    /// A finite double in its shortest round-trip form, which always has a `.` or an `e`.
    package mutating func double(_ v: Double) {
        precondition(v.isFinite)
        scalar { $0.append(contentsOf: v.description.utf8) }
    }
    package mutating func string(_ v: String) {
        scalar { _ in }
        appendString(v)
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    private mutating func appendString(_ s: String) {
        bytes.append(UInt8(ascii: "\""))
        for b in s.utf8 {
            switch b {
            case UInt8(ascii: "\""):
                bytes.append(0x5C)
                bytes.append(b)
            case UInt8(ascii: "\\"):
                bytes.append(0x5C)
                bytes.append(b)
            case 0x08:
                bytes.append(0x5C)
                bytes.append(UInt8(ascii: "b"))
            case 0x09:
                bytes.append(0x5C)
                bytes.append(UInt8(ascii: "t"))
            case 0x0A:
                bytes.append(0x5C)
                bytes.append(UInt8(ascii: "n"))
            case 0x0C:
                bytes.append(0x5C)
                bytes.append(UInt8(ascii: "f"))
            case 0x0D:
                bytes.append(0x5C)
                bytes.append(UInt8(ascii: "r"))
            case 0..<0x20, 0x7F:
                bytes.append(contentsOf: [0x5C, UInt8(ascii: "u"), 0x30, 0x30])
                bytes.append(Self.hexDigits[Int(b >> 4)])
                bytes.append(Self.hexDigits[Int(b & 0xF)])
            default: bytes.append(b)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// Ends the document with a newline.
    package mutating func finish() -> [UInt8] {
        bytes.append(0x0A)
        return bytes
    }
}

/// Compares strings by their UTF-8 bytes: the key order of the format.
@inline(__always)
func jsonKeyOrder(_ a: String, _ b: String) -> Bool {
    a.utf8.lexicographicallyPrecedes(b.utf8)
}
