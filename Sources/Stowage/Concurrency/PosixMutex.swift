#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A value that one thread at a time reaches, under a `pthread_mutex_t`: what Stowage
/// locks with instead of `Synchronization.Mutex`.
///
/// On Linux, `Mutex` locks with futex calls made inside the standard library, which is
/// not built for ThreadSanitizer; the sanitizer then sees no order between two threads'
/// turns under the lock and reports every value the lock guards as a data race (four
/// threads appending to an array under a `Mutex` give two reports; under this lock,
/// none). ThreadSanitizer intercepts `pthread_mutex_lock` and `pthread_mutex_unlock`, so
/// it checks the code that runs in production. The lock is a plain (not recursive) one:
/// taking it again on the thread that holds it deadlocks, as `Mutex` does.
package final class PosixMutex<Value>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    package init(_ value: consuming sending Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with the value, holding the lock.
    @inline(__always)
    package func withLock<Result, E: Error>(_ body: (inout sending Value) throws(E) -> sending Result) throws(E)
        -> sending Result
    {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }

    /// Runs `body` with the value if the lock is free now; `nil` without waiting if it is not.
    package func withLockIfAvailable<Result, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result? {
        guard pthread_mutex_trylock(mutex) == 0 else { return nil }
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
