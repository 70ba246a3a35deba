// A Swift 6.3 toolchain bug, not Stowage's: built with ThreadSanitizer, this program dies of
// a SEGV inside TSan's own instrumentation (`__tsan::ExternalAccess` -> `MemoryAccess`, "a
// dereference of a high value address") at the dictionary read on the line marked below;
// built without it, it prints ["abc"]. It is the shape of Stowage's JSON document walk
// (`JSONDocumentWalk.walk`, generic over a visitor whose typed-throws `Failure` carries a
// payload), cut down to plain Swift. Under `Scripts/tsan --all` it stops the tests that read
// a JSON document's stored schema for a migration, which `Scripts/tsan` therefore skips.
//
//   swiftc -sanitize=thread -Onone -g tsan-typed-throws.swift -o repro && ./repro   # SEGV
//   swiftc -Onone -g tsan-typed-throws.swift -o repro && ./repro                    # ["abc"]
import Foundation
protocol Visitor {
    associatedtype Failure: Error
    mutating func report(_ s: String) throws(Failure)
    mutating func header(_ s: String, _ n: Int64?) throws(Failure)
    mutating func schema(_ s: Schema) throws(Failure)
}
struct Schema { var version: [UInt64]; var entities: [String] }
struct Problem: Error { var code: Int; var message: String }
private struct Reader: Visitor {
    enum Failure: Error { case found(Schema); case problem(Problem) }
    func report(_ s: String) throws(Failure) { throw .problem(Problem(code: 1, message: s)) }
    func header(_ s: String, _ n: Int64?) {}
    func schema(_ s: Schema) throws(Failure) { throw .found(s) }
}
indirect enum Value { case s(String), i(Int64), o([(key: String, value: Value)]) }
enum Walk {
    private static func topLevel<V: Visitor>(_ d: Value, _ v: inout V) throws(V.Failure) -> [String: Value]? {
        guard case .o(let list) = d else { try v.report("x"); return nil }
        var top: [String: Value] = [:]
        top.reserveCapacity(list.count)
        for (k, x) in list where top.updateValue(x, forKey: k) != nil { try v.report(k) }
        guard case .i(let version)? = top["version"], (1...3).contains(version) else { try v.report("v"); return nil }
        return top
    }
    static func walk<V: Visitor>(_ d: Value, maximumDepth: Int, _ v: inout V) throws(V.Failure) {
        let document = d
        guard let top = try topLevel(document, &v) else { return }
        guard case .s(let id)? = top["storeIdentifier"], !id.isEmpty else { return try v.report("id") }  // here
        var next: Int64?
        if case .i(let n)? = top["nextPrimaryKey"], n >= 1 { next = n } else { try v.report("n") }
        try v.header(id, next)
        try v.schema(Schema(version: [1, 0, 0], entities: [id]))
    }
}
func storedSchema(_ d: Value) throws(Problem) -> Schema {
    var r = Reader()
    do { try Walk.walk(d, maximumDepth: 64, &r) } catch {
        switch error { case .found(let s): return s; case .problem(let p): throw p }
    }
    throw Problem(code: 2, message: "none")
}
let doc = Value.o([(key: "storeIdentifier", value: .s("abc")), (key: "version", value: .i(3)), (key: "nextPrimaryKey", value: .i(4))])
print((try? storedSchema(doc))?.entities ?? [])
