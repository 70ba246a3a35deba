import Foundation

/// The value mapping of `Formats/json.md`: ``SnapshotValue`` to JSON and back.
package enum JSONValueCodec {
    /// A value that does not fit the format; the caller adds where it is.
    package struct Failure: Error {
        package let message: String
        package init(_ message: String) { self.message = message }
    }

    // MARK: Writing

    package static func write(_ value: SnapshotValue, to w: inout JSONWriter) {
        switch value {
        case .null: w.null()
        case .bool(let v): w.bool(v)
        case .int(let v): w.int(v)
        case .uint(let v):
            tagged("$uint", &w) { $0.uint(v) }
        case .double(let v):
            if v.isFinite {
                w.double(v)
            } else {
                tagged("$double", &w) { $0.string(v.isNaN ? "nan" : (v < 0 ? "-inf" : "inf")) }
            }
        case .string(let v): w.string(v)
        case .date(let v):
            tagged("$date", &w) { w in
                if let text = JSONDates.iso8601(v) {
                    w.string(text)
                } else {
                    let t = v.timeIntervalSinceReferenceDate
                    if t.isFinite { w.double(t) } else { w.string(t.isNaN ? "nan" : (t < 0 ? "-inf" : "inf")) }
                }
            }
        case .data(let v): tagged("$data", &w) { $0.string(v.base64EncodedString()) }
        case .uuid(let v): tagged("$uuid", &w) { $0.string(v.uuidString) }
        case .url(let v): tagged("$url", &w) { $0.string(v.absoluteString) }
        case .decimal(let v): tagged("$decimal", &w) { $0.string(v.description) }
        case .array(let items):
            w.beginArray()
            for item in items { write(item, to: &w) }
            w.endArray()
        case .object(let members):
            if members.count == 1, let only = members.first, only.key.hasPrefix("$") {
                tagged("$object", &w) { w in writeObject(members, &w) }
            } else {
                writeObject(members, &w)
            }
        case .identifier(let id):
            if let key = id.primaryKey {
                tagged("$ref", &w) { w in
                    w.beginObject()
                    w.key("entity")
                    w.string(id.entityName)
                    w.key("key")
                    w.int(key)
                    w.endObject()
                }
            } else {
                // A temporary identifier is never stored: the model was not saved.
                w.null()
            }
        }
    }

    private static func writeObject(_ members: [String: SnapshotValue], _ w: inout JSONWriter) {
        w.beginObject()
        for key in members.keys.sorted(by: jsonKeyOrder) {
            w.key(key)
            write(members[key]!, to: &w)
        }
        w.endObject()
    }

    private static func tagged(_ tag: String, _ w: inout JSONWriter, _ body: (inout JSONWriter) -> Void) {
        w.beginObject()
        w.key(tag)
        body(&w)
        w.endObject()
    }

    // MARK: Reading

    /// Reads an attribute's value, accepting the hand-editing shortcuts its type allows.
    package static func readAttribute(_ json: JSONValue, typeName: String, storeIdentifier: String) throws(Failure)
        -> SnapshotValue
    {
        switch (typeName, json) {
        case ("Double", .integer(let v)), ("Float", .integer(let v)): return .double(Double(v))
        case ("Date", .string(let s)):
            guard let date = JSONDates.parse(s) else { throw Failure("\"\(s)\" is not an ISO 8601 date ending in Z") }
            return .date(date)
        case ("UUID", .string(let s)), ("URL", .string(let s)), ("Decimal", .string(let s)):
            let tag = "$" + typeName.lowercased()
            return try read(.object([(tag, .string(s))]), storeIdentifier: storeIdentifier)
        default:
            return try read(json, storeIdentifier: storeIdentifier)
        }
    }

    /// Reads any value in its canonical form.
    package static func read(_ json: JSONValue, storeIdentifier: String) throws(Failure) -> SnapshotValue {
        switch json {
        case .null: return .null
        case .bool(let v): return .bool(v)
        case .integer(let v): return .int(v)
        case .unsigned(let v): return .uint(v)
        case .hugeInteger(let text): throw Failure("the integer \(text) is out of range")
        case .float(let v): return .double(v)
        case .string(let v): return .string(v)
        case .array(let items):
            var values: [SnapshotValue] = []
            values.reserveCapacity(items.count)
            for item in items { values.append(try read(item, storeIdentifier: storeIdentifier)) }
            return .array(values)
        case .object(let members):
            if members.count == 1, members[0].key.hasPrefix("$") {
                return try readTagged(members[0].key, members[0].value, storeIdentifier: storeIdentifier)
            }
            return .object(try readMembers(members, storeIdentifier: storeIdentifier))
        }
    }

    private static func readMembers(_ members: [(key: String, value: JSONValue)], storeIdentifier: String)
        throws(Failure) -> [String: SnapshotValue]
    {
        var result: [String: SnapshotValue] = [:]
        for (key, value) in members {
            guard result[key] == nil else { throw Failure("the object member \"\(key)\" appears twice") }
            result[key] = try read(value, storeIdentifier: storeIdentifier)
        }
        return result
    }

    private static func readTagged(_ tag: String, _ json: JSONValue, storeIdentifier: String) throws(Failure)
        -> SnapshotValue
    {
        func text() throws(Failure) -> String {
            guard case .string(let s) = json else { throw Failure("\(tag) needs a string, found \(json.typeName)") }
            return s
        }
        switch tag {
        case "$uint":
            switch json {
            case .integer(let v) where v >= 0: return .uint(UInt64(v))
            case .unsigned(let v): return .uint(v)
            default: throw Failure("$uint needs an integer from 0 to 18446744073709551615")
            }
        case "$double":
            switch json {
            case .string("inf"): return .double(.infinity)
            case .string("-inf"): return .double(-.infinity)
            case .string("nan"): return .double(.nan)
            case .float(let v): return .double(v)
            case .integer(let v): return .double(Double(v))
            default: throw Failure("$double needs \"inf\", \"-inf\", \"nan\" or a number")
            }
        case "$date":
            switch json {
            case .string(let s):
                guard let date = JSONDates.parse(s) else {
                    throw Failure("$date \"\(s)\" is not an ISO 8601 date (YYYY-MM-DDTHH:MM:SS[.fraction]Z)")
                }
                return .date(date)
            case .float(let v): return .date(Date(timeIntervalSinceReferenceDate: v))
            case .integer(let v): return .date(Date(timeIntervalSinceReferenceDate: Double(v)))
            default: throw Failure("$date needs an ISO 8601 string or a number of seconds")
            }
        case "$data":
            let s = try text()
            guard let data = Data(base64Encoded: s) else { throw Failure("$data is not valid base64") }
            return .data(data)
        case "$uuid":
            let s = try text()
            guard let uuid = UUID(uuidString: s) else { throw Failure("\"\(s)\" is not a UUID") }
            return .uuid(uuid)
        case "$url":
            let s = try text()
            guard let url = URL(string: s) else { throw Failure("\"\(s)\" is not a URL") }
            return .url(url)
        case "$decimal":
            let s = try text()
            guard let decimal = Decimal(string: s, locale: nil), decimal.description == s || isDecimalSyntax(s) else {
                throw Failure("\"\(s)\" is not a decimal number")
            }
            return .decimal(decimal)
        case "$object":
            guard case .object(let members) = json else { throw Failure("$object needs an object") }
            return .object(try readMembers(members, storeIdentifier: storeIdentifier))
        case "$ref":
            guard case .object(let members) = json, members.count == 2,
                let entity = members.first(where: { $0.key == "entity" }), case .string(let name) = entity.value,
                let keyMember = members.first(where: { $0.key == "key" }), case .integer(let key) = keyMember.value
            else { throw Failure("$ref needs {\"entity\": name, \"key\": primary key}") }
            return .identifier(.permanent(entityName: name, storeIdentifier: storeIdentifier, primaryKey: key))
        default:
            throw Failure("unknown tag \(tag) (an object with one member named $… must be wrapped in $object)")
        }
    }

    /// `-?digits(.digits)?`: what `Decimal(string:)` reads completely.
    private static func isDecimalSyntax(_ s: String) -> Bool {
        var bytes = Substring(s).utf8[...]
        if bytes.first == UInt8(ascii: "-") { bytes = bytes.dropFirst() }
        let parts = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count) else { return false }
        return parts.allSatisfy { !$0.isEmpty && $0.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } }
    }
}

/// ISO 8601 dates as `Formats/json.md` writes them: UTC, `Z`, 3 to 9 fractional digits,
/// only when the text reads back as exactly the same `Date`.
package enum JSONDates {
    /// Seconds between 1970-01-01 and 2001-01-01.
    static let referenceOffset: Int64 = 978_307_200
    /// Whole seconds since 2001 of 0001-01-01T00:00:00Z and of 9999-12-31T23:59:59Z.
    static let minimumSeconds: Int64 = -62_135_596_800 - referenceOffset
    static let maximumSeconds: Int64 = 253_402_300_799 - referenceOffset
    static let powers: [Int64] = (0...9).map { n in (0..<n).reduce(1) { a, _ in a * 10 } }

    /// The reader's rule: whole seconds plus the fraction, in IEEE double arithmetic.
    static func seconds(_ whole: Int64, _ fraction: Int64, digits: Int) -> Double {
        Double(whole) + Double(fraction) / Double(powers[digits])
    }

    static func iso8601(_ date: Date) -> String? {
        let t = date.timeIntervalSinceReferenceDate
        guard t.isFinite else { return nil }
        let floor = t.rounded(.down)
        guard floor >= Double(minimumSeconds), floor <= Double(maximumSeconds) else { return nil }
        let fraction = t - floor
        for digits in 3...9 {
            var whole = Int64(floor)
            var f = Int64((fraction * Double(powers[digits])).rounded())
            if f >= powers[digits] {
                whole += 1
                f -= powers[digits]
            }
            guard whole <= maximumSeconds, seconds(whole, f, digits: digits) == t else { continue }
            return format(whole, f, digits: digits)
        }
        return nil
    }

    private static func format(_ whole: Int64, _ fraction: Int64, digits: Int) -> String {
        let unix = whole + referenceOffset
        let days = unix >= 0 ? unix / 86_400 : -((-unix + 86_399) / 86_400)
        let secondOfDay = unix - days * 86_400
        let (y, m, d) = civil(fromDays: days)
        func pad(_ v: Int64, _ width: Int) -> String {
            let s = String(v)
            return String(repeating: "0", count: max(0, width - s.count)) + s
        }
        return "\(pad(y, 4))-\(pad(m, 2))-\(pad(d, 2))T\(pad(secondOfDay / 3600, 2)):"
            + "\(pad(secondOfDay / 60 % 60, 2)):\(pad(secondOfDay % 60, 2)).\(pad(fraction, digits))Z"
    }

    /// Reads `YYYY-MM-DDTHH:MM:SS[.f{1,9}]Z`.
    package static func parse(_ text: String) -> Date? {
        let b = Array(text.utf8)
        guard b.count >= 20, b.last == UInt8(ascii: "Z") else { return nil }
        func number(_ range: Range<Int>) -> Int64? {
            var v: Int64 = 0
            for i in range {
                guard b[i] >= 0x30 && b[i] <= 0x39 else { return nil }
                v = v * 10 + Int64(b[i] - 0x30)
            }
            return v
        }
        guard b[4] == UInt8(ascii: "-"), b[7] == UInt8(ascii: "-"), b[10] == UInt8(ascii: "T"),
            b[13] == UInt8(ascii: ":"), b[16] == UInt8(ascii: ":"),
            let y = number(0..<4), let m = number(5..<7), let d = number(8..<10),
            let hh = number(11..<13), let mm = number(14..<16), let ss = number(17..<19),
            y >= 1, (1...12).contains(m), d >= 1, d <= daysInMonth(y, m), hh < 24, mm < 60, ss < 60
        else { return nil }
        var fraction: Int64 = 0
        var digits = 0
        if b.count > 20 {
            guard b[19] == UInt8(ascii: "."), b.count - 21 >= 1, b.count - 21 <= 9,
                let f = number(20..<(b.count - 1))
            else { return nil }
            fraction = f
            digits = b.count - 21
        } else if b[19] != UInt8(ascii: "Z") {
            return nil
        }
        let unix = days(fromCivil: y, m, d) * 86_400 + hh * 3600 + mm * 60 + ss
        return Date(timeIntervalSinceReferenceDate: seconds(unix - referenceOffset, fraction, digits: digits))
    }

    static func daysInMonth(_ y: Int64, _ m: Int64) -> Int64 {
        switch m {
        case 2: (y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
    package static func days(fromCivil year: Int64, _ month: Int64, _ day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    package static func civil(fromDays days: Int64) -> (Int64, Int64, Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let y = yoe + era * 400
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (m <= 2 ? y + 1 : y, m, d)
    }
}
