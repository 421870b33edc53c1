#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CredentialVault
import VaultCrypto

/// The pipes of `vault exec --mask`: the command writes its output and errors into them, and vault
/// passes both on to its own standard output and error with every secret replaced.
///
/// One thread relays both streams with `poll(2)` until both are closed (the command and anything it
/// started that kept them open have exited). Each stream has its own `SecretMasker`, so a secret split
/// across reads, or written one byte at a time, is still caught.
final class MaskedOutput {
    /// The write end the command gets as its standard output.
    let outputWriter: Int32
    /// The write end the command gets as its standard error.
    let errorWriter: Int32
    private let outputReader: Int32
    private let errorReader: Int32
    private let masker: SecretMasker

    /// Makes the two pipes (close-on-exec: only the command's dup2'ed copies cross exec).
    /// - Parameter values: the secrets to mask.
    init(values: [SecureBytes]) throws {
        var output: [Int32] = [-1, -1], errors: [Int32] = [-1, -1]
        guard Subprocess.makePipe(&output) else { throw VaultError.io("creating a pipe for --mask", path: nil, errno: errno) }
        guard Subprocess.makePipe(&errors) else {
            let code = errno
            _ = close(output[0])
            _ = close(output[1])
            throw VaultError.io("creating a pipe for --mask", path: nil, errno: code)
        }
        outputReader = output[0]
        outputWriter = output[1]
        errorReader = errors[0]
        errorWriter = errors[1]
        masker = SecretMasker(values: values)
    }

    private var relayed = false

    deinit {
        // Once relaying started, it closed the write ends and each stream its read end.
        guard !relayed else { return }
        for descriptor in [outputReader, outputWriter, errorReader, errorWriter] { _ = close(descriptor) }
    }

    /// Closes vault's copies of the write ends (the command has its own), then relays until the
    /// command has ended and its output is drained.
    ///
    /// Once the command has ended, `commandEnded` runs at once (exec removes its `--file` folder
    /// there), and relaying goes on only while output still comes: until both pipes are closed, or
    /// 250 ms pass without output, or 5 s in all (a background process that keeps the pipes open
    /// does not keep vault, or the secret files, alive). A destination that fails with EPIPE (the
    /// reader of vault's output went away) closes its pipe, so the command gets SIGPIPE as it would
    /// have without vault; a full non-blocking destination is waited for.
    /// - Returns: how the command ended.
    func relayUntilEnd(command pid: pid_t, commandEnded: () -> Void) throws -> ChildProcess.Outcome {
        relayed = true
        _ = close(outputWriter)
        _ = close(errorWriter)
        var streams = [Stream(source: outputReader, destination: 1, masker: masker),
                       Stream(source: errorReader, destination: 2, masker: masker)]
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        defer { SecureWipe.wipe(&buffer) }
        var outcome: ChildProcess.Outcome?
        var endedAt = ContinuousClock.now, lastOutput = ContinuousClock.now
        while true {
            if outcome == nil, let ended = try ChildProcess.reap(pid) {
                outcome = ended
                endedAt = .now
                lastOutput = .now
                commandEnded()
            }
            let now = ContinuousClock.now
            if let outcome {
                if !streams.contains(where: \.isOpen) || now - lastOutput > .milliseconds(250) || now - endedAt > .seconds(5) {
                    for index in streams.indices where streams[index].isOpen { streams[index].end() }
                    return outcome
                }
            }
            var polled = streams.map { pollfd(fd: $0.isOpen ? $0.source : -1, events: Int16(POLLIN), revents: 0) }
            let ready = poll(&polled, nfds_t(polled.count), outcome == nil && streams.contains(where: \.isOpen) ? 100 : 50)
            if ready < 0, errno != EINTR { break }
            guard ready > 0 else { continue }
            for index in streams.indices where streams[index].isOpen && polled[index].revents != 0 {
                let count = buffer.withUnsafeMutableBytes { read(streams[index].source, $0.baseAddress, $0.count) }
                if count < 0 {
                    if errno == EINTR || errno == EAGAIN { continue }
                    streams[index].end()
                } else if count == 0 {
                    streams[index].end()
                } else {
                    lastOutput = .now
                    streams[index].pass(buffer[0..<count])
                }
            }
        }
        return try outcome ?? ChildProcess.wait(for: pid)
    }

    /// One stream: a pipe to read, a descriptor to write, and its masker.
    private struct Stream {
        let source: Int32
        let destination: Int32
        var masker: SecretMasker
        var isOpen = true

        mutating func pass(_ bytes: ArraySlice<UInt8>) {
            write(masker.feed(bytes))
        }

        mutating func end() {
            if isOpen { write(masker.finish()) }
            close()
        }

        /// Stops reading: the command's next write to this pipe gets EPIPE (or SIGPIPE).
        private mutating func close() {
            guard isOpen else { return }
            isOpen = false
            _ = Glibc.close(source)
        }

        private mutating func write(_ bytes: [UInt8]) {
            var offset = 0
            while offset < bytes.count {
                let written = bytes[offset...].withUnsafeBytes { remaining in
                    remaining.baseAddress.map { Glibc.write(destination, $0, remaining.count) } ?? 0
                }
                if written < 0 {
                    if errno == EINTR { continue }
                    if errno == EAGAIN {
                        var poller = pollfd(fd: destination, events: Int16(POLLOUT), revents: 0)
                        _ = poll(&poller, 1, 1000)
                        continue
                    }
                    close()
                    return
                }
                offset += written
            }
        }
    }
}
