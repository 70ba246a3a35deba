import Foundation
import IndexKey
import StowageTestSupport

/// The fuzz target's entry point: the input as two index keys (`Formats/index-key.md`), the
/// first byte giving the first key's length. The properties: decoding either key throws an
/// `IndexKeyDecodingError` or gives components that encode to a key which decodes and
/// encodes to itself; and when both decode, the encoded keys' byte order is the order of
/// their components (the tag's order between types, numeric order with NaN last, UTF-8 byte
/// order for strings, byte order for byte strings and UUIDs; a key before its extensions),
/// which is what makes an index range scan return the right rows.
func fuzzIndexKeys(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    guard let data, count >= 1 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: count))
    let split = min(Int(bytes[0]), bytes.count - 1)
    let a = canonical(Array(bytes[1..<(1 + split)]))
    let b = canonical(Array(bytes[(1 + split)...]))
    if let a, let b {
        let byBytes = IndexKey.compare(a.key, b.key).signum()
        let byValues = compare(a.components, b.components)
        guard byBytes == byValues else {
            fatalError("keys \(a.key) and \(b.key) order \(byBytes) by bytes but \(byValues) by value")
        }
    }
    return 0
}

/// The key `bytes` decode to, encoded again, with its components; `nil` when `bytes` do not
/// decode.
func canonical(_ bytes: [UInt8]) -> (key: IndexKey, components: [IndexKeyComponent])? {
    let components: [IndexKeyComponent]
    do {
        components = try IndexKey(bytes: bytes).decoded()
    } catch {
        return nil
    }
    let key = encode(components)
    let again: [IndexKeyComponent]
    do {
        again = try key.decoded()
    } catch {
        fatalError("a key the encoder wrote (\(key)) does not decode: \(error)")
    }
    guard encode(again) == key else { fatalError("\(key) decodes to components that encode differently") }
    return (key, components)
}

func encode(_ components: [IndexKeyComponent]) -> IndexKey {
    IndexKey { encoder in
        for component in components {
            switch component {
            case .null: encoder.appendNil()
            case .bool(let v): encoder.append(v)
            case .int64(let v): encoder.append(v)
            case .uint64(let v): encoder.append(v)
            case .double(let v): encoder.append(v)
            case .float(let v): encoder.append(v)
            case .date(let seconds): encoder.appendDate(secondsSinceReferenceDate: seconds)
            case .string(let v): encoder.append(v)
            case .bytes(let v): encoder.append(v)
            case .uuid(let v): encoder.append(uuid: v.uuid)
            }
        }
    }
}

/// Component lists in order, component by component, a list before its extensions.
func compare(_ a: [IndexKeyComponent], _ b: [IndexKeyComponent]) -> Int {
    for (x, y) in zip(a, b) {
        let c = compare(x, y)
        if c != 0 { return c }
    }
    return a.count < b.count ? -1 : a.count > b.count ? 1 : 0
}

func compare(_ x: IndexKeyComponent, _ y: IndexKeyComponent) -> Int {
    switch (x, y) {
    case (.null, .null): return 0
    case (.bool(let a), .bool(let b)): return order(a ? 1 : 0, b ? 1 : 0)
    case (.int64(let a), .int64(let b)): return order(a, b)
    case (.uint64(let a), .uint64(let b)): return order(a, b)
    case (.double(let a), .double(let b)): return order(a, b)
    case (.float(let a), .float(let b)): return order(Double(a), Double(b))
    case (.date(let a), .date(let b)): return order(a, b)
    case (.string(let a), .string(let b)): return order(Array(a.utf8), Array(b.utf8))
    case (.bytes(let a), .bytes(let b)): return order(a, b)
    case (.uuid(let a), .uuid(let b)): return order(uuidBytes(a), uuidBytes(b))
    default: return order(tag(x).rawValue, tag(y).rawValue)
    }
}

func order<T: Comparable>(_ a: T, _ b: T) -> Int { a < b ? -1 : a > b ? 1 : 0 }

/// Numeric order, `-0.0` equal to `+0.0`, and NaN after everything, equal to itself.
func order(_ a: Double, _ b: Double) -> Int {
    switch (a.isNaN, b.isNaN) {
    case (true, true): return 0
    case (true, false): return 1
    case (false, true): return -1
    default: return a < b ? -1 : a > b ? 1 : 0
    }
}

func order(_ a: [UInt8], _ b: [UInt8]) -> Int {
    for (x, y) in zip(a, b) where x != y { return x < y ? -1 : 1 }
    return order(a.count, b.count)
}

func uuidBytes(_ u: UUID) -> [UInt8] { withUnsafeBytes(of: u.uuid) { Array($0) } }

func tag(_ c: IndexKeyComponent) -> IndexKeyTag {
    switch c {
    case .null: .null
    case .bool: .bool
    case .int64: .int64
    case .uint64: .uint64
    case .double: .double
    case .float: .float
    case .date: .date
    case .string: .string
    case .bytes: .bytes
    case .uuid: .uuid
    }
}

/// Pairs of keys of every component type, edge values among them.
func indexKeysSeeds() -> [[UInt8]] {
    let components: [[IndexKeyComponent]] = [
        [], [.null], [.bool(false)], [.bool(true)], [.int64(.min)], [.int64(-1)], [.int64(0)], [.int64(.max)],
        [.uint64(0)], [.uint64(.max)], [.double(-.infinity)], [.double(-1.5)], [.double(0)], [.double(.nan)],
        [.double(.infinity)], [.float(-2)], [.float(.nan)], [.date(secondsSinceReferenceDate: 0)],
        [.string("")], [.string("a\u{0}b")], [.string("éclair")], [.bytes([0, 0xFF, 0])],
        [.uuid(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!)],
        [.string("al"), .int64(7)], [.int64(3), .string("alps"), .null],
    ]
    var seeds: [[UInt8]] = []
    for (i, x) in components.enumerated() {
        let y = components[(i * 7 + 3) % components.count]
        let a = encode(x).bytes
        seeds.append([UInt8(a.count)] + a + encode(y).bytes)
    }
    return seeds
}
