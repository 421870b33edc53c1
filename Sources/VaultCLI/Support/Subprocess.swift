#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CredentialVault
import Foundation
import VaultCrypto

/// Runs a helper program (a clipboard tool) with `posix_spawn` and `waitpid`, every wait
/// bounded. Not Foundation's `Process`: its exit notification needs a run loop that vault's
/// main thread does not spin.
enum Subprocess {
    /// What a run produced.
    struct Result {
        /// The exit status, 128 + signal when killed, 127 when the program could not start.
        let status: Int32
        /// Standard output when captured (at most `VaultLimits.maximumSecretBytes`), in zeroising memory.
        let output: SecureBytes?
    }

    /// Runs `command` (looked up on PATH) with `input` on its standard input (else /dev/null),
    /// its standard output captured or on /dev/null, standard error on /dev/null.
    /// After `timeout` seconds the program is killed.
    static func run(_ command: [String], input: SecureBytes? = nil, captureOutput: Bool = false, timeout: Double) -> Result {
        var inputPipe: [Int32] = [-1, -1], outputPipe: [Int32] = [-1, -1]
        if input != nil, !makePipe(&inputPipe) { return Result(status: 127, output: nil) }
        if captureOutput, !makePipe(&outputPipe) {
            for end in inputPipe where end >= 0 { close(end) }
            return Result(status: 127, output: nil)
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if input != nil {
            posix_spawn_file_actions_adddup2(&actions, inputPipe[0], 0)
        } else {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        }
        if captureOutput {
            posix_spawn_file_actions_adddup2(&actions, outputPipe[1], 1)
        } else {
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        }
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        InheritedDescriptors.closeOnExec()
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGPIPE)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF))

        let arguments: [UnsafeMutablePointer<CChar>?] = command.map { strdup($0) } + [nil]
        defer { for argument in arguments { free(argument) } }
        var pid: pid_t = 0
        let spawned = posix_spawnp(&pid, command[0], &actions, &attributes, arguments, environ)
        if inputPipe[0] >= 0 { close(inputPipe[0]) }
        if outputPipe[1] >= 0 { close(outputPipe[1]) }
        defer {
            if inputPipe[1] >= 0 { close(inputPipe[1]) }
            if outputPipe[0] >= 0 { close(outputPipe[0]) }
        }
        guard spawned == 0 else { return Result(status: 127, output: nil) }
        if let input {
            try? input.withUnsafeBytes { try StandardIO.writeAll($0, to: inputPipe[1], name: "\(command[0])") }
            close(inputPipe[1])
            inputPipe[1] = -1
        }
        let deadline = Date().addingTimeInterval(timeout)
        var output: SecureBytes?
        if captureOutput { output = readUntilEnd(outputPipe[0], deadline: deadline) }
        return Result(status: waitForExit(pid, deadline: deadline), output: output)
    }

    /// A pipe whose ends close on exec (the child gets its end through dup2, which clears the flag).
    private static func makePipe(_ ends: inout [Int32]) -> Bool {
        guard pipe(&ends) == 0 else { return false }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        return true
    }

    /// Reads to end of file or the deadline, into zeroising memory.
    private static func readUntilEnd(_ descriptor: Int32, deadline: Date) -> SecureBytes {
        let limit = VaultLimits.maximumSecretBytes
        var total = 0
        let buffer = SecureBytes(count: limit) { raw in
            guard let base = raw.baseAddress else { return }
            var pollDescriptor = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            while total < limit, Date() < deadline {
                let ready = poll(&pollDescriptor, 1, 50)
                if ready < 0, errno != EINTR { return }
                guard ready > 0 else { continue }
                let count = read(descriptor, base + total, limit - total)
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { return }
                total += count
            }
        }
        return buffer.slice(0..<total)
    }

    /// Waits for `pid` until the deadline, then kills it; returns its status.
    private static func waitForExit(_ pid: pid_t, deadline: Date) -> Int32 {
        var status: Int32 = 0
        while true {
            let result = waitpid(pid, &status, WNOHANG)
            if result == pid { break }
            if result < 0, errno != EINTR { return 127 }
            if Date() >= deadline {
                kill(pid, SIGKILL)
                while waitpid(pid, &status, 0) < 0, errno == EINTR {}
                break
            }
            usleep(5_000)
        }
        let low = status & 0x7F
        return low == 0 ? (status >> 8) & 0xFF : 128 + low
    }
}
