import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// What the fuzz targets (`Fuzzing/`, built by `Scripts/fuzz`) share: libFuzzer's driver,
/// found in the executable they are linked into, and the file each input is written to.
public enum FuzzDriver {
    /// An entry point: the input's bytes (`nil` when empty) and its length; returns 0.
    public typealias Entry = @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt

    /// Runs libFuzzer's driver (`LLVMFuzzerRunDriver`) with `entry` and the process's
    /// arguments, and returns its status; 2 with a message when the executable was not
    /// linked with libFuzzer.
    public static func run(_ entry: Entry) -> Int32 {
        typealias Driver =
            @convention(c) (
                UnsafeMutablePointer<Int32>, UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
                Entry
            ) -> Int32
        // The executable itself, where the driver is exported (see `Scripts/fuzz`).
        guard let program = dlopen(nil, RTLD_NOW), let symbol = dlsym(program, "LLVMFuzzerRunDriver") else {
            FileHandle.standardError.write(
                Data("this executable is not linked with libFuzzer; build it with Scripts/fuzz\n".utf8))
            return 2
        }
        let driver = unsafeBitCast(symbol, to: Driver.self)
        var argc = CommandLine.argc
        var argv = CommandLine.unsafeArgv
        return driver(&argc, &argv, entry)
    }

    /// The directory each input is written to, one per process: in memory (`/dev/shm`)
    /// where there is one, since every input is written and opened as a file.
    public static let directory: String = {
        let base = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm/" : NSTemporaryDirectory()
        let path = base + "stowage-fuzz-\(getpid())"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }()

    /// Empties ``directory`` and writes the input to `name` in it.
    public static func write(_ data: UnsafePointer<UInt8>?, _ count: Int, as name: String) -> URL {
        try? FileManager.default.removeItem(atPath: directory)
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let url = URL(fileURLWithPath: directory + "/" + name)
        let bytes = data.map { Data(bytes: $0, count: count) } ?? Data()
        _ = FileManager.default.createFile(atPath: url.path, contents: bytes)
        return url
    }
}
