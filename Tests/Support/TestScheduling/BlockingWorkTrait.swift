import Foundation
import Testing

/// Runs every test of a suite on `BlockingTestExecutor`'s threads: for suites whose tests wait
/// for child processes or servers with blocking calls (`CLISandbox.run`, `ExternalProcess.run`,
/// the server scripts). Their waits then never hold a thread of Swift's cooperative pool, which
/// the other suites' timers and continuations need.
///
/// At most `BlockingWorkTrait.width` such test cases run at once (`VAULT_TEST_BLOCKING_WIDTH`,
/// default twice the cores): each starts processes, and the cooperative pool used to bound them
/// by accident (a blocked thread started no other test); more at once would only load the machine.
package struct BlockingWorkTrait: SuiteTrait, TestTrait, TestScoping {
    /// How many test cases with this trait run at once.
    package static let width = ProcessInfo.processInfo.environment["VAULT_TEST_BLOCKING_WIDTH"].flatMap(Int.init)
        ?? 2 * max(1, ProcessInfo.processInfo.activeProcessorCount)

    private static let slots = Slots(width)

    /// Set inside a scope, so that the trait inherited twice (a nested suite) takes one slot.
    @TaskLocal private static var inside = false

    /// Applies to every test of the suite and of its nested suites.
    package var isRecursive: Bool { true }

    /// A scope around each test case (not around the suite as a whole).
    package func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        testCase == nil ? nil : self
    }

    /// Runs the test case with `BlockingTestExecutor` as its task's preferred executor: its
    /// nonisolated code, synchronous test bodies included, and its child tasks run there.
    package func provideScope(for test: Test, testCase: Test.Case?,
                              performing function: @Sendable () async throws -> Void) async throws {
        if Self.inside { return try await function() }
        await Self.slots.acquire()
        do {
            try await Self.$inside.withValue(true) {
                try await withTaskExecutorPreference(BlockingTestExecutor.shared) { try await function() }
            }
        } catch {
            await Self.slots.release()
            throw error
        }
        await Self.slots.release()
    }

    /// A counting semaphore whose waiters suspend (no thread waits).
    private actor Slots {
        private var free: Int
        private var waiters: [CheckedContinuation<Void, Never>] = []

        init(_ count: Int) { free = max(1, count) }

        func acquire() async {
            if free > 0 { free -= 1; return }
            await withCheckedContinuation { waiters.append($0) }
        }

        func release() {
            if waiters.isEmpty { free += 1 } else { waiters.removeFirst().resume() }
        }
    }
}

extension Trait where Self == BlockingWorkTrait {
    /// The suite's tests block threads (child processes, servers): run them on threads of their own.
    package static var blockingWork: Self { BlockingWorkTrait() }
}

/// The check the blocking test helpers make before they wait.
package enum BlockingWait {
    /// Records an issue when the caller would block a thread of Swift's cooperative pool: a
    /// test (or a task) that is not on `BlockingTestExecutor`'s threads. Waits on other threads
    /// (a Dispatch queue, a thread of the test's own) are not tasks and pass.
    package static func check(_ what: @autoclosure () -> String, sourceLocation: SourceLocation = #_sourceLocation) {
        guard !BlockingTestExecutor.isCurrentThread, withUnsafeCurrentTask(body: { $0 != nil }) else { return }
        let advice = "give the suite the .blockingWork trait (Tests/Support/TestScheduling)"
        Issue.record("\(what()) blocks a thread of Swift's cooperative pool, which every suite's timers need: \(advice)",
                     sourceLocation: sourceLocation)
    }
}
