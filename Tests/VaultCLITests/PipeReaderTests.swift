#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
import TestScheduling

/// `PipeReader` (Tests/Support/TestScheduling) reads a descriptor of its own: a test that releases
/// its `Pipe` early must not leave the reader on a number that something else opens next.
@Suite(.blockingWork) struct PipeReaderTests {
    /// What the reader passed on, in order.
    final class Received: @unchecked Sendable {
        // Safe: `data` is only touched under `lock`.
        private let lock = NSLock()
        private var data = Data()

        func append(_ more: Data) {
            lock.lock(); defer { lock.unlock() }
            data.append(more)
        }

        var text: String {
            lock.lock(); defer { lock.unlock() }
            return String(decoding: data, as: UTF8.self)
        }

        /// Polls (every 10 ms, at most `timeout` seconds) until the text is `expected`.
        func wait(for expected: String, timeout: Double = 10) -> Bool {
            let deadline = Date().addingTimeInterval(timeout)
            while text != expected, Date() < deadline { usleep(10_000) }
            return text == expected
        }
    }

    @Test func theReaderKeepsReadingItsPipeAfterTheHandleIsReleased() throws {
        let received = Received()
        var pipe: Pipe? = Pipe()
        let number = try #require(pipe?.fileHandleForReading.fileDescriptor)
        // A write end of our own, so the pipe outlives the `Pipe`.
        let writer = try #require(pipe.map { dup($0.fileHandleForWriting.fileDescriptor) })
        #expect(writer >= 0)
        let reader = PipeReader(try #require(pipe?.fileHandleForReading)) { received.append($0) }
        #expect(write(writer, "a", 1) == 1)
        #expect(received.wait(for: "a"))

        // The test lets go of its pipe: the handle's number is closed, and something else is opened
        // under that number (F_DUPFD takes the lowest free number from `number` up, never a used one).
        pipe = nil
        #expect(fcntl(number, F_GETFD) == -1, "releasing the Pipe closed its descriptors")
        var other: [Int32] = [-1, -1]
        #expect(Glibc.pipe(&other) == 0)
        var otherReader = other[0]
        if otherReader != number {
            otherReader = fcntl(other[0], F_DUPFD_CLOEXEC, number)
            close(other[0])
        }
        defer {
            close(otherReader)
            close(other[1])
        }
        // (Rarely, a test running in parallel opens `number` first: then that one holds it instead.)
        #expect(write(other[1], "X", 1) == 1, "something another test would read")

        // The reader still has the first pipe: it gets the rest of it, then its end, and nothing else.
        #expect(write(writer, "b", 1) == 1)
        #expect(received.wait(for: "ab"), "received \(received.text)")
        close(writer)
        #expect(reader.waitUntilFinished(timeout: 10), "the reader saw the end of its pipe")
        #expect(received.text == "ab")
    }
}
