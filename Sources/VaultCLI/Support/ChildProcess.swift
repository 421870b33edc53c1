#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CredentialVault
import Synchronization

// Where SIGINT, SIGTERM, SIGHUP and SIGQUIT go, as one atomic word so the signal handler and
// the main thread agree without a lock: a positive value is the child's PID (forward to it);
// zero or a negative value means no child yet, and `-value` is the bit set (1 << signal) of
// the signals that arrived meanwhile. Such a signal (it can come between the spawn and
// the publication of the PID, e.g. once the child has started but vault was descheduled) is
// kept, not dropped: publishing the PID swaps it in and forwards what was kept. Each signal is
// thus forwarded exactly once, by the handler or by the publisher.
private let forwardingState = Atomic<Int>(0)

/// Passes a signal on to the child, or keeps it for the child not started yet; vault itself
/// keeps running until the child ends. Only async-signal-safe operations: atomics and kill(2).
private func forwardSignal(_ signal: Int32) {
    var state = forwardingState.load(ordering: .sequentiallyConsistent)
    while true {
        if state > 0 {
            _ = kill(pid_t(truncatingIfNeeded: state), signal)
            return
        }
        let kept = -((-state) | (1 << Int(signal)))
        let (exchanged, original) = forwardingState.compareExchange(expected: state, desired: kept,
                                                                    ordering: .sequentiallyConsistent)
        if exchanged { return }
        state = original
    }
}

/// Makes `pid` the target of forwarded signals and forwards those that arrived before.
private func publishForwardingTarget(_ pid: pid_t) {
    let before = forwardingState.exchange(Int(pid), ordering: .sequentiallyConsistent)
    guard before < 0 else { return }
    for number in ChildProcess.forwardedSignals where (-before) & (1 << Int(number)) != 0 {
        _ = kill(pid, number)
    }
}

/// Starts a command with extra environment variables and waits for it, for `vault exec`.
enum ChildProcess {
    /// The signals passed on to the child.
    static let forwardedSignals: [Int32] = [SIGINT, SIGTERM, SIGHUP, SIGQUIT]

    /// How the child ended.
    enum Outcome: Equatable {
        case exited(Int32)
        case signalled(Int32)
    }

    /// Starts `command` (looked up on PATH) with vault's environment plus `secrets`
    /// (`NAME=value`, which replace variables of the same name). The assignments are built in
    /// one buffer that is wiped as soon as the child has started: the secrets then live only
    /// in the child.
    /// - Parameters:
    ///   - command: the program and its arguments.
    ///   - secrets: the variables to add, by name; consumed.
    ///   - standardOutput: a descriptor to give the child as its standard output (else vault's own).
    ///   - standardError: a descriptor to give the child as its standard error (else vault's own).
    /// - Returns: the child's PID.
    /// - Throws: `UsageError` for a command that cannot be started (exit 127 or 126 via `CommandNotStarted`).
    static func spawn(_ command: [String], secrets: consuming [(name: String, value: SecureBytes)],
                      standardOutput: Int32? = nil, standardError: Int32? = nil) throws -> pid_t {
        installForwarding()
        // The assignments go straight into one zeroising buffer of the exact size: no growing
        // array, whose reallocations would leave freed copies of the secrets on the heap.
        var pending = secrets
        var offsets: [Int] = []
        var total = 0
        for secret in pending {
            offsets.append(total)
            total += secret.name.utf8.count + 1 + secret.value.count + 1
        }
        let assignments = SecureBytes(count: total) { buffer in
            for (secret, offset) in zip(pending, offsets) {
                var cursor = offset
                for byte in secret.name.utf8 {
                    buffer[cursor] = byte
                    cursor += 1
                }
                buffer[cursor] = UInt8(ascii: "=")
                cursor += 1
                secret.value.withUnsafeBytes { value in
                    UnsafeMutableRawBufferPointer(rebasing: buffer[cursor..<cursor + value.count]).copyMemory(from: value)
                }
                buffer[cursor + secret.value.count] = 0
            }
        }
        let replaced = Set(pending.map(\.name))
        pending = []
        var inherited: [UnsafeMutablePointer<CChar>?] = []
        var cursor = environ
        while let entry = cursor.pointee {
            let name = String(cString: entry).prefix { $0 != "=" }
            if !replaced.contains(String(name)) { inherited.append(entry) }
            cursor += 1
        }

        // The child starts with default dispositions (vault ignores SIGPIPE) and no blocked signals.
        var launch = ProgramLaunch(executable: command[0], arguments: command)
        launch.standardOutput = standardOutput.map(ProgramLaunch.Stream.descriptor) ?? .inherited
        launch.standardError = standardError.map(ProgramLaunch.Stream.descriptor) ?? .inherited
        launch.closesInheritedDescriptors = false
        launch.defaultSignals = forwardedSignals + [SIGPIPE]
        launch.unblocksSignals = true
        // The spawn only reads the strings; the buffer is wiped when `assignments` goes.
        let started = assignments.withUnsafeBytes { raw -> Result<pid_t, ProgramLaunch.Failure> in
            guard let base = raw.baseAddress.map({ UnsafeMutablePointer(mutating: $0.assumingMemoryBound(to: CChar.self)) }) else {
                return .failure(ProgramLaunch.Failure(errno: EINVAL))
            }
            return launch.start(environment: inherited + offsets.map { Optional(base + $0) } + [nil])
        }
        let pid = try started.mapError { CommandNotStarted(command: command[0], errno: $0.errno) }.get()
        publishForwardingTarget(pid)
        return pid
    }

    /// Installs the forwarders of SIGINT, SIGTERM, SIGHUP and SIGQUIT, and makes sure vault receives
    /// these signals at all (a parent may have started it with them blocked: the mask is inherited).
    /// Idempotent. From here on such a signal does not end vault: it is kept for the child that
    /// `spawn` starts, so `exec` calls this before it writes files that its own exit must remove.
    static func installForwarding() {
        // Touch the state first: a global is initialised lazily, which a handler must not do.
        _ = forwardingState.load(ordering: .sequentiallyConsistent)
        var forwarded = sigset_t()
        sigemptyset(&forwarded)
        for number in forwardedSignals {
            _ = signal(number, forwardSignal)
            sigaddset(&forwarded, number)
        }
        _ = pthread_sigmask(SIG_UNBLOCK, &forwarded, nil)
    }

    /// The child's outcome if it has ended, without waiting; nil while it runs.
    static func reap(_ pid: pid_t) throws -> Outcome? {
        var status: Int32 = 0
        while true {
            let result = waitpid(pid, &status, WNOHANG)
            if result == 0 { return nil }
            if result < 0 {
                guard errno == EINTR else { throw VaultError.io("waiting for the command", path: nil, errno: errno) }
                continue
            }
            forwardingState.store(0, ordering: .sequentiallyConsistent)
            let low = status & 0x7F
            return low == 0 ? .exited((status >> 8) & 0xFF) : .signalled(low)
        }
    }

    /// Waits for the child to end (retrying `EINTR`, which forwarded signals cause).
    static func wait(for pid: pid_t) throws -> Outcome {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { throw VaultError.io("waiting for the command", path: nil, errno: errno) }
        }
        forwardingState.store(0, ordering: .sequentiallyConsistent)
        let low = status & 0x7F
        return low == 0 ? .exited((status >> 8) & 0xFF) : .signalled(low)
    }
}

/// The command of `vault exec` could not be started: 127 when it is not found, 126 otherwise (as shells do).
struct CommandNotStarted: Error, CustomStringConvertible {
    let command: String
    let errno: Int32

    var exitStatus: Int32 { errno == ENOENT ? 127 : 126 }
    var description: String {
        "cannot run '\(TerminalText.escaped(command))': \(String(cString: strerror(errno)))"
    }
}
