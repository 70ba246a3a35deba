import Dispatch

/// Performs storage work with a model context that only it uses.
///
/// An executor owns one ``ModelContext`` and runs the jobs of the ``ModelActor`` that
/// holds it, so that the context is only ever touched from one place at a time. It is
/// `Sendable` (every `Executor` is); its context is not, and is read only by code that
/// the executor runs.
public protocol ModelExecutor: Executor {
    /// The context the executor's jobs use.
    var modelContext: ModelContext { get }
}

/// A ``ModelExecutor`` that runs one job at a time, in the order they arrive, and so can
/// be an actor's executor.
public protocol SerialModelExecutor: ModelExecutor, SerialExecutor {}

/// The model executor that `@ModelActor` gives an actor: a serial executor over one
/// model context.
///
/// Where Stowage differs: the jobs run on a serial `DispatchQueue` that belongs to the
/// executor, one queue per model actor. SwiftData does not document what runs its
/// executor's jobs.
public final class DefaultSerialModelExecutor: SerialModelExecutor, @unchecked Sendable {
    // @unchecked Sendable: `modelContext` is not Sendable, and is only used by the jobs the
    // queue runs one at a time (the model actor's code); the queue and the key are
    // thread-safe and never change.

    /// The context the executor's jobs use.
    public let modelContext: ModelContext
    /// The queue every job runs on, one at a time.
    private let queue: DispatchQueue
    /// Set on `queue` only, to tell whether the current thread is running one of its jobs.
    private let onQueueKey = DispatchSpecificKey<Bool>()

    /// Creates an executor that runs its jobs, one at a time, with `modelContext`.
    public init(modelContext: ModelContext) {
        self.modelContext = modelContext
        self.queue = DispatchQueue(label: "Stowage.DefaultSerialModelExecutor")
        queue.setSpecific(key: onQueueKey, value: true)
    }

    /// Schedules `job` to run on the executor's queue after the jobs enqueued before it.
    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedSerialExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }

    /// The executor as the runtime refers to it.
    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    /// Whether the current thread is running one of this executor's jobs.
    public func isIsolatingCurrentContext() -> Bool? {
        DispatchQueue.getSpecific(key: onQueueKey) == true
    }

    /// Stops the program unless the current thread is running one of this executor's jobs
    /// (what `assumeIsolated` and `preconditionIsolated` ask).
    public func checkIsolated() {
        precondition(
            DispatchQueue.getSpecific(key: onQueueKey) == true,
            "not on the queue of the DefaultSerialModelExecutor that isolates this model actor")
    }
}

extension ModelExecutor {
    /// The executor as an actor's serial executor, for a ``ModelActor``'s
    /// `unownedExecutor`. `@ModelActor` uses it; do not call it yourself.
    ///
    /// An actor runs one job at a time, so its executor must be a `SerialExecutor`:
    /// a model actor whose model executor is not one stops the program the first time
    /// something runs on it.
    public var _stowageUnownedSerialExecutor: UnownedSerialExecutor {
        if let executor = self as? DefaultSerialModelExecutor {
            return executor.asUnownedSerialExecutor()
        }
        guard let executor = self as? any SerialExecutor else {
            preconditionFailure(
                "a ModelActor's modelExecutor must be a SerialModelExecutor, such as DefaultSerialModelExecutor; "
                    + "\(type(of: self)) is not serial")
        }
        return executor.asUnownedSerialExecutor()
    }
}
