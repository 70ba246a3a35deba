import Foundation
import StowageTestSupport
import Testing

/// `stowage-bench --save-latency` works end to end on a throwaway cluster (CI times
/// nothing): its four loops save, its table has a row for each with a ratio, and it drops
/// the database it made.
@Suite("stowage-bench --save-latency")
struct PostgresSaveLatencyTests {
    @Test func theLoopsRunAndLeaveNoDatabase() throws {
        guard let cluster = try PostgresStoreTests.cluster() else { return }
        let bench = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
            .deletingLastPathComponent().appendingPathComponent("stowage-bench")
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("save-latency-\(UUID()).txt")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: output) }
        let handle = try FileHandle(forWritingTo: output)
        let process = Process()
        process.executableURL = bench
        process.arguments = ["--postgres", cluster.uri(database: "postgres"), "--save-latency", "1"]
        process.standardOutput = handle
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        try handle.close()
        let table = try String(contentsOf: output, encoding: .utf8)
        #expect(process.terminationStatus == 0, "\(table)")
        for loop in [
            "libpq: one prepared INSERT per save", "libpq, with 15 µs", "libpq, with 30 µs",
            "Stowage: ModelContext.insert + save()",
        ] {
            let row = try #require(table.split(separator: "\n").first { $0.hasPrefix("| \(loop)") }, "\(table)")
            let cells = row.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            // The loop's time per save, and its ratio to the same round's libpq loop.
            #expect(Double(cells[1]).map { $0 > 0 } == true, "\(row)")
            #expect(cells[2].hasSuffix("×") && Double(cells[2].dropLast()).map { $0 > 0 } == true, "\(row)")
        }
        let left = try cluster.psql(
            uri: cluster.uri(database: "postgres"),
            command: "SELECT count(*) FROM pg_database WHERE datname LIKE 'stowage_bench_%'")
        #expect(left == "0")
    }
}
