#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What `/proc/PID` tells another process of the same user, as the agent reads it.
///
/// `stat` (parent, start time), `cmdline` and `cgroup` are readable for every process. The
/// executable (`exe`) needs ptrace access: an agent without `CAP_SYS_PTRACE` cannot read it for a
/// process that made itself non-dumpable (every `vault` process does), so it is then unknown.
package enum ProcessFiles {
    /// The fields of /proc/PID/stat after the command name (which may hold spaces and parentheses):
    /// state is [0], ppid [1], starttime [19].
    static func statFields(of pid: Int32) -> [Substring]? {
        guard let bytes = read("/proc/\(pid)/stat") else { return nil }
        let text = String(decoding: bytes, as: UTF8.self)
        guard let close = text.lastIndex(of: ")") else { return nil }
        return text[text.index(after: close)...].split(separator: " ")
    }

    /// Field 22 of /proc/PID/stat: when the process started, in clock ticks since boot.
    static func startTime(of pid: Int32) -> UInt64? {
        statFields(of: pid).flatMap { $0.count > 19 ? UInt64($0[19]) : nil }
    }

    /// The first argument the process was started with (or has written over its own since).
    static func argumentZero(of pid: Int32) -> String? {
        read("/proc/\(pid)/cmdline").map { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    }

    /// The contents of /proc/PID/cgroup.
    static func cgroups(of pid: Int32) -> String? {
        read("/proc/\(pid)/cgroup").map { String(decoding: $0, as: UTF8.self) }
    }

    /// The executable's path, only when that path names, in the agent's own mount namespace, the
    /// very file the process runs (same device and inode as what `/proc/PID/exe` opens).
    ///
    /// The link's text is the path in the *process's* mount namespace: after `unshare -Urm` and
    /// `mount --bind /bin/dash /usr/bin/git`, a shell shows "/usr/bin/git". Comparing the file
    /// itself with what the path names here refuses that, and a deleted or replaced executable
    /// ("/usr/bin/git (deleted)" after an upgrade). Nil when unreadable or different.
    package static func executable(of pid: Int32) -> String? {
        let link = "/proc/\(pid)/exe"
        guard let path = readLink(link), path.hasPrefix("/") else { return nil }
        var running = stat(), named = stat()
        guard stat(link, &running) == 0, stat(path, &named) == 0,
              running.st_dev == named.st_dev, running.st_ino == named.st_ino else { return nil }
        return path
    }

    private static func readLink(_ path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: 4097)
        let count = readlink(path, &buffer, 4096)
        guard count > 0 else { return nil }
        return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// At most 64 KiB of a /proc file.
    private static func read(_ path: String) -> [UInt8]? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var result: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while result.count < 65536 {
            let count = Glibc.read(descriptor, &buffer, buffer.count)
            guard count > 0 else { break }
            result += buffer[0..<count]
        }
        return result
    }
}
