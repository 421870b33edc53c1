#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// The thread that owns a `BusConnection`: it processes the bus and runs the jobs other threads
/// hand it (a prompt's result), woken through a pipe of its own. `stop()` wakes it and joins it.
final class BusThread: Sendable {
    /// Work handed to the bus thread from another thread.
    typealias Job = @Sendable () -> Void

    /// The pipe's read end (the loop polls it) and write end (`wake()`).
    private let wakeDescriptor: Int32
    private let wakeWriter: Int32
    private let jobs = Mutex<[Job]>([])
    private let stopping = Atomic<Bool>(false)
    private let thread = Mutex<pthread_t?>(nil)

    /// A thread not yet started, with its wake-up pipe.
    /// - Throws: `BusError` when no pipe can be made.
    init() throws {
        var descriptors: [Int32] = [-1, -1]
        guard pipe(&descriptors) == 0 else { throw BusError.failed("making the bus thread's pipe", errno: errno) }
        for descriptor in descriptors {
            _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
            _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
        }
        wakeDescriptor = descriptors[0]
        wakeWriter = descriptors[1]
    }

    deinit {
        close(wakeDescriptor)
        close(wakeWriter)
    }

    /// Whether `stop()` was called.
    var isStopping: Bool { stopping.load(ordering: .acquiring) }

    /// Starts the thread: it processes `connection` until stopped or until the connection breaks.
    /// - Parameters:
    ///   - connection: the connection, handed over whole (no other thread touches it any more).
    ///   - onEnd: runs on the bus thread as it ends (the provider's last words, the name released).
    func start(_ connection: BusConnection, onEnd: @escaping @Sendable (_ broken: Bool) -> Void) throws {
        final class Work: @unchecked Sendable {  // handed once to the new thread
            let body: () -> Void
            init(_ body: @escaping () -> Void) { self.body = body }
        }
        let work = Unmanaged.passRetained(Work { [self] in
            let broken = loop(connection)
            onEnd(broken)
        }).toOpaque()
        var created = pthread_t()
        let result = pthread_create(&created, nil, { argument in
            guard let argument else { return nil }
            Unmanaged<Work>.fromOpaque(argument).takeRetainedValue().body()
            return nil
        }, work)
        guard result == 0 else {
            Unmanaged<Work>.fromOpaque(work).release()
            throw BusError.failed("starting the bus thread", errno: result)
        }
        thread.withLock { $0 = created }
    }

    /// Runs `job` on the bus thread soon.
    func enqueue(_ job: @escaping Job) {
        jobs.withLock { $0.append(job) }
        wake()
    }

    /// Ends the loop soon without waiting (from the bus thread itself: the name was lost).
    func finish() {
        stopping.store(true, ordering: .releasing)
        wake()
    }

    /// Ends the loop and waits for the thread (not from the bus thread itself).
    func stop() {
        stopping.store(true, ordering: .releasing)
        wake()
        guard let running = thread.withLock({ current -> pthread_t? in
            defer { current = nil }
            return current
        }) else { return }
        if pthread_equal(running, pthread_self()) != 0 {
            pthread_detach(running)
        } else {
            pthread_join(running, nil)
        }
    }

    private func wake() {
        var one: UInt8 = 1
        _ = write(wakeWriter, &one, 1)  // a full pipe already wakes the loop
    }

    /// The loop; returns true when the connection broke.
    private func loop(_ connection: BusConnection) -> Bool {
        while !isStopping {
            guard connection.processPending() else { return true }
            let woken = connection.wait(orWake: wakeDescriptor, limit: .seconds(1))
            if woken {
                var drained = [UInt8](repeating: 0, count: 256)
                while read(wakeDescriptor, &drained, drained.count) > 0 {}
            }
            let pending = jobs.withLock { queued -> [Job] in
                defer { queued.removeAll() }
                return queued
            }
            for job in pending { job() }
        }
        connection.flush()
        return false
    }
}
