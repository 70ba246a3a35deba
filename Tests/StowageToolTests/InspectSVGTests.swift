import Foundation
import Testing

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// `stowage inspect --svg FILE`: the log drawn as a picture, its regions those `--map` draws.
@Suite("inspect --svg")
struct InspectSVGTests {
    /// The regions of a picture: each `rect` of class `region`, in the order drawn.
    final class Regions: NSObject, XMLParserDelegate {
        var regions: [(kind: String, offset: Int64, length: Int64)] = []
        var sawSVG = false

        func parser(
            _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?,
            qualifiedName qName: String?, attributes attributeDict: [String: String] = [:]
        ) {
            if elementName == "svg" { sawSVG = true }
            guard elementName == "rect", attributeDict["class"] == "region" else { return }
            regions.append(
                (
                    attributeDict["data-kind"] ?? "?", Int64(attributeDict["data-offset"] ?? "") ?? -1,
                    Int64(attributeDict["data-length"] ?? "") ?? -1
                ))
        }
    }

    /// Runs `inspect --svg` on `file` and reads the picture back.
    static func picture(of file: URL, in directory: URL) throws -> (status: Int32, regions: Regions) {
        let svg = directory.appendingPathComponent("map.svg")
        let run = try Tool.run(["inspect", "--svg", svg.path, file.path])
        let data = try Data(contentsOf: svg)
        let parser = XMLParser(data: data)
        let regions = Regions()
        parser.delegate = regions
        #expect(parser.parse(), "the SVG is not well-formed: \(String(describing: parser.parserError))")
        #expect(regions.sawSVG)
        return (run.status, regions)
    }

    /// The regions cover the file once, in order, from offset 0 to its end.
    static func expectTiling(_ regions: Regions, fileSize: Int64, sourceLocation: SourceLocation = #_sourceLocation) {
        var next: Int64 = 0
        for region in regions.regions {
            #expect(region.offset == next, "a gap or overlap at \(next)", sourceLocation: sourceLocation)
            #expect(region.length > 0, sourceLocation: sourceLocation)
            next = region.offset + region.length
        }
        #expect(next == fileSize, sourceLocation: sourceLocation)
    }

    @Test("a log with checkpoints and a damaged tail shows every kind of region")
    func everyKind() throws {
        let directory = try Tool.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // The version 4 sample has a superseded checkpoint, dead commits and the last
        // checkpoint; bytes that are not a record after it make a damaged tail.
        let file = try Tool.copySample("trips-v4.stowlog", to: directory, as: "trips.stowlog")
        let handle = try FileHandle(forWritingTo: file)
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(repeating: 0xA5, count: 48))
        try handle.close()
        let size = Int64(try FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int ?? 0)

        let (status, picture) = try Self.picture(of: file, in: directory)
        #expect(status == 1, "inspect exits 1 for a damaged file, picture or not")
        let kinds = Set(picture.regions.map(\.kind))
        #expect(kinds == ["header", "live", "dead", "checkpoint", "damaged"])
        #expect(picture.regions.first?.kind == "header")
        #expect(picture.regions.last.map { $0.kind == "damaged" && $0.length == 48 } == true)
        #expect(picture.regions.filter { $0.kind == "checkpoint" }.count == 2)
        Self.expectTiling(picture, fileSize: size)
    }

    @Test("the torn sample: header, live commits, and the torn tail from offset 801")
    func tornSample() throws {
        let directory = try Tool.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = Tool.sample("trips-v1-torn.stowlog")
        let size = Int64(try FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int ?? 0)
        let (status, picture) = try Self.picture(of: file, in: directory)
        #expect(status == 1)
        #expect(Set(picture.regions.map(\.kind)).isSuperset(of: ["header", "live", "damaged"]))
        #expect(picture.regions.last.map { $0.kind == "damaged" && $0.offset == 801 } == true)
        Self.expectTiling(picture, fileSize: size)
    }

    @Test("a JSON store has no regions: nothing is written, and inspect says why")
    func jsonStore() throws {
        let directory = try Tool.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let svg = directory.appendingPathComponent("map.svg")
        let run = try Tool.run(["inspect", "--svg", svg.path, Tool.sample("json-v1.json").path])
        #expect(run.status == 1)
        #expect(run.stderr.contains("has no regions"))
        #expect(FileManager.default.fileExists(atPath: svg.path) == false)
    }
}
