import Foundation

/// The threads that tests which block run on, instead of Swift's cooperative pool.
///
/// The cooperative pool has one thread per core (two on the CI machine) and every suite of a
/// test process shares it. A test that waits for a child process (`waitUntilExit`, a blocking
/// read of its pipes, a poll loop) holds one of those threads for the whole wait, so the other
/// suites' timers and continuations run late, and their deadlines break. Suites with the
/// `.blockingWork` trait run here instead. A job never waits behind a blocked thread: when every
/// thread is busy, another is started (a blocked wait costs a thread, not other tests' time);
/// how many such tests run at once is bounded by the trait (`BlockingWorkTrait`), not here.
package final class BlockingTestExecutor: TaskExecutor, @unchecked Sendable {
    // Safe: every stored property is read and written only with `condition` locked.
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var head = 0
    private var idle = 0
    private var threads = 0
    private static let maximumThreads = 256

    /// The one executor of a test process.
    package static let shared = BlockingTestExecutor()

    private static let marker = "vault-tests.blocking-work"

    /// Whether the calling thread is one of this executor's (marked in its thread dictionary:
    /// Linux keeps only 15 bytes of a thread's name).
    package static var isCurrentThread: Bool { Thread.current.threadDictionary[marker] != nil }

    private init() {}

    /// Queues `job`; an idle thread runs it, or a new one when none is idle.
    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        // Each idle thread takes one job: start one more when the waiting jobs outnumber them.
        if jobs.count - head > idle, threads < Self.maximumThreads {
            threads += 1
            let thread = Thread { [unowned self] in
                Thread.current.threadDictionary[Self.marker] = true
                self.work()
            }
            thread.name = "blocking-tests"
            thread.start()
        }
        condition.signal()
        condition.unlock()
    }

    private func work() {
        while true {
            condition.lock()
            while head == jobs.count {
                idle += 1
                condition.wait()
                idle -= 1
            }
            let job = jobs[head]
            head += 1
            if head == jobs.count { jobs.removeAll(keepingCapacity: true); head = 0 }
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}
