#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CredentialVault
import FoundationEssentials

/// Runs a helper program (a clipboard tool, gpg, the demo's `vault` steps) with `ProgramLaunch`
/// and `waitpid`, every wait bounded.
enum Subprocess {
    /// What a run produced.
    struct Result {
        /// The exit status, 128 + signal when killed, 127 when the program could not start.
        let status: Int32
        /// Standard output when captured (at most `VaultLimits.maximumSecretBytes`), in zeroising memory.
        let output: SecureBytes?
        /// Standard error when captured (at most 1 MiB).
        var errors: [UInt8] = []
        /// Whether standard output went past `VaultLimits.maximumSecretBytes`: the program was then
        /// killed at once (not left blocked on a full pipe until the timeout), and `output` is nil.
        var outputTooLarge = false
    }

    /// Runs `command` (looked up on PATH) with `input` on its standard input (else /dev/null),
    /// its standard output and standard error captured or on /dev/null, in `environment`
    /// (else vault's own). After `timeout` seconds the program is killed, and so it is as soon as
    /// a captured standard output goes past `VaultLimits.maximumSecretBytes` (`outputTooLarge`).
    static func run(_ command: [String], input: SecureBytes? = nil, captureOutput: Bool = false, captureErrors: Bool = false,
                    environment: [String: String]? = nil, timeout: Double) -> Result {
        var inputPipe: [Int32] = [-1, -1], outputPipe: [Int32] = [-1, -1], errorPipe: [Int32] = [-1, -1]
        let closeAll = { for end in inputPipe + outputPipe + errorPipe where end >= 0 { close(end) } }
        if input != nil, !makePipe(&inputPipe) { return Result(status: 127, output: nil) }
        if captureOutput, !makePipe(&outputPipe) {
            closeAll()
            return Result(status: 127, output: nil)
        }
        if captureErrors, !makePipe(&errorPipe) {
            closeAll()
            return Result(status: 127, output: nil)
        }
        var launch = ProgramLaunch(executable: command[0], arguments: command)
        launch.standardInput = input != nil ? .descriptor(inputPipe[0]) : .null
        launch.standardOutput = captureOutput ? .descriptor(outputPipe[1]) : .null
        launch.standardError = captureErrors ? .descriptor(errorPipe[1]) : .null
        launch.defaultSignals = [SIGPIPE]
        let assignments: [UnsafeMutablePointer<CChar>?]? = environment.map { $0.map { strdup("\($0.key)=\($0.value)") } + [nil] }
        defer { for assignment in assignments ?? [] { free(assignment) } }
        let started = launch.start(environment: assignments)
        if inputPipe[0] >= 0 { close(inputPipe[0]) }
        if outputPipe[1] >= 0 { close(outputPipe[1]) }
        if errorPipe[1] >= 0 { close(errorPipe[1]) }
        defer {
            if inputPipe[1] >= 0 { close(inputPipe[1]) }
            if outputPipe[0] >= 0 { close(outputPipe[0]) }
            if errorPipe[0] >= 0 { close(errorPipe[0]) }
        }
        guard case .success(let pid) = started else { return Result(status: 127, output: nil) }
        if let input {
            try? input.withUnsafeBytes { try StandardIO.writeAll($0, to: inputPipe[1], name: "\(command[0])") }
            close(inputPipe[1])
            inputPipe[1] = -1
        }
        let deadline = Date().addingTimeInterval(timeout)
        var errors: [UInt8] = []
        var output: SecureBytes?
        var tooLarge = false
        if captureOutput {
            output = readUntilEnd(outputPipe[0], alongside: errorPipe[0], into: &errors, tooLarge: &tooLarge, deadline: deadline)
        } else if captureErrors {
            _ = readUntilEnd(-1, alongside: errorPipe[0], into: &errors, tooLarge: &tooLarge, deadline: deadline)
        }
        if tooLarge {
            // It would block on the full pipe until the timeout: end it now (and reap it below).
            kill(pid, SIGKILL)
            output = nil
        }
        return Result(status: waitForExit(pid, deadline: deadline), output: output, errors: errors, outputTooLarge: tooLarge)
    }

    /// Starts `command` (looked up on PATH) in a session of its own, with standard input and
    /// output on /dev/null, and does not wait for it (a browser).
    /// - Returns: whether it started.
    static func startDetached(_ command: [String]) -> Bool {
        guard !command.isEmpty else { return false }
        var launch = ProgramLaunch(executable: command[0], arguments: command)
        launch.standardInput = .null
        launch.standardOutput = .null
        // A session of its own: the browser outlives a Ctrl-C at vault's terminal.
        launch.newSession = true
        guard case .success = launch.start() else { return false }
        return true
    }

    /// A pipe whose ends close on exec (the child gets its end through dup2, which clears the flag).
    static func makePipe(_ ends: inout [Int32]) -> Bool {
        guard pipe(&ends) == 0 else { return false }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        return true
    }

    /// Reads `descriptor` to end of file or the deadline, into zeroising memory, and at the
    /// same time `errorDescriptor` (when not -1) into `errors`, so that neither pipe fills up
    /// while the other is read. Stops at once, with `tooLarge` set, when `descriptor` holds more
    /// than `VaultLimits.maximumSecretBytes`.
    private static func readUntilEnd(_ descriptor: Int32, alongside errorDescriptor: Int32, into errors: inout [UInt8],
                                     tooLarge: inout Bool, deadline: Date) -> SecureBytes {
        let limit = VaultLimits.maximumSecretBytes
        let errorLimit = 1 << 20
        var total = 0
        var collected: [UInt8] = []
        var exceeded = false
        let buffer = SecureBytes(count: descriptor >= 0 ? limit : 0) { raw in
            var open = [descriptor, errorDescriptor]
            var chunk = [UInt8](repeating: 0, count: 4096)
            while open.contains(where: { $0 >= 0 }), Date() < deadline {
                var descriptors = open.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
                let ready = poll(&descriptors, nfds_t(descriptors.count), 50)
                if ready < 0, errno != EINTR { return }
                guard ready > 0 else { continue }
                for (index, entry) in descriptors.enumerated() where entry.fd >= 0 && entry.revents != 0 {
                    let count: Int
                    if index == 0 {
                        guard let base = raw.baseAddress else { open[0] = -1; continue }
                        if total == limit {
                            // Full: one byte more means too large (the byte is dropped, the rest never read).
                            var probe: UInt8 = 0
                            count = read(entry.fd, &probe, 1)
                            probe = 0
                            if count > 0 {
                                exceeded = true
                                return
                            }
                        } else {
                            count = read(entry.fd, base + total, limit - total)
                            if count > 0 { total += count }
                        }
                    } else {
                        count = read(entry.fd, &chunk, chunk.count)
                        if count > 0, collected.count < errorLimit { collected += chunk[0..<count] }
                    }
                    if count < 0, errno == EINTR { continue }
                    if count <= 0 { open[index] = -1 }
                }
            }
        }
        errors = collected
        tooLarge = exceeded
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
