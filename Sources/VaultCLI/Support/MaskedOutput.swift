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

    deinit {
        for descriptor in [outputReader, outputWriter, errorReader, errorWriter] where descriptor >= 0 { _ = close(descriptor) }
    }

    /// Closes vault's copies of the write ends (the command has its own), then relays until both
    /// streams end. A destination that fails (standard output closed) is dropped; its stream is
    /// still read, so the command never blocks on a full pipe.
    func relayUntilEnd() {
        _ = close(outputWriter)
        _ = close(errorWriter)
        var streams = [Stream(source: outputReader, destination: 1, masker: masker),
                       Stream(source: errorReader, destination: 2, masker: masker)]
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        defer { SecureWipe.wipe(&buffer) }
        while streams.contains(where: \.isOpen) {
            var polled = streams.map { pollfd(fd: $0.isOpen ? $0.source : -1, events: Int16(POLLIN), revents: 0) }
            let ready = poll(&polled, nfds_t(polled.count), -1)
            if ready < 0 {
                if errno == EINTR { continue }
                break
            }
            for index in streams.indices where streams[index].isOpen && polled[index].revents != 0 {
                let count = buffer.withUnsafeMutableBytes { read(streams[index].source, $0.baseAddress, $0.count) }
                if count < 0 {
                    if errno == EINTR || errno == EAGAIN { continue }
                    streams[index].end()
                } else if count == 0 {
                    streams[index].end()
                } else {
                    streams[index].pass(buffer[0..<count])
                }
            }
        }
    }

    /// One stream: a pipe to read, a descriptor to write, and its masker.
    private struct Stream {
        let source: Int32
        let destination: Int32
        var masker: SecretMasker
        var isOpen = true
        var destinationFailed = false

        mutating func pass(_ bytes: ArraySlice<UInt8>) {
            write(masker.feed(bytes))
        }

        mutating func end() {
            write(masker.finish())
            isOpen = false
        }

        private mutating func write(_ bytes: [UInt8]) {
            var offset = 0
            while offset < bytes.count, !destinationFailed {
                let written = bytes[offset...].withUnsafeBytes { remaining in
                    remaining.baseAddress.map { Glibc.write(destination, $0, remaining.count) } ?? 0
                }
                if written < 0 {
                    if errno == EINTR { continue }
                    destinationFailed = true
                } else {
                    offset += written
                }
            }
        }
    }
}
