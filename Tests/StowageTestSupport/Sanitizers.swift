import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Which sanitizer the running tests were built with (`Scripts/asan`, `Scripts/tsan`), for
/// the few tests that measure what a sanitizer changes by design.
public enum Sanitizers {
    /// Whether AddressSanitizer's runtime is in the process: its allocator replaces glibc's
    /// and keeps freed memory in quarantine, so memory given back to the system cannot be
    /// measured.
    public static let address = hasSymbol("__asan_init")

    /// Whether ThreadSanitizer's runtime is in the process: it too replaces glibc's
    /// allocator.
    public static let thread = hasSymbol("__tsan_init")

    private static func hasSymbol(_ name: String) -> Bool {
        guard let process = dlopen(nil, RTLD_NOW) else { return false }
        return dlsym(process, name) != nil
    }
}
