// swift-tools-version: 6.0
import CompilerPluginSupport
import Foundation
import PackageDescription

/// The macro plug-in links the swift-syntax that ships inside the toolchain
/// (`<toolchain>/usr/lib/swift/host`), because no package can be fetched here.
/// `STOWAGE_SWIFT_SYNTAX` overrides the directory; otherwise it is found from the
/// `swift` on `PATH`.
func toolchainSwiftSyntaxDirectory() -> String {
    let environment = ProcessInfo.processInfo.environment
    if let override = environment["STOWAGE_SWIFT_SYNTAX"], !override.isEmpty {
        return override
    }
    let searchPath = (environment["PATH"] ?? "").split(separator: ":").map(String.init)
    for directory in searchPath {
        let candidate = URL(fileURLWithPath: directory).appendingPathComponent("swift").path
        guard FileManager.default.isExecutableFile(atPath: candidate) else { continue }
        let resolved = URL(fileURLWithPath: candidate).resolvingSymlinksInPath()
        // <toolchain>/usr/bin/swift -> <toolchain>/usr/lib/swift/host
        let usr = resolved.deletingLastPathComponent().deletingLastPathComponent()
        let host = usr.appendingPathComponent("lib/swift/host").path
        if FileManager.default.fileExists(atPath: host) {
            return host
        }
    }
    return "/opt/swift/usr/lib/swift/host"
}

let swiftSyntax = toolchainSwiftSyntaxDirectory()
let swiftSyntaxLibraries = [
    "SwiftSyntax", "SwiftSyntaxMacros", "SwiftSyntaxBuilder", "SwiftDiagnostics",
    "SwiftParser", "SwiftBasicFormat", "SwiftOperators", "SwiftParserDiagnostics",
    "SwiftCompilerPluginMessageHandling", "SwiftSyntaxMacroExpansion", "SwiftIfConfig",
]
let swiftSyntaxSwiftSettings: [SwiftSetting] = [.unsafeFlags(["-I", swiftSyntax])]
let swiftSyntaxLinkerSettings: [LinkerSetting] =
    [.unsafeFlags(["-L", swiftSyntax, "-Xlinker", "-rpath", "-Xlinker", swiftSyntax])]
    + swiftSyntaxLibraries.map { .linkedLibrary($0) }

let package = Package(
    name: "Stowage",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "Stowage", targets: ["Stowage"]),
        .library(name: "BTree", targets: ["BTree"]),
        .library(name: "StowagePostgres", targets: ["StowagePostgres"]),
        .executable(name: "packing-list", targets: ["PackingList"]),
        .executable(name: "btree-bench", targets: ["BTreeBench"]),
        .executable(name: "stowage-bench", targets: ["StowageBench"]),
        .executable(name: "stowage", targets: ["StowageTool"]),
        .executable(name: "migration-bench", targets: ["MigrationBench"]),
    ],
    targets: [
        .macro(
            name: "StowageMacros",
            swiftSettings: swiftSyntaxSwiftSettings,
            linkerSettings: swiftSyntaxLinkerSettings
        ),
        .target(name: "BTree"),
        .target(name: "IndexKey"),
        .target(name: "CCRC32C"),
        .systemLibrary(
            name: "CLZ4",
            path: "Sources/CLZ4",
            pkgConfig: "liblz4",
            providers: [.apt(["liblz4-dev"])]
        ),
        .target(
            name: "Stowage",
            dependencies: ["StowageMacros", "BTree", "IndexKey", "CLZ4", "CCRC32C"]
        ),
        .systemLibrary(
            name: "CLibPQ",
            path: "Sources/CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        .target(
            // PostgreSQL through libpq: a product of its own, so that an app that does not
            // use it neither links libpq nor needs it installed.
            name: "StowagePostgres",
            dependencies: ["Stowage", "CLibPQ"]
        ),
        .target(
            name: "StowageInspection",
            dependencies: ["Stowage"]
        ),
        .target(
            name: "StowageTestSupport",
            dependencies: ["Stowage"],
            path: "Tests/StowageTestSupport"
        ),
        .executableTarget(
            name: "LogCrashChild",
            dependencies: ["Stowage", "StowageTestSupport"],
            path: "Tests/LogCrashChild"
        ),
        .executableTarget(
            // The PostgreSQL tests' worker process (several at once against one database).
            name: "PostgresChild",
            dependencies: ["Stowage", "StowagePostgres", "StowageTestSupport"],
            path: "Tests/PostgresChild"
        ),
        .executableTarget(
            name: "PackingList",
            dependencies: ["Stowage", "StowagePostgres"],
            path: "Examples/PackingList"
        ),
        .systemLibrary(
            name: "CSQLite",
            path: "Sources/CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        .executableTarget(
            name: "StowageBench",
            dependencies: ["Stowage", "StowagePostgres", "CSQLite"],
            path: "Benchmarks/StowageBench"
        ),
        .executableTarget(
            name: "MigrationBench",
            dependencies: ["Stowage", "CSQLite"],
            path: "Benchmarks/MigrationBench"
        ),
        .executableTarget(
            name: "BTreeBench",
            dependencies: ["BTree", "IndexKey"],
            path: "Benchmarks/BTreeBench"
        ),
        .executableTarget(
            name: "StowageTool",
            dependencies: ["Stowage", "StowageInspection"],
            path: "Sources/stowage"
        ),
        .testTarget(name: "BTreeTests", dependencies: ["BTree"]),
        .testTarget(
            name: "StowagePostgresTests",
            dependencies: ["Stowage", "StowagePostgres", "StowageTestSupport"]
        ),
        .testTarget(name: "IndexKeyTests", dependencies: ["IndexKey"]),
        .testTarget(name: "BenchmarkTests", dependencies: [], path: "Tests/BenchmarkTests"),
        .testTarget(
            name: "StowageTests",
            dependencies: ["Stowage", "StowageTestSupport"]
        ),
        .testTarget(
            // The seeds' migration plans as their documents write them (`static var`
            // version identifiers), which compiles in the Swift 5 language mode only.
            name: "MigrationSeedTests",
            dependencies: ["Stowage", "StowageTestSupport"],
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        .testTarget(
            name: "StowageToolTests",
            dependencies: ["Stowage", "StowageInspection", "StowageTestSupport"],
            // The expected transcripts, which the tests read from the source tree by path.
            exclude: ["Golden"]
        ),
        .testTarget(
            name: "StowageMacrosTests",
            dependencies: ["StowageMacros"],
            swiftSettings: swiftSyntaxSwiftSettings,
            linkerSettings: swiftSyntaxLinkerSettings
        ),
    ],
    swiftLanguageModes: [.v6]
)

// The fuzz targets (`Fuzzing/`), only when STOWAGE_FUZZ is set: built by `Scripts/fuzz`
// with AddressSanitizer and coverage, and linked with libFuzzer's driver alone (its `main`
// would clash with the targets' own; linked into every executable, the macro plugin among
// them, it broke the plugin's answers).
// STOWAGE_FUZZ names the toolchain's `libclang_rt.fuzzer_no_main` archive.
// Each target is `Fuzzing/<name>`, its product `Fuzz<name>`; `Scripts/fuzz` lists the same.
let fuzzTargets = [
    "ToolRead", "LogOpen", "Checkpoint", "Commit", "Snapshot", "StoredSchema", "IndexKeys", "JSONParse", "JSONOpen",
    "Queries", "QueriesPostgres",
]
let fuzzDependencies: [Target.Dependency] = ["Stowage", "StowageInspection", "StowageTestSupport", "IndexKey"]
if let fuzzer = ProcessInfo.processInfo.environment["STOWAGE_FUZZ"] {
    for path in fuzzTargets {
        package.targets.append(
            .executableTarget(
                name: "Fuzz" + path,
                dependencies: fuzzDependencies + (path == "QueriesPostgres" ? ["StowagePostgres"] : []),
                path: "Fuzzing/" + path,
                linkerSettings: [
                    .unsafeFlags([
                        "-Xlinker", fuzzer, "-Xlinker", "--undefined=LLVMFuzzerRunDriver",
                        "-Xlinker", "--export-dynamic-symbol=LLVMFuzzerRunDriver", "-lstdc++",
                    ])
                ]
            ))
    }
}
