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
    public static let address: Bool = {
        guard let process = dlopen(nil, RTLD_NOW) else { return false }
        return dlsym(process, "__asan_init") != nil
    }()
}
