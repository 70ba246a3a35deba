import CLibPQ
import Foundation
import Stowage

/// Conversions between ``SnapshotValue``s and the text forms of PostgreSQL's values, by
/// column kind. Every value travels as a bound parameter; none is written into SQL text.
enum PostgresValues {
    /// U+0001 marks an escape in stored text: PostgreSQL's `text` cannot hold U+0000, so a
    /// string's U+0000 is kept as U+0001 `0` and its U+0001 as U+0001 `1`. Only strings that
    /// hold either character change, and equality is kept exactly.
    static let escape: Character = "\u{1}"

    static func escapeText(_ string: String) -> String {
        guard string.utf8.contains(where: { $0 <= 1 }) else { return string }
        var out = ""
        out.reserveCapacity(string.utf8.count + 4)
        for scalar in string.unicodeScalars {
            switch scalar.value {
            case 0: out += "\u{1}0"
            case 1: out += "\u{1}1"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    static func unescapeText(_ string: String) -> String {
        guard string.utf8.contains(1) else { return string }
        var out = String.UnicodeScalarView()
        var iterator = string.unicodeScalars.makeIterator()
        while let scalar = iterator.next() {
            if scalar.value == 1, let next = iterator.next() {
                out.append(next == "0" ? "\u{0}" : "\u{1}")
            } else {
                out.append(scalar)
            }
        }
        return String(out)
    }

    /// `value` as the text of a parameter for a column of `kind`; `nil` for SQL `NULL`.
    /// - Throws: ``DataStoreError`` `.unsupportedFeature` for a value the column cannot take.
    static func parameter(_ value: SnapshotValue, _ kind: PostgresColumnKind, column: String) throws -> String? {
        switch (kind, value) {
        case (_, .null): return nil
        case (.text, .string(let s)): return escapeText(s)
        case (.bigint, .int(let v)), (.integer, .int(let v)), (.smallint, .int(let v)), (.unsigned, .int(let v)):
            return String(v)
        case (.bigint, .uint(let v)), (.integer, .uint(let v)), (.smallint, .uint(let v)), (.unsigned, .uint(let v)):
            return String(v)
        case (.double, .double(let v)), (.real, .double(let v)): return double(v)
        case (.double, .int(let v)), (.real, .int(let v)): return String(v)
        case (.boolean, .bool(let b)): return b ? "t" : "f"
        case (.timestamp, .date(let d)): return double(d.timeIntervalSince1970)
        case (.uuid, .uuid(let u)): return uuidText(u)
        case (.bytea, .data(let d)): return hex(d)
        case (.numeric, .decimal(let d)): return d.isNaN ? "NaN" : d.description
        case (.numeric, .int(let v)): return String(v)
        case (.numeric, .double(let v)): return double(v)
        case (.url, .url(let u)): return escapeText(u.absoluteString)
        case (.json, _): return try json(value)
        case (.reference, .identifier(let id)):
            guard let key = id.primaryKey else {
                throw DataStoreError(.unsupportedFeature, "\(column) refers to \(id), which has no integer key")
            }
            return String(key)
        default:
            throw DataStoreError(
                .unsupportedFeature, "\(column) is a \(kind.sqlType) column and cannot hold a \(value.kindName)")
        }
    }

    /// The SQL that reads a parameter `$n` into a column of `kind`.
    static func placeholder(_ n: Int, _ kind: PostgresColumnKind) -> String {
        switch kind {
        case .timestamp: "to_timestamp($\(n)::double precision)"
        default: "$\(n)::\(kind.castType)"
        }
    }

    /// The value a column of `kind` gave as `text` (as ``PostgresEntityTable/selectList``
    /// reads it); `nil` text is `NULL`.
    static func value(_ text: String?, _ kind: PostgresColumnKind, store: String) throws -> SnapshotValue {
        guard let text else { return .null }
        func bad() -> DataStoreError {
            DataStoreError(.corruptStore, "a \(kind.sqlType) column holds \(String(reflecting: text.prefix(40)))")
        }
        switch kind {
        case .text: return .string(unescapeText(text))
        case .bigint, .integer, .smallint:
            guard let v = Int64(text) else { throw bad() }
            return .int(v)
        case .unsigned:
            guard let v = UInt64(text) else { throw bad() }
            return .uint(v)
        case .double, .real:
            guard let v = Double(text) else { throw bad() }
            return .double(v)
        case .boolean: return .bool(text == "t")
        case .timestamp:
            guard let seconds = Double(text) else { throw bad() }
            return .date(Date(timeIntervalSince1970: seconds))
        case .uuid:
            guard let u = UUID(uuidString: text) else { throw bad() }
            return .uuid(u)
        case .bytea:
            guard let d = data(hex: text) else { throw bad() }
            return .data(d)
        case .numeric:
            guard let d = Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")) else { throw bad() }
            return .decimal(d)
        case .url:
            guard let u = URL(string: unescapeText(text)) else { throw bad() }
            return .url(u)
        case .json:
            guard let decoded = try? JSONDecoder().decode(SnapshotValue.self, from: Data(text.utf8)) else {
                throw bad()
            }
            return mapStrings(decoded, unescapeText)
        case .reference(let destination):
            guard let key = Int64(text) else { throw bad() }
            return .identifier(.permanent(entityName: destination, storeIdentifier: store, primaryKey: key))
        }
    }

    /// The value at (`row`, `column`) of `rows`, a column of `kind`: numbers, flags and
    /// identifiers read straight from the server's text, the rest through ``value(_:_:store:)``.
    static func value(_ rows: PostgresRows, _ row: Int, _ column: Int, _ kind: PostgresColumnKind, store: String)
        throws -> SnapshotValue
    {
        guard let text = rows.pointer(row, column) else { return .null }
        switch kind {
        case .bigint, .integer, .smallint, .reference:
            var end: UnsafeMutablePointer<CChar>?
            let v = strtoll(text, &end, 10)
            guard let end, end.pointee == 0, end != UnsafeMutablePointer(mutating: text) else { break }
            if case .reference(let destination) = kind {
                return .identifier(.permanent(entityName: destination, storeIdentifier: store, primaryKey: Int64(v)))
            }
            return .int(Int64(v))
        case .double, .real, .timestamp:
            var end: UnsafeMutablePointer<CChar>?
            let v = stowage_strtod_c(text, &end)
            guard let end, end.pointee == 0, end != UnsafeMutablePointer(mutating: text) else { break }
            return kind == .timestamp ? .date(Date(timeIntervalSince1970: v)) : .double(v)
        case .boolean:
            return .bool(text.pointee == CChar(UInt8(ascii: "t")))
        case .uuid:
            if let uuid = uuid(text) { return .uuid(uuid) }
        default:
            break
        }
        return try value(String(cString: text), kind, store: store)
    }

    /// A UUID in PostgreSQL's text form (`xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`, lower case),
    /// without the `sscanf` that `UUID(uuidString:)` runs.
    static func uuid(_ text: UnsafePointer<CChar>) -> UUID? {
        var bytes = [UInt8](repeating: 0, count: 16)
        var i = 0
        var position = 0
        func nibble(_ c: CChar) -> UInt8? {
            let c = UInt8(bitPattern: c)
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
            default: return nil
            }
        }
        while i < 16 {
            if position == 8 || position == 13 || position == 18 || position == 23 {
                guard text[position] == CChar(UInt8(ascii: "-")) else { return nil }
                position += 1
            }
            guard let high = nibble(text[position]), let low = nibble(text[position + 1]) else { return nil }
            bytes[i] = high << 4 | low
            i += 1
            position += 2
        }
        guard text[position] == 0 else { return nil }
        return UUID(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8], bytes[9],
                bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
            ))
    }

    /// `uuid` in lower-case text form, without the `snprintf` of `uuidString`.
    static func uuidText(_ uuid: UUID) -> String {
        let digits = Array("0123456789abcdef".utf8)
        return withUnsafeBytes(of: uuid.uuid) { bytes in
            String(unsafeUninitializedCapacity: 36) { out in
                var position = 0
                for (i, byte) in bytes.enumerated() {
                    if i == 4 || i == 6 || i == 8 || i == 10 {
                        out[position] = UInt8(ascii: "-")
                        position += 1
                    }
                    out[position] = digits[Int(byte >> 4)]
                    out[position + 1] = digits[Int(byte & 15)]
                    position += 2
                }
                return position
            }
        }
    }

    static func double(_ v: Double) -> String {
        if v.isNaN { return "NaN" }
        if v.isInfinite { return v < 0 ? "-Infinity" : "Infinity" }
        return "\(v)"
    }

    static func hex(_ data: Data) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var bytes: [UInt8] = [UInt8(ascii: "\\"), UInt8(ascii: "x")]
        bytes.reserveCapacity(2 + data.count * 2)
        for byte in data {
            bytes.append(digits[Int(byte >> 4)])
            bytes.append(digits[Int(byte & 15)])
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    static func data(hex text: String) -> Data? {
        let bytes = Array(text.utf8)
        guard bytes.count >= 2, bytes[0] == UInt8(ascii: "\\"), bytes[1] == UInt8(ascii: "x"), bytes.count % 2 == 0
        else { return nil }
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        var out = Data(capacity: (bytes.count - 2) / 2)
        var i = 2
        while i < bytes.count {
            guard let high = nibble(bytes[i]), let low = nibble(bytes[i + 1]) else { return nil }
            out.append(high << 4 | low)
            i += 2
        }
        return out
    }

    /// A value kept in a `jsonb` column: ``SnapshotValue``'s own `Codable` form, which
    /// keeps every case apart (a date from a number, an identifier from a string), with
    /// its strings escaped as text columns escape them (`jsonb` cannot hold U+0000 either).
    static func json(_ value: SnapshotValue) throws -> String {
        String(decoding: try JSONEncoder().encode(mapStrings(value, escapeText)), as: UTF8.self)
    }

    static func mapStrings(_ value: SnapshotValue, _ transform: (String) -> String) -> SnapshotValue {
        switch value {
        case .string(let s): .string(transform(s))
        case .array(let items): .array(items.map { mapStrings($0, transform) })
        case .object(let fields):
            .object(
                Dictionary(uniqueKeysWithValues: fields.map { (transform($0.key), mapStrings($0.value, transform)) }))
        default: value
        }
    }

    /// A PostgreSQL array literal of `elements` (each already in its element type's text
    /// form), for one parameter that `unnest` spreads into rows.
    static func arrayLiteral(_ elements: [String?]) -> String {
        var out = "{"
        for (i, element) in elements.enumerated() {
            if i > 0 { out += "," }
            guard let element else {
                out += "NULL"
                continue
            }
            out += "\""
            if element.utf8.contains(where: { $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
                for scalar in element.unicodeScalars {
                    if scalar == "\"" || scalar == "\\" { out += "\\" }
                    out.unicodeScalars.append(scalar)
                }
            } else {
                out += element
            }
            out += "\""
        }
        return out + "}"
    }
}
