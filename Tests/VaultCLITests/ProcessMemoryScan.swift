import Foundation
import Testing

/// Counts the copies of a byte string in another process's readable memory, through
/// /proc/PID/maps and /proc/PID/mem (root only: vault processes are not dumpable).
enum ProcessMemoryScan {
    private static let scanner = """
        import re, sys
        pid, needle, count = int(sys.argv[1]), open(sys.argv[2], "rb").read(), 0
        with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
            for line in maps:
                m = re.match(r"([0-9a-f]+)-([0-9a-f]+) (\\S+)", line)
                start, end = int(m.group(1), 16), int(m.group(2), 16)
                if "r" not in m.group(3) or end - start > 1 << 30: continue
                try:
                    mem.seek(start); count += mem.read(end - start).count(needle)
                except OSError: pass
        print(count)
        """

    /// The number of copies of the bytes in the file `needleFile` in the memory of `pid`; -1 when the scan failed.
    static func copies(ofContentsOf needleFile: String, in pid: Int32, environment: [String: String]) throws -> Int {
        let run = try ExternalProcess.run("/usr/bin/env", ["python3", "-c", scanner, String(pid), needleFile],
                                          environment: environment, stdin: Data(), timeout: 60)
        return Int(run.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
    }
}
