#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CredentialVault

/// Who is asking the agent: the peer of its socket (always a `vault` process: the git and docker
/// helpers are the same binary) as its rules see it.
///
/// Read from `/proc`: the personality is the base name of the caller's `argv[0]`
/// (`vault`, `git-credential-vault`, `docker-credential-vault`); the chain is the executable
/// (`/proc/PID/exe`) of the caller and of each ancestor up to PID 1; the unit is the systemd unit of
/// its cgroup. Against PID reuse, each ancestor must have started no later than its child, and the
/// caller must still be the process that connected (same start time) once the chain is read; a
/// chain that fails these checks ends where it failed (so rules that need an ancestor do not match).
struct AgentCaller: Sendable {
    let pid: Int32
    let personality: String
    /// The caller's executable first, then its parent's, and so on.
    let executables: [String]
    /// The systemd unit (`foo.service`, `app-….scope`), when there is one.
    let unit: String?

    /// How many ancestors are read at most.
    static let maximumDepth = 64

    static func identify(pid: Int32) -> AgentCaller {
        let startTime = Self.startTime(of: pid)
        var executables: [String] = []
        var current = pid, childStart = startTime ?? 0
        for _ in 0..<maximumDepth {
            guard let executable = Self.readLink("/proc/\(current)/exe"), let start = Self.startTime(of: current),
                  current == pid || start <= childStart else { break }
            executables.append(executable)
            childStart = start
            guard current > 1, let parent = Self.parentPID(of: current), parent > 0 else { break }
            current = parent
        }
        // The caller must not have been replaced while the chain was read.
        if startTime == nil || Self.startTime(of: pid) != startTime { executables = [] }
        let argv0 = Self.readFile("/proc/\(pid)/cmdline").map { bytes in
            String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
        } ?? ""
        let personality = argv0.split(separator: "/").last.map(String.init) ?? argv0
        return AgentCaller(pid: pid, personality: personality, executables: executables, unit: Self.unit(of: pid))
    }

    /// A line for the log and for a refusal: pid, personality and the chain.
    var description: String {
        "\(personality) (pid \(pid); \(executables.joined(separator: " < "))\(unit.map { "; unit \($0)" } ?? ""))"
    }

    private static func unit(of pid: Int32) -> String? {
        guard let bytes = readFile("/proc/\(pid)/cgroup") else { return nil }
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") {
            let path = line.split(separator: ":", maxSplits: 2).last ?? ""
            if let unit = path.split(separator: "/").last(where: { $0.hasSuffix(".service") || $0.hasSuffix(".scope") }) {
                return String(unit)
            }
        }
        return nil
    }

    /// Field 22 of /proc/PID/stat (after the parenthesised command name, which may hold spaces).
    private static func startTime(of pid: Int32) -> UInt64? {
        statFields(of: pid).flatMap { $0.count > 19 ? UInt64($0[19]) : nil }
    }

    private static func parentPID(of pid: Int32) -> Int32? {
        statFields(of: pid).flatMap { $0.count > 1 ? Int32($0[1]) : nil }
    }

    /// The fields of /proc/PID/stat after the command name: state is [0], ppid [1], starttime [19].
    private static func statFields(of pid: Int32) -> [Substring]? {
        guard let bytes = readFile("/proc/\(pid)/stat") else { return nil }
        let text = String(decoding: bytes, as: UTF8.self)
        guard let close = text.lastIndex(of: ")") else { return nil }
        return text[text.index(after: close)...].split(separator: " ")
    }

    private static func readLink(_ path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: 4097)
        let count = readlink(path, &buffer, 4096)
        guard count > 0 else { return nil }
        return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func readFile(_ path: String) -> [UInt8]? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var result: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while result.count < 65536 {
            let count = read(descriptor, &buffer, buffer.count)
            guard count > 0 else { break }
            result += buffer[0..<count]
        }
        return result
    }
}
