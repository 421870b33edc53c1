#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Testing

/// Reads a child's output as it comes, for test helpers, without a `readabilityHandler`.
///
/// Tearing `readabilityHandler`s down from several threads at once corrupts libdispatch's epoll
/// bookkeeping on Linux and crashes the whole test process in `_dispatch_event_loop_drain`
/// (swift-corelibs-libdispatch issue 949), and suites run in parallel here. A thread of its own
/// that blocks in read(2) never registers the descriptor with libdispatch.
///
/// The reader reads a descriptor of its own (a `dup` of the handle's, closed when it reaches end
/// of file): the handle's number is closed when its `Pipe` is released (a test that throws before
/// waiting, or gives up after a timeout), and another test running in parallel may then open
/// something under that number.
package final class PipeReader: Sendable {
    private let finished = DispatchSemaphore(value: 0)

    /// Starts reading `handle` until end of file, passing each chunk to `chunk` (on the reader's thread).
    /// The handle may be closed or released at once: the reader holds its own descriptor.
    package init(_ handle: FileHandle, chunk: @escaping @Sendable (Data) -> Void) {
        let finished = self.finished
        let descriptor = fcntl(handle.fileDescriptor, F_DUPFD_CLOEXEC, 0)
        guard descriptor >= 0 else {
            // Out of descriptors: nothing is read, and the test says why.
            let failure = errno
            Issue.record("PipeReader could not duplicate descriptor \(handle.fileDescriptor): \(String(cString: strerror(failure)))")
            finished.signal()
            return
        }
        Thread {
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                if count < 0, errno == EINTR { continue }
                if count < 0, errno == EAGAIN || errno == EWOULDBLOCK {
                    // A non-blocking descriptor: wait until it has something (or is closed).
                    var wait = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                    _ = poll(&wait, 1, -1)
                    continue
                }
                guard count > 0 else { break }
                chunk(Data(buffer[0..<count]))
            }
            close(descriptor)
            finished.signal()
        }.start()
    }

    /// Waits until the reader reached end of file, for at most `timeout` seconds.
    /// - Returns: false when the pipe is still open then (a program in the background holding it).
    package func waitUntilFinished(timeout: Double = 60) -> Bool {
        finished.wait(timeout: .now() + timeout) == .success
    }
}
