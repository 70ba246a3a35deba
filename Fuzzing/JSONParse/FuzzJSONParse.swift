import Foundation
@_spi(Testing) import Stowage
import StowageTestSupport

/// The fuzz target's entry point: the input as a JSON document for the JSON store's parser.
/// The properties: parsing throws a `JSONSyntaxError` or gives a value; the value written
/// with the store's writer parses again; and writing what that parse gave yields the same
/// bytes (the writer's form is a fixed point, so a document survives being rewritten).
func fuzzJSONParse(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: count)) } ?? []
    let value: JSONValue
    do {
        value = try JSONParser.parse(bytes)
    } catch {
        return 0
    }
    let written = write(value)
    let again: JSONValue
    do {
        again = try JSONParser.parse(written)
    } catch {
        fatalError("what the writer wrote does not parse: \(error)\n\(String(decoding: written, as: UTF8.self))")
    }
    guard write(again) == written else { fatalError("a document changes when it is written a second time") }
    return 0
}

func write(_ value: JSONValue) -> [UInt8] {
    var w = JSONWriter()
    write(value, into: &w)
    return w.finish()
}

func write(_ value: JSONValue, into w: inout JSONWriter) {
    switch value {
    case .null: w.null()
    case .bool(let v): w.bool(v)
    case .integer(let v): w.int(v)
    case .unsigned(let v): w.uint(v)
    case .float(let v): w.double(v)
    case .hugeInteger(let text): w.string(text)
    case .string(let v): w.string(v)
    case .array(let items):
        w.beginArray()
        for item in items { write(item, into: &w) }
        w.endArray()
    case .object(let members):
        w.beginObject()
        for member in members {
            w.key(member.key)
            write(member.value, into: &w)
        }
        w.endObject()
    }
}

/// The JSON format samples, and a few documents at the edges of the syntax.
func jsonParseSeeds() -> [[UInt8]] {
    let directory = FuzzSamples.directory
    let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter {
        $0.hasSuffix(".json")
    }
    let samples = names.sorted().compactMap { FileManager.default.contents(atPath: directory + "/" + $0) }.map {
        Array($0)
    }
    let edges = [
        "[1e308, -0.0, 5e-324, 18446744073709551615, 18446744073709551616, -9223372036854775808]",
        #"{"a": "\u00e9\ud83d\ude00\n\"", "a": [true, false, null, {}]}"#, "[[[[[[[[[[]]]]]]]]]]", "\"\\/\"",
    ]
    return samples + edges.map { Array($0.utf8) }
}
