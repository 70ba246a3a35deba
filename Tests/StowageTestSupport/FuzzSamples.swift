import Foundation
@_spi(Testing) import Stowage

/// What the decoder fuzz targets (`Fuzzing/`) read from the log format samples
/// (`Formats/samples/*.stowlog`): each file's stored schema, format version and records, so
/// that a target can decode a payload against a schema a real file has, and write its seed
/// corpus from the records real files hold.
package enum FuzzSamples {
    /// One sample log file, read whole.
    package struct LogSample {
        package let name: String
        package let version: LogFormatVersion
        package let storeIdentifier: String
        package let schema: StoredSchema
        /// The header record's payload: the stored schema, then what follows it.
        package let headerPayload: [UInt8]
        package let records: [LogRecordWalk.Record]

        /// The entity map a file of this schema in `version` decodes with.
        package func map(_ version: LogFormatVersion) -> LogEntityMap {
            LogEntityMap(storeIdentifier: storeIdentifier, description: schema, formatVersion: version)
        }
    }

    /// The directory the samples are read from: `STOWAGE_SAMPLES`, or `Formats/samples`
    /// under the current directory (`Scripts/fuzz` runs from the package's root).
    package static var directory: String {
        ProcessInfo.processInfo.environment["STOWAGE_SAMPLES"] ?? "Formats/samples"
    }

    /// Every `.stowlog` sample whose preamble reads, sorted by name so that an input's
    /// sample-choosing byte means the same file in every run.
    package static let logs: [LogSample] = {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.filter { $0.hasSuffix(".stowlog") }.sorted().compactMap { read(directory + "/" + $0) }
    }()

    /// The format versions the log reads.
    package static let versions: [LogFormatVersion] = Array(
        LogFormatVersion.readable.lowerBound.rawValue...LogFormatVersion.readable.upperBound.rawValue
    ).map { LogFormatVersion(rawValue: $0) }

    /// Reads a sample's preamble and every record the walk accepts.
    static func read(_ path: String) -> LogSample? {
        let fs = POSIXStoreFileSystem()
        guard let fd = try? fs.open(path, mode: .readOnly) else { return nil }
        defer { fs.close(fd) }
        guard let size = try? fs.size(fd), case .success(let preamble)? = try? LogPreamble.read(fs, fd, fileSize: size)
        else { return nil }
        var walk = LogRecordWalk(fs, fd, fileSize: size, preamble: preamble) { _, _ in }
        var records: [LogRecordWalk.Record] = []
        while let record = try? walk.next() { records.append(record) }
        let headerStart = Int64(LogFormat.fileHeaderSize)
        let header =
            (try? LogFormat.readRecord(fs, fd, at: headerStart, fileSize: size, salt: preamble.header.salt)).flatMap {
                outcome -> [UInt8]? in
                if case .record(_, let payload, _) = outcome { return payload }
                return nil
            } ?? []
        return LogSample(
            name: (path as NSString).lastPathComponent, version: preamble.header.version,
            storeIdentifier: preamble.storeIdentifier, schema: preamble.schema, headerPayload: header,
            records: records)
    }

    /// The input's first two bytes as a sample and a format version, and the rest; `nil`
    /// for an input shorter than two bytes or when no sample was found.
    package static func split(_ data: UnsafePointer<UInt8>?, _ count: Int) -> (
        sample: LogSample, version: LogFormatVersion, rest: [UInt8]
    )? {
        guard let data, count >= 2, !logs.isEmpty else { return nil }
        let bytes = UnsafeBufferPointer(start: data, count: count)
        return (logs[Int(bytes[0]) % logs.count], versions[Int(bytes[1]) % versions.count], Array(bytes[2...]))
    }

    /// The two bytes that make ``split(_:_:)`` choose `sample` and `version`.
    package static func prefix(sample: String, version: LogFormatVersion) -> [UInt8] {
        let s = logs.firstIndex { $0.name == sample } ?? 0
        let v = versions.firstIndex(of: version) ?? 0
        return [UInt8(s), UInt8(v)]
    }

    /// Writes `seeds` to `directory` (made if missing), each named by its bytes' hash as
    /// libFuzzer names its corpus files, and says how many.
    package static func writeSeeds(_ seeds: [[UInt8]], to directory: String) {
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var written = Set<String>()
        for seed in seeds {
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in seed { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
            let name = String(hash, radix: 16)
            guard written.insert(name).inserted else { continue }
            _ = FileManager.default.createFile(atPath: directory + "/seed-" + name, contents: Data(seed))
        }
        print("\(written.count) seeds in \(directory)")
    }

    /// The `--write-seeds <directory>` argument a target was run with, if any.
    package static var seedDirectory: String? {
        let arguments = CommandLine.arguments
        guard let i = arguments.firstIndex(of: "--write-seeds"), i + 1 < arguments.count else { return nil }
        return arguments[i + 1]
    }
}
