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
            // `Decimal(string:)` does not read the "NaN" that ``parameter(_:_:column:)``
            // writes for `Decimal.nan`.
            if text == "NaN" { return .decimal(.nan) }
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

    /// A value of a statement run with `binary` (see ``PostgresConnection/execute(_:_:binary:)``),
    /// for a column of `kind` as ``PostgresEntityTable/selectList`` selects it: numbers,
    /// flags, dates, UUIDs and bytes in PostgreSQL's binary forms (big-endian integers and
    /// IEEE floats, `timestamptz` as microseconds since 2000), text as its UTF-8 bytes, and
    /// `numeric` and `jsonb` selected as text. `reference`, for a to-one column, is an
    /// identifier in the destination's entity and store that keys are given to.
    static func value(
        binary bytes: UnsafeRawBufferPointer, _ kind: PostgresColumnKind, reference: PersistentIdentifier?,
        store: String
    ) throws -> SnapshotValue {
        func bad() -> DataStoreError {
            DataStoreError(.corruptStore, "a \(kind.sqlType) column holds \(bytes.count) bytes that are not one")
        }
        switch kind {
        case .text:
            return .string(text(bytes))
        case .bigint, .integer, .smallint:
            guard let v = integer(bytes) else { throw bad() }
            return .int(v)
        case .reference(let destination):
            guard let key = integer(bytes) else { throw bad() }
            if let reference { return .identifier(reference.withPrimaryKey(key)) }
            return .identifier(.permanent(entityName: destination, storeIdentifier: store, primaryKey: key))
        case .double, .real:
            switch bytes.count {
            case 8: return .double(Double(bitPattern: UInt64(bigEndian: bytes.loadUnaligned(as: UInt64.self))))
            case 4: return .double(Double(Float(bitPattern: UInt32(bigEndian: bytes.loadUnaligned(as: UInt32.self)))))
            default: throw bad()
            }
        case .boolean:
            guard bytes.count == 1 else { throw bad() }
            return .bool(bytes[0] != 0)
        case .timestamp:
            guard bytes.count == 8 else { throw bad() }
            return .date(date(microsecondsSince2000: Int64(bigEndian: bytes.loadUnaligned(as: Int64.self))))
        case .uuid:
            guard bytes.count == 16 else { throw bad() }
            var raw: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
            withUnsafeMutableBytes(of: &raw) { $0.copyMemory(from: bytes) }
            return .uuid(UUID(uuid: raw))
        case .bytea:
            return .data(Data(bytes))
        case .url:
            guard let u = URL(string: text(bytes)) else { throw bad() }
            return .url(u)
        case .numeric, .unsigned, .json:
            return try value(String(decoding: bytes, as: UTF8.self), kind, store: store)
        }
    }

    /// A big-endian integer of 8, 4 or 2 bytes.
    static func integer(_ bytes: UnsafeRawBufferPointer) -> Int64? {
        switch bytes.count {
        case 8: Int64(bigEndian: bytes.loadUnaligned(as: Int64.self))
        case 4: Int64(Int32(bigEndian: bytes.loadUnaligned(as: Int32.self)))
        case 2: Int64(Int16(bigEndian: bytes.loadUnaligned(as: Int16.self)))
        default: nil
        }
    }

    /// Text from a `text` column's bytes, its escapes undone.
    static func text(_ bytes: UnsafeRawBufferPointer) -> String {
        let string = String(decoding: bytes.assumingMemoryBound(to: UInt8.self), as: UTF8.self)
        guard let base = bytes.baseAddress, memchr(base, 1, bytes.count) != nil else { return string }
        return unescapeText(string)
    }

    /// The date of a binary `timestamptz`: the same `Double` of seconds since 1970 as
    /// reading `EXTRACT(EPOCH FROM …)` as text and parsing it gives (the nearest to the
    /// exact decimal), and the infinities for PostgreSQL's `infinity` and `-infinity`.
    static func date(microsecondsSince2000 micro: Int64) -> Date {
        if micro == .max { return Date(timeIntervalSince1970: .infinity) }
        if micro == .min { return Date(timeIntervalSince1970: -.infinity) }
        let (since1970, overflow) = micro.addingReportingOverflow(946_684_800_000_000)
        // Both operands exact, so the division rounds once, to the nearest `Double`.
        if !overflow, since1970.magnitude < 1 << 53 { return Date(timeIntervalSince1970: Double(since1970) / 1e6) }
        guard !overflow else { return Date(timeIntervalSince1970: Double(micro) / 1e6 + 946_684_800) }
        let fraction = String(since1970.magnitude % 1_000_000)
        let decimal =
            "\(since1970 < 0 ? "-" : "")\(since1970.magnitude / 1_000_000)."
            + String(repeating: "0", count: 6 - fraction.count) + fraction
        return Date(timeIntervalSince1970: Double(decimal) ?? Double(since1970) / 1e6)
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
