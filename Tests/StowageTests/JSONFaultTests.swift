import Foundation
import StowageTestSupport
import Testing

@_spi(Testing) @testable import Stowage

@Suite("JSONStore under injected I/O faults")
struct JSONFaultTests {
    typealias T = JSONStoreTesting

    /// Fails the Nth write, fsync, rename or directory fsync over a run of saves, for every
    /// N. The failed save throws ioFailure and changes nothing: the file still holds the
    /// previous document byte for byte, no temporary file is left, the store keeps answering
    /// and accepts the next save, and reopening shows exactly the acknowledged saves.
    @Test(arguments: [FaultInjectingFileSystem.Operation.write, .sync, .rename, .syncDirectory])
    func everySingleFailureLeavesTheOldFile(operation: FaultInjectingFileSystem.Operation) throws {
        let saves = 5
        for n in 1...(saves + 1) {
            let url = JSONTest.freshURL()
            defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
            let fs = FaultInjectingFileSystem()
            let store = try JSONTest.open(url, schema: T.schema, fileSystem: fs)
            fs.arm(operation, failOn: n)
            var acknowledged: [String] = []
            var failures = 0
            for i in 0..<saves {
                let before = T.bytes(url)
                let name = "S\(i)" + String(repeating: ".", count: i * 30)
                do {
                    try JSONTest.save(store, inserted: [T.trip(name)])
                    acknowledged.append(name)
                } catch let error as DataStoreError {
                    failures += 1
                    #expect(error.code == .ioFailure, "n \(n): \(error)")
                    #expect(T.bytes(url) == before, "n \(n), save \(i): the old file did not survive")
                }
                #expect(try T.names(store) == acknowledged.sorted(), "n \(n), save \(i)")
                let files = try FileManager.default.contentsOfDirectory(atPath: url.deletingLastPathComponent().path)
                #expect(files.sorted() == ["store.json", "store.json.lock"], "n \(n): \(files)")
            }
            #expect(failures == (n <= saves ? 1 : 0), "n \(n)")
            #expect(fs.injected == (n <= saves ? [operation] : []))
            store.close()
            #expect(try T.names(try JSONTest.open(url, schema: T.schema)) == acknowledged.sorted(), "n \(n)")
        }
    }

    @Test(arguments: [FaultInjectingFileSystem.Operation.write, .sync, .rename])
    func aFailureWhileCreatingLeavesNoDocument(operation: FaultInjectingFileSystem.Operation) throws {
        let url = JSONTest.freshURL()
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        let fs = FaultInjectingFileSystem()
        fs.arm(operation, failOn: 1)
        #expect(throws: DataStoreError.ioFailure) { _ = try JSONTest.open(url, schema: T.schema, fileSystem: fs) }
        #expect(!FileManager.default.fileExists(atPath: url.path))
        let store = try JSONTest.open(url, schema: T.schema)
        try JSONTest.save(store, inserted: [T.trip("after")])
        #expect(try T.names(store) == ["after"])
    }

    @Test func aFailedEraseKeepsTheRecords() throws {
        let url = JSONTest.freshURL()
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        let fs = FaultInjectingFileSystem()
        let store = try JSONTest.open(url, schema: T.schema, fileSystem: fs)
        try JSONTest.save(store, inserted: [T.trip("kept")])
        let before = T.bytes(url)
        fs.arm(.rename, failOn: 1)
        #expect(throws: DataStoreError.ioFailure) { try store.erase() }
        #expect(try T.names(store) == ["kept"] && T.bytes(url) == before)
        try store.erase()
        #expect(try T.names(store).isEmpty)
    }
}
