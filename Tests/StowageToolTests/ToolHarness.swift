import Foundation
import Testing

/// Runs the built `stowage` executable and compares what it prints with golden files.
enum Tool {
    /// The repository: goldens and samples are found from this file, not from resources.
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let goldens = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Golden")

    /// The executable, built beside the test bundle.
    static var executable: URL {
        URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
            .appendingPathComponent("stowage")
    }

    struct Run: Equatable {
        var arguments: [String]
        var status: Int32
        var stdout: String
        var stderr: String

        /// The golden file's text.
        var transcript: String {
            "$ stowage \(arguments.joined(separator: " "))\nexit status: \(status)\n--- stdout\n\(stdout)--- stderr\n\(stderr)"
        }
    }

    /// Runs `stowage arguments` in `directory` (the repository by default), so that paths
    /// in the output are the relative ones given.
    static func run(_ arguments: [String], in directory: URL = repository) throws -> Run {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("stowage-tool-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let out = scratch.appendingPathComponent("out")
        let err = scratch.appendingPathComponent("err")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        _ = FileManager.default.createFile(atPath: err.path, contents: nil)
        let outHandle = try FileHandle(forWritingTo: out)
        let errHandle = try FileHandle(forWritingTo: err)
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.currentDirectoryURL = directory
        process.standardOutput = outHandle
        process.standardError = errHandle
        process.standardInput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        try outHandle.close()
        try errHandle.close()
        return Run(
            arguments: arguments, status: process.terminationStatus,
            stdout: String(decoding: try Data(contentsOf: out), as: UTF8.self),
            stderr: String(decoding: try Data(contentsOf: err), as: UTF8.self))
    }

    /// Runs and compares with `Golden/<name>.txt`. `STOWAGE_UPDATE_GOLDEN=1` rewrites it.
    @discardableResult
    static func golden(
        _ name: String, _ arguments: [String], in directory: URL = repository, status: Int32,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> Run {
        let run = try run(arguments, in: directory)
        #expect(run.status == status, "\(run.transcript)", sourceLocation: sourceLocation)
        let file = goldens.appendingPathComponent(name + ".txt")
        if ProcessInfo.processInfo.environment["STOWAGE_UPDATE_GOLDEN"] == "1" {
            try FileManager.default.createDirectory(at: goldens, withIntermediateDirectories: true)
            try Data(run.transcript.utf8).write(to: file)
        }
        let expected = (try? String(contentsOf: file, encoding: .utf8)) ?? "(no golden file \(file.path))"
        #expect(run.transcript == expected, "golden \(name) differs", sourceLocation: sourceLocation)
        return run
    }

    /// A fresh directory for files a test writes.
    static func scratchDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("stowage-tool-tests")
            .appendingPathComponent(UUID().uuidString)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    static func sample(_ name: String) -> URL {
        repository.appendingPathComponent("Formats/samples").appendingPathComponent(name)
    }

    /// Copies a sample into `directory` under `name`.
    static func copySample(_ sample: String, to directory: URL, as name: String) throws -> URL {
        let target = directory.appendingPathComponent(name)
        try? FileManager.default.removeItem(at: target)
        try FileManager.default.copyItem(at: Self.sample(sample), to: target)
        return target
    }
}
