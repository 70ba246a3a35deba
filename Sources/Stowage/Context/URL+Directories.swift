import Foundation

#if os(Linux)
    extension URL {
        /// The user's documents directory, as Foundation on Apple platforms names it
        /// (`URL.documentsDirectory`), which Foundation on Linux lacks: SwiftData code uses
        /// it to place a store (`URL.documentsDirectory.appending(path: "data.json")`).
        /// Stowage's addition on Linux: `FileManager`'s `.documentDirectory` in the user
        /// domain (`~/Documents`, or `$XDG_DOCUMENTS_DIR` where Foundation reads it). It is
        /// disfavoured, so Foundation's own wins wherever it exists.
        @_disfavoredOverload
        public static var documentsDirectory: URL {
            FileManager.default.urls(for: .documentDirectory, in: .userDomainMask).first
                ?? FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(
                    "Documents", isDirectory: true)
        }
    }
#endif
