import Foundation
import Stowage
import Synchronization

/// A throwaway PostgreSQL cluster for the tests: a fresh data directory under `/tmp`, a server that listens only
/// on a Unix socket in that directory, and trust authentication for one superuser, so no password is needed.
///
/// `shared()` starts one cluster per test process on first use. The cluster is stopped and its directory removed
/// when the process exits normally (an `atexit` handler); a small watchdog shell process does the same if the test
/// process dies without exiting normally (a crash, a signal), so a failed run leaves no server behind.
///
/// `initdb` refuses to run as root, so when the tests run as root the server programs (`initdb`, `pg_ctl`) run as
/// the `postgres` user through `runuser` (or `setpriv`), and the cluster's directory belongs to that user. Clients
/// (`createdb`, `psql`, the tests' own connections) run as the current user: root may enter the directory.
package final class PostgresTestCluster: Sendable {
    /// The superuser that `initdb` creates; with trust authentication it connects without a password.
    package static let superuser = "stowage"

    /// The directory of the PostgreSQL programs (`initdb`, `pg_ctl`, `createdb`, `psql`, ...).
    package let binDirectory: URL
    /// The cluster's temporary directory: the data directory `data`, the server log `log` and the server's socket.
    package let directory: URL
    /// The port. The server does not listen on TCP; the port only names the socket file, `.s.PGSQL.<port>`.
    package let port: Int

    /// The directory of the server's Unix socket, which a connection names as its `host`.
    package var socketDirectory: URL { directory }
    /// The data directory.
    package var dataDirectory: URL { directory.appendingPathComponent("data") }
    /// The server's log.
    package var logFile: URL { directory.appendingPathComponent("log") }

    private let installation: Installation
    private let stopped = PosixMutex(false)
    private let databaseCount = Atomic<Int>(0)

    private init(installation: Installation, directory: URL, port: Int) {
        self.installation = installation
        self.binDirectory = installation.binDirectory
        self.directory = directory
        self.port = port
    }

    // MARK: The shared cluster

    /// The shared cluster for this test process, started on first use. Nil, with `unavailableReason` set, when
    /// PostgreSQL is not installed (or, as root, when there is no `postgres` user to run it as). Throws when the
    /// cluster fails to start; later calls throw the same error rather than try again.
    package static func shared() throws -> PostgresTestCluster? {
        let installation: Installation
        switch located {
        case .success(let found): installation = found
        case .failure: return nil
        }
        return try sharedState.withLock { state throws -> PostgresTestCluster? in
            if let failure = state.failure { throw failure }
            if let cluster = state.cluster, !cluster.isStopped { return cluster }
            if !state.exitHandlerRegistered {
                atexit { PostgresTestCluster.stopSharedClusterAtExit() }
                state.exitHandlerRegistered = true
            }
            do {
                let cluster = try start(installation)
                state.cluster = cluster
                return cluster
            } catch {
                let failure = (error as? PostgresTestClusterError) ?? PostgresTestClusterError("\(error)")
                state.failure = failure
                throw failure
            }
        }
    }

    /// Why `shared()` returns nil (PostgreSQL's programs are missing, or the tests run as root with no way to run
    /// them as another user); nil when PostgreSQL is available.
    package static var unavailableReason: String? {
        switch located {
        case .success: nil
        case .failure(let reason): reason.description
        }
    }

    private struct SharedState {
        var cluster: PostgresTestCluster?
        var failure: PostgresTestClusterError?
        var exitHandlerRegistered = false
    }

    private static let sharedState = PosixMutex(SharedState())

    /// Stops the shared cluster. Called at exit, so it does not wait for the lock: if another thread holds it, the
    /// watchdog stops the server once this process has gone.
    private static func stopSharedClusterAtExit() {
        let cluster = sharedState.withLockIfAvailable { $0.cluster } ?? nil
        cluster?.stop()
    }

    // MARK: Databases

    /// Creates a new, empty database with a name unique in this process (`t_<pid>_<n>`) and returns a libpq
    /// connection string for it: the superuser over the cluster's Unix socket, without a password.
    package func freshDatabase() throws -> String {
        let number = databaseCount.wrappingAdd(1, ordering: .relaxed).newValue
        let name = "t_\(getpid())_\(number)"
        try Self.run([tool("createdb"), "-h", socketDirectory.path, "-p", String(port), "-U", Self.superuser, name])
        return uri(database: name)
    }

    /// A libpq connection string (`key=value` form) for the database named `database`, which is not created.
    package func uri(database: String) -> String {
        [
            ("host", socketDirectory.path), ("port", String(port)), ("user", Self.superuser), ("dbname", database),
        ]
        .map { "\($0)=\(Self.connectionValue($1))" }.joined(separator: " ")
    }

    /// Runs `command` (SQL, or a psql meta-command) with `psql` in the database that `uri` names and returns what
    /// it printed, unaligned and without headers (`1|a` for a row of two columns), with the last newline dropped.
    /// Throws, with psql's messages, when a statement fails.
    @discardableResult
    package func psql(uri: String, command: String) throws -> String {
        let output = try Self.run([
            tool("psql"), "--no-psqlrc", "--quiet", "--no-align", "--tuples-only", "--set", "ON_ERROR_STOP=1",
            "--command", command, uri,
        ])
        return output.hasSuffix("\n") ? String(output.dropLast()) : output
    }

    // MARK: Stopping

    /// Whether `stop()` has been called.
    package var isStopped: Bool { stopped.withLock { $0 } }

    /// Stops the server at once (`pg_ctl stop -m immediate`) and removes the cluster's directory. Calls after the
    /// first do nothing; `shared()` starts a new cluster once the shared one has been stopped.
    package func stop() {
        let first = stopped.withLock { stopped in
            defer { stopped = true }
            return !stopped
        }
        guard first else { return }
        _ = try? Self.execute(
            serverCommand("pg_ctl", ["-D", dataDirectory.path, "-m", "immediate", "stop"]), in: directory)
        try? FileManager.default.removeItem(at: directory)
    }

    // MARK: Starting

    private static func start(_ installation: Installation) throws -> PostgresTestCluster {
        let directory = try makeDirectory(owner: installation.serverOwner)
        // Any port will do: the server does not listen on TCP, and its socket and the socket's lock file are in a
        // directory of its own.
        let cluster = PostgresTestCluster(
            installation: installation, directory: directory, port: Int.random(in: 20_000..<60_000))
        do {
            try cluster.startWatchdog()
            try cluster.initialize()
            try cluster.startServer()
            return cluster
        } catch {
            cluster.stop()
            throw error
        }
    }

    /// Makes a fresh directory `/tmp/stowage-pg-<pid>-XXXXXX` with mode 0700 and gives it to `owner`, if any.
    /// `/tmp` rather than `TMPDIR` because a socket's path must stay short (about 100 bytes).
    private static func makeDirectory(owner: (uid: uid_t, gid: gid_t)?) throws -> URL {
        var template = Array("/tmp/stowage-pg-\(getpid())-XXXXXX".utf8CString)
        let path = template.withUnsafeMutableBufferPointer { buffer -> String? in
            guard let made = mkdtemp(buffer.baseAddress!) else { return nil }
            return String(cString: made)
        }
        guard let path else {
            throw PostgresTestClusterError(
                "Could not make a temporary directory in /tmp: \(String(cString: strerror(errno)))")
        }
        if let owner, chown(path, owner.uid, owner.gid) != 0 {
            let reason = String(cString: strerror(errno))
            try? FileManager.default.removeItem(atPath: path)
            throw PostgresTestClusterError("Could not give \(path) to the postgres user: \(reason)")
        }
        return URL(fileURLWithPath: path, isDirectory: true)
    }

    /// Starts a shell in a session of its own (so that an interrupt from the terminal, which ends this process,
    /// does not end it too) that waits for this process to end and then stops the server and removes the
    /// directory. It runs as the server's user, which may not signal this process, so it also looks in `/proc` to
    /// tell whether this process is alive.
    private func startWatchdog() throws {
        let script = """
            (
                while kill -0 "$1" 2>/dev/null || [ -d "/proc/$1" ]; do sleep 1; done
                "$2" -D "$3" -m immediate stop
                rm -rf "$4"
            ) </dev/null >/dev/null 2>&1 &
            """
        try Self.run(
            serverCommand(
                "/bin/sh",
                [
                    "-c", script, "stowage-pg-watchdog", String(getpid()), tool("pg_ctl"), dataDirectory.path,
                    directory.path,
                ]),
            in: URL(fileURLWithPath: "/"), newSession: true)
    }

    private func initialize() throws {
        try Self.run(
            serverCommand(
                tool("initdb"),
                [
                    "-D", dataDirectory.path, "-A", "trust", "-U", Self.superuser, "-E", "UTF8", "--locale=C",
                    "--no-sync", "--no-instructions",
                ]),
            in: directory)
    }

    private func startServer() throws {
        // pg_ctl passes these options to the server through `/bin/sh`, so the socket directory is quoted.
        let options = [
            "-k", Self.shellQuoted(socketDirectory.path), "-p", String(port), "-c", "listen_addresses=''",
            "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
            "-c", "max_connections=200",
        ]
        do {
            try Self.run(
                serverCommand(
                    tool("pg_ctl"),
                    [
                        "-D", dataDirectory.path, "-w", "-t", "30", "-o", options.joined(separator: " "),
                        "-l", logFile.path, "start",
                    ]),
                in: directory)
        } catch {
            throw PostgresTestClusterError("\(error)\nThe server log ends:\n\(logTail())")
        }
    }

    /// The last lines of the server log, or why it could not be read.
    private func logTail(lines: Int = 40) -> String {
        guard let data = FileManager.default.contents(atPath: logFile.path) else {
            return "(no server log at \(logFile.path))"
        }
        return String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
            .suffix(lines).joined(separator: "\n")
    }

    // MARK: Commands

    /// The path of the PostgreSQL program `name`.
    private func tool(_ name: String) -> String {
        binDirectory.appendingPathComponent(name).path
    }

    /// `arguments` for `program` (a name in the bin directory, or a path), run as the server's user.
    private func serverCommand(_ program: String, _ arguments: [String]) -> [String] {
        installation.asServerUser + [program.hasPrefix("/") ? program : tool(program)] + arguments
    }

    /// Runs `command` (a path and its arguments) and returns its output (standard output and standard error
    /// together). Throws, with the output, unless the command exits with status 0.
    @discardableResult
    private static func run(_ command: [String], in directory: URL? = nil, newSession: Bool = false) throws -> String {
        let (status, output) = try execute(command, in: directory, newSession: newSession)
        guard status == 0 else {
            throw PostgresTestClusterError(
                "`\(command.map(shellQuoted).joined(separator: " "))` failed (\(status)):\n\(output)")
        }
        return output
    }

    /// Runs `command` in `directory`, waits for it and returns how it ended (its exit status, or 128 plus the
    /// signal that ended it) and its output. The output goes to a file rather than a pipe, so that a process the
    /// command leaves running cannot keep the read from ending. `newSession` puts the command in a session of its
    /// own, away from this process's terminal and its signals (on Linux).
    private static func execute(
        _ command: [String], in directory: URL?, newSession: Bool = false
    ) throws -> (status: Int32, output: String) {
        let outputURL = FileManager.default.temporaryDirectory
            .appendingPathComponent("stowage-pg-output-\(UUID().uuidString)")
        guard FileManager.default.createFile(atPath: outputURL.path, contents: nil) else {
            throw PostgresTestClusterError("Could not create \(outputURL.path)")
        }
        defer { try? FileManager.default.removeItem(at: outputURL) }
        let output = try FileHandle(forWritingTo: outputURL)
        defer { try? output.close() }
        // Settings such as PGHOST or PGDATABASE in the test's environment must not redirect these commands.
        let environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("PG") }
        #if os(Linux)
            let status = try spawnAndWait(
                command, in: directory, newSession: newSession, output: output.fileDescriptor,
                environment: environment)
        #else
            let status = try runProcess(command, in: directory, output: output, environment: environment)
        #endif
        // Not `FileManager.contents(atPath:)`: it leaks 4 KiB reading an empty file (the
        // toolchain's Foundation; `Documentation/repros/foundation-empty-file-leak.swift`).
        let reader = try FileHandle(forReadingFrom: outputURL)
        defer { try? reader.close() }
        let text = String(decoding: try reader.readToEnd() ?? Data(), as: UTF8.self)
        return (status, text)
    }

    #if os(Linux)
        /// Spawns `command` with `posix_spawn` and waits for it with `waitpid`.
        ///
        /// Foundation's `Process` will not do on Linux: it learns that a command has ended when a socket it leaves
        /// open in the command is closed, so `waitUntilExit()` never returns for a command that leaves a process
        /// running with the socket (`pg_ctl start`, the watchdog). Here the command gets no descriptors but its
        /// input (`/dev/null`) and `output`, so the server and the watchdog hold nothing of this process's, such as
        /// a pipe that the test runner reads to its end.
        private static func spawnAndWait(
            _ command: [String], in directory: URL?, newSession: Bool, output: Int32, environment: [String: String]
        ) throws -> Int32 {
            var actions = posix_spawn_file_actions_t()
            posix_spawn_file_actions_init(&actions)
            defer { posix_spawn_file_actions_destroy(&actions) }
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
            posix_spawn_file_actions_adddup2(&actions, output, 1)
            posix_spawn_file_actions_adddup2(&actions, output, 2)
            // Swift's Glibc module is imported without _GNU_SOURCE, which hides these two; they are looked up by
            // name (glibc 2.29 and 2.34). Without the first the command runs in this process's directory; without
            // the second it keeps this process's descriptors that are not close-on-exec.
            if let directory, let addChdir: AddChdir = glibcFunction("posix_spawn_file_actions_addchdir_np") {
                _ = directory.path.withCString { addChdir(&actions, $0) }
            }
            if let addCloseFrom: AddCloseFrom = glibcFunction("posix_spawn_file_actions_addclosefrom_np") {
                _ = addCloseFrom(&actions, 3)
            }
            var attributes = posix_spawnattr_t()
            posix_spawnattr_init(&attributes)
            defer { posix_spawnattr_destroy(&attributes) }
            if newSession {
                posix_spawnattr_setflags(&attributes, 0x80)  // glibc's POSIX_SPAWN_SETSID, hidden like the above
            }

            let argv = command.map { strdup($0) } + [nil]
            let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
            defer {
                for string in argv + envp { free(string) }
            }
            var pid = pid_t()
            let spawned = posix_spawn(&pid, command[0], &actions, &attributes, argv, envp)
            guard spawned == 0 else {
                throw PostgresTestClusterError("Could not run \(command[0]): \(String(cString: strerror(spawned)))")
            }
            var waitStatus: Int32 = 0
            while waitpid(pid, &waitStatus, 0) == -1 {
                guard errno == EINTR else {
                    throw PostgresTestClusterError(
                        "Could not wait for \(command[0]): \(String(cString: strerror(errno)))")
                }
            }
            // The low 7 bits hold the signal that ended the command, if one did; the next 8 its exit status.
            let signal = waitStatus & 0x7f
            return signal == 0 ? (waitStatus >> 8) & 0xff : 128 + signal
        }

        private typealias AddChdir =
            @convention(c) (
                UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>
            ) -> Int32
        private typealias AddCloseFrom =
            @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32

        /// The C function `name` from the C library (or anything else loaded), as `Function`; nil when absent.
        private static func glibcFunction<Function>(_ name: String) -> Function? {
            guard let symbol = dlsym(dlopen(nil, RTLD_NOW), name) else { return nil }
            return unsafeBitCast(symbol, to: Function.self)
        }
    #else
        /// Runs `command` with Foundation's `Process`, which on Darwin watches for the command's end directly.
        private static func runProcess(
            _ command: [String], in directory: URL?, output: FileHandle, environment: [String: String]
        ) throws -> Int32 {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: command[0])
            process.arguments = Array(command.dropFirst())
            process.currentDirectoryURL = directory
            process.environment = environment
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = output
            process.standardError = output
            do {
                try process.run()
            } catch {
                throw PostgresTestClusterError("Could not run \(command[0]): \(error)")
            }
            process.waitUntilExit()
            return process.terminationReason == .uncaughtSignal
                ? 128 + process.terminationStatus : process.terminationStatus
        }
    #endif

    /// `text` quoted for `/bin/sh` when it holds anything but letters, digits and `/._-=:,+@%`.
    private static func shellQuoted(_ text: String) -> String {
        let plain =
            !text.isEmpty
            && text.unicodeScalars.allSatisfy {
                CharacterSet.alphanumerics.contains($0) || "/._-=:,+@%".unicodeScalars.contains($0)
            }
        return plain ? text : "'" + text.replacingOccurrences(of: "'", with: #"'\''"#) + "'"
    }

    /// `value` as a libpq connection-string value: quoted, with `\` and `'` escaped, when it is empty or holds a
    /// space, a quote or a backslash.
    private static func connectionValue(_ value: String) -> String {
        guard value.isEmpty || value.contains(where: { $0.isWhitespace || $0 == "'" || $0 == "\\" }) else {
            return value
        }
        return "'" + value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'")
            + "'"
    }

    // MARK: Finding PostgreSQL

    /// Where PostgreSQL's programs are and how to run the server's programs.
    private struct Installation: Sendable {
        var binDirectory: URL
        /// The words that run a command as the server's user (`runuser -u postgres --`), or none when the
        /// command runs as the current user.
        var asServerUser: [String]
        /// The user and group that own the cluster's directory, when not the current user.
        var serverOwner: (uid: uid_t, gid: gid_t)?
    }

    /// The installation, found once.
    private static let located: Result<Installation, PostgresTestClusterError> = locate()

    /// The programs the cluster uses, all of which must be in the bin directory.
    private static let requiredTools = ["initdb", "pg_ctl", "postgres", "createdb", "psql"]

    private static func locate() -> Result<Installation, PostgresTestClusterError> {
        guard let binDirectory = findBinDirectory() else {
            return .failure(
                PostgresTestClusterError(
                    "PostgreSQL's initdb was not found in /usr/lib/postgresql/<version>/bin, `pg_config --bindir` or "
                        + "PATH (install the postgresql package); the PostgreSQL tests are skipped"))
        }
        guard getuid() == 0 else {
            return .success(Installation(binDirectory: binDirectory, asServerUser: [], serverOwner: nil))
        }
        guard let entry = getpwnam("postgres") else {
            return .failure(
                PostgresTestClusterError(
                    "The tests run as root, which initdb refuses, and there is no postgres user to run it as; "
                        + "the PostgreSQL tests are skipped"))
        }
        let owner = (uid: entry.pointee.pw_uid, gid: entry.pointee.pw_gid)
        let directories = ["/usr/sbin", "/sbin", "/usr/bin", "/bin"]
        if let runuser = findExecutable("runuser", extraDirectories: directories) {
            return .success(
                Installation(
                    binDirectory: binDirectory, asServerUser: [runuser.path, "-u", "postgres", "--"],
                    serverOwner: owner))
        }
        if let setpriv = findExecutable("setpriv", extraDirectories: directories) {
            return .success(
                Installation(
                    binDirectory: binDirectory,
                    asServerUser: [setpriv.path, "--reuid=postgres", "--regid=postgres", "--init-groups"],
                    serverOwner: owner))
        }
        return .failure(
            PostgresTestClusterError(
                "The tests run as root, which initdb refuses, and neither runuser nor setpriv was found to run it "
                    + "as the postgres user; the PostgreSQL tests are skipped"))
    }

    /// The first directory that holds every required program: Debian's directory for version 15, then what
    /// `pg_config --bindir` names, then Debian's directories for other versions (newest first), then PATH.
    private static func findBinDirectory() -> URL? {
        var candidates = ["/usr/lib/postgresql/15/bin"]
        if let pgConfig = findExecutable("pg_config"),
            let printed = try? run([pgConfig.path, "--bindir"])
        {
            candidates.append(printed.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        candidates += versions.sorted { (Int($0) ?? 0) > (Int($1) ?? 0) }.map { "/usr/lib/postgresql/\($0)/bin" }
        if let initdb = findExecutable("initdb") {
            candidates.append(initdb.deletingLastPathComponent().path)
        }
        return candidates.lazy.map { URL(fileURLWithPath: $0, isDirectory: true) }.first { directory in
            requiredTools.allSatisfy {
                FileManager.default.isExecutableFile(atPath: directory.appendingPathComponent($0).path)
            }
        }
    }

    /// The program `name` in a directory of PATH, or else in one of `extraDirectories`.
    private static func findExecutable(_ name: String, extraDirectories: [String] = []) -> URL? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let directories = path.split(separator: ":").map(String.init) + extraDirectories
        return directories.lazy.map { URL(fileURLWithPath: $0).appendingPathComponent(name) }.first {
            FileManager.default.isExecutableFile(atPath: $0.path)
        }
    }
}

/// Why the test cluster is unavailable or failed to start; the description says what happened, with the output
/// of the command that failed and, when the server did not start, the end of its log.
package struct PostgresTestClusterError: Error, CustomStringConvertible {
    package let description: String

    package init(_ description: String) {
        self.description = description
    }
}
