import Foundation

/// Where a store's file really is.
package enum StorePath {
    /// `path`, or, when its last component is a symbolic link, the file the link leads to
    /// (every link on the way followed). The store's lock file, compaction's temporary file
    /// and its rename then sit beside the real file: two processes that open one store, one
    /// through a link and one through its target, share one lock (with a lock beside each
    /// name, both could write), and a compaction replaces the file, not the link. A link
    /// whose target does not exist is left as it is. SQLite follows links to its database
    /// file in the same way.
    package static func followingLink(_ path: String) -> String {
        var status = stat()
        guard lstat(path, &status) == 0, status.st_mode & S_IFMT == S_IFLNK, let real = realpath(path, nil) else {
            return path
        }
        defer { free(real) }
        return String(cString: real)
    }
}
