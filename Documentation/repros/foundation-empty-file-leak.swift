// A Swift 6.3 toolchain bug, not Stowage's: Foundation's `FileManager.contents(atPath:)`
// and `Data(contentsOf:)` leak the 4 KiB buffer they read into when the file is empty
// (`readBytesFromFile` in FoundationEssentials). Built with AddressSanitizer and leak
// detection, this program reports "4096 byte(s) leaked in 1 allocation(s)" for "empty" and
// nothing for "full"; `FileHandle.readToEnd()` leaks nothing. Stowage's test support reads
// command output (often empty) with `FileHandle` for this reason, so that the fuzz targets,
// which check for leaks when they exit, do not fail on it.
//
//   swiftc -sanitize=address foundation-empty-file-leak.swift -o repro
//   ASAN_OPTIONS=detect_leaks=1 ./repro empty   # 4096 bytes leaked
//   ASAN_OPTIONS=detect_leaks=1 ./repro full    # nothing
import Foundation

let empty = NSTemporaryDirectory() + "/repro-empty.txt"
let full = NSTemporaryDirectory() + "/repro-full.txt"
FileManager.default.createFile(atPath: empty, contents: Data())
FileManager.default.createFile(atPath: full, contents: Data("hello".utf8))
let path = CommandLine.arguments.dropFirst().first == "full" ? full : empty
print(FileManager.default.contents(atPath: path)?.count ?? -1)
