import Foundation
import Testing

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// Proves that `stowage-bench` works end to end (CI times nothing): a tiny run of every store
/// and its SQLite peer, the four files `--out` writes, and `--report`, which draws them again.
@Suite("stowage-bench", .serialized)
struct StowageBenchTests {
    /// The benchmark executable, built beside the test bundle.
    static var bench: URL {
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        return executable.deletingLastPathComponent().appendingPathComponent("stowage-bench")
    }

    static let stores = ["memory", "json", "log-full", "log-relaxed"]
    static let phases = [
        "insert", "point", "equality", "range", "count", "enumerate", "update", "singles", "observe", "refetch",
        "delete", "reopen", "open",
    ]

    struct Outcome {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// Runs the benchmark with `arguments`, its output going to files (no pipe to fill up).
    static func run(_ arguments: [String], in directory: URL) throws -> Outcome {
        let stdoutURL = directory.appendingPathComponent("stdout.txt")
        let stderrURL = directory.appendingPathComponent("stderr.txt")
        _ = FileManager.default.createFile(atPath: stdoutURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: stderrURL.path, contents: nil)
        let stdout = try FileHandle(forWritingTo: stdoutURL)
        let stderr = try FileHandle(forWritingTo: stderrURL)
        let process = Process()
        process.executableURL = bench
        process.arguments = arguments
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        process.waitUntilExit()
        try stdout.close()
        try stderr.close()
        return Outcome(
            status: process.terminationStatus,
            stdout: (try? String(contentsOf: stdoutURL, encoding: .utf8)) ?? "",
            stderr: (try? String(contentsOf: stderrURL, encoding: .utf8)) ?? "")
    }

    static func temporaryDirectory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "stowage-bench-test-\(getpid())-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    /// The marks of a chart: `n/phase/store` for every `rect` of class `bar` (the ratios), and
    /// `n/phase/store/side` for every `circle` of class `point` (the scaling chart).
    final class MarkCollector: NSObject, XMLParserDelegate {
        var bars: [String] = []
        var points: [String] = []
        var sawSVG = false

        func parser(
            _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?,
            qualifiedName qName: String?, attributes attributeDict: [String: String] = [:]
        ) {
            if elementName == "svg" { sawSVG = true }
            let key = [
                attributeDict["data-n"] ?? "?", attributeDict["data-phase"] ?? "?", attributeDict["data-store"] ?? "?",
            ]
            if elementName == "rect", attributeDict["class"] == "bar" {
                bars.append(key.joined(separator: "/"))
            } else if elementName == "circle", attributeDict["class"] == "point" {
                points.append((key + [attributeDict["data-side"] ?? "?"]).joined(separator: "/"))
            }
        }
    }

    /// Reads a chart's marks; expects well-formed SVG.
    static func marks(_ file: URL, sourceLocation: SourceLocation = #_sourceLocation) throws -> MarkCollector {
        let parser = XMLParser(data: try Data(contentsOf: file))
        let collector = MarkCollector()
        parser.delegate = collector
        #expect(
            parser.parse(), "\(file.lastPathComponent) is not well-formed: \(String(describing: parser.parserError))",
            sourceLocation: sourceLocation)
        #expect(collector.sawSVG, sourceLocation: sourceLocation)
        return collector
    }

    @Test("a tiny run of every store writes results.md, results.json, chart.svg and scaling.svg")
    func tinyRun() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let out = directory.appendingPathComponent("out")
        let started = Date()
        let outcome = try Self.run(
            [
                "--quick", "--n", "300", "--runs", "1", "--point-fetches", "200", "--range-fetches", "50",
                "--single-saves", "20", "--out", out.path,
            ], in: directory)
        let seconds = Date().timeIntervalSince(started)
        #expect(outcome.status == 0, "stowage-bench failed: \(outcome.stderr)")
        #expect(seconds < 60, "the tiny run took \(seconds) s")
        // Progress, phase by phase, on stderr.
        #expect(outcome.stderr.contains("warm-up"))
        #expect(
            outcome.stderr.contains(
                " insert point equality range count enumerate update singles observe refetch delete"))

        // results.json: every phase for every store and its peer, with the machine and revision.
        let json = try Data(contentsOf: out.appendingPathComponent("results.json"))
        let report = try #require(try JSONSerialization.jsonObject(with: json) as? [String: Any])
        #expect(report["ns"] as? [Int] == [300])
        #expect((report["gitRevision"] as? String)?.isEmpty == false)
        #expect((report["toolchain"] as? String)?.isEmpty == false)
        let machine = try #require(report["machine"] as? [String: Any])
        #expect((machine["cores"] as? Int ?? 0) > 0)
        #expect((machine["cpu"] as? String)?.isEmpty == false)
        let comparisons = try #require(report["comparisons"] as? [[String: Any]])
        #expect(comparisons.compactMap { $0["store"] as? String }.sorted() == Self.stores.sorted())
        var expectedBars: [String] = []
        var expectedPoints: [String] = []
        var titles: [String] = []
        for comparison in comparisons {
            let store = try #require(comparison["store"] as? String)
            let phases = try #require(comparison["phases"] as? [[String: Any]])
            let keys = phases.compactMap { $0["key"] as? String }
            let expected = store == "memory" ? Self.phases.filter { $0 != "reopen" && $0 != "open" } : Self.phases
            #expect(keys == expected, "\(store) has phases \(keys)")
            for phase in phases {
                let stowage = phase["stowageSeconds"] as? Double ?? 0
                let sqlite = phase["sqliteSeconds"] as? Double ?? 0
                #expect(stowage > 0 && sqlite > 0, "\(store) \(phase["key"] ?? "?"): \(stowage) / \(sqlite)")
                #expect((phase["ratio"] as? Double).map { $0.isFinite && $0 > 0 } == true)
                #expect((phase["stowageOpsPerSecond"] as? Double ?? 0) > 0)
                if let title = phase["title"] as? String { titles.append(title) }
                expectedBars.append("300/\(phase["key"] as? String ?? "?")/\(store)")
                for side in ["stowage", "sqlite"] {
                    expectedPoints.append("300/\(phase["key"] as? String ?? "?")/\(store)/\(side)")
                }
            }
            let peak = try #require(comparison["peakRSSBytes"] as? [String: Any])
            #expect((peak["stowage"] as? Int ?? 0) > 0 && (peak["sqlite"] as? Int ?? 0) > 0)
            if store != "memory" {
                let bytes = try #require(comparison["bytesOnDisk"] as? [String: Any])
                #expect((bytes["stowage"] as? Int ?? 0) > 0 && (bytes["sqlite"] as? Int ?? 0) > 0)
            }
        }

        // results.md: a table row per phase and store.
        let markdown = try String(contentsOf: out.appendingPathComponent("results.md"), encoding: .utf8)
        let rows = markdown.split(separator: "\n").filter { $0.hasPrefix("| ") }.map(String.init)
        for title in Set(titles) {
            let wanted = titles.filter { $0 == title }.count
            let found = rows.filter { $0.hasPrefix("| \(title) |") }.count
            #expect(found >= wanted, "results.md has \(found) rows for '\(title)', wanted \(wanted)")
        }

        // chart.svg: one ratio bar per (phase, store); scaling.svg: a point per (phase, store,
        // side) at the one N.
        let chart = try Self.marks(out.appendingPathComponent("chart.svg"))
        #expect(chart.bars.sorted() == expectedBars.sorted())
        let scaling = try Self.marks(out.appendingPathComponent("scaling.svg"))
        #expect(scaling.points.sorted() == expectedPoints.sorted())

        // --report draws the same report again from results.json alone.
        let again = directory.appendingPathComponent("again")
        let redraw = try Self.run(
            ["--report", out.appendingPathComponent("results.json").path, "--out", again.path], in: directory)
        #expect(redraw.status == 0, "stowage-bench --report failed: \(redraw.stderr)")
        for file in ["results.md", "chart.svg", "scaling.svg"] {
            let first = try String(contentsOf: out.appendingPathComponent(file), encoding: .utf8)
            let second = try String(contentsOf: again.appendingPathComponent(file), encoding: .utf8)
            #expect(first == second, "--report drew another \(file)")
        }
    }

    @Test("--report draws the committed run's charts again, from a results.json written before later fields")
    func reportOfCommittedRun() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let results = repository.appendingPathComponent("Benchmarks/results/results.json")
        let outcome = try Self.run(["--report", results.path, "--out", directory.path], in: directory)
        #expect(outcome.status == 0, "stowage-bench --report failed: \(outcome.stderr)")
        let report = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: results)) as? [String: Any])
        let comparisons = try #require(report["comparisons"] as? [[String: Any]])
        let phases = comparisons.reduce(0) { $0 + (($1["phases"] as? [Any])?.count ?? 0) }
        let chart = try Self.marks(directory.appendingPathComponent("chart.svg"))
        #expect(chart.bars.count == phases)
        let scaling = try Self.marks(directory.appendingPathComponent("scaling.svg"))
        #expect(scaling.points.count == 2 * phases)
    }

    @Test("a bad option is a usage error with status 2")
    func badOption() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        for arguments in [["--bogus"], ["--n", "ten"], ["--stores", "sqlite"], ["--runs"], ["--runs", "0"]] {
            let outcome = try Self.run(arguments, in: directory)
            #expect(outcome.status == 2, "\(arguments) exited \(outcome.status)")
            #expect(outcome.stderr.contains("usage:"), "\(arguments): \(outcome.stderr)")
        }
    }
}
