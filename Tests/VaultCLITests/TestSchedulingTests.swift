#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Foundation
import Testing
import TestScheduling

/// The test process's own scheduling (Tests/Support/TestScheduling): tests that block run off
/// Swift's cooperative pool, and the helpers say so when one would not.
@Suite struct TestSchedulingTests {
    @Suite(.blockingWork) struct WithTheTrait {
        @Test func aSynchronousTestRunsOnTheBlockingThreads() {
            #expect(BlockingTestExecutor.isCurrentThread)
        }

        @Test func anAsynchronousTestAndItsChildTasksStayThere() async throws {
            #expect(BlockingTestExecutor.isCurrentThread)
            try await Task.sleep(for: .milliseconds(1))
            #expect(BlockingTestExecutor.isCurrentThread, "after a suspension")
            async let child = BlockingTestExecutor.isCurrentThread
            #expect(await child, "a child task")
        }

        /// More blocked waits than the pool has threads, and the task that ends them still runs:
        /// on the cooperative pool it would wait behind them (until their 30 s timeouts).
        @Test func aJobNeverWaitsBehindBlockedThreads() async {
            let blockers = ProcessInfo.processInfo.activeProcessorCount + 2
            let gate = DispatchSemaphore(value: 0)
            let opened = await withTaskGroup(of: Bool.self) { group in
                for _ in 0..<blockers {
                    group.addTask { gate.wait(timeout: .now() + 30) == .success }
                }
                group.addTask {
                    for _ in 0..<blockers { gate.signal() }
                    return true
                }
                return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(opened == blockers + 1, "every blocked wait was ended by the task queued after them")
        }

        @Test func theHelpersCheckPassesHere() {
            BlockingWait.check("a wait on the blocking threads")
        }

        @Test func aSleepUsesNoThreadCPUTime() {
            let used = ThreadCPUTime.measure { usleep(300_000) }
            #expect(used < .milliseconds(100), "used \(used)")
        }
    }

    @Test func withoutItATestRunsOnSwiftsPool() async {
        #expect(!BlockingTestExecutor.isCurrentThread)
        await withKnownIssue("a blocking helper called on the cooperative pool records an issue") {
            BlockingWait.check("a wait on the pool")
        }
    }
}
