/// Who is asking the agent: the peer of one connection as its rules see it, identified once, when
/// the connection is accepted, and bound to that connection for its whole life.
///
/// Read from `/proc` (`ProcessFiles`): the personality is the base name of the caller's `argv[0]`
/// (`vault`, `git-credential-vault`, `docker-credential-vault`); the chain is the executable of the
/// caller and of each ancestor up to PID 1, walked through the parent PIDs in `/proc/PID/stat`; the
/// placement is its systemd unit (`SystemdPlacement`). An executable the agent cannot read (a
/// non-dumpable process: every `vault`) or whose path does not name the file it runs (another
/// mount namespace, a deleted file) is unknown and matches no rule, and the walk goes on to the
/// parent. Against PID reuse: every ancestor must have started no later than its child and still
/// have the same start time once its executable was read (else the chain ends there), and the
/// caller must still be the process that connected once everything was read — its pidfd shows it
/// alive (`AgentPeer`), or on a kernel without `SO_PEERPIDFD`, its start time is unchanged. A caller
/// the kernel could give no pidfd for, or that fails this, is
/// `identified == false`: no rule is asked about it and, where rules exist, it is refused.
package struct AgentCaller: Sendable {
    /// The caller's PID (in the agent's PID namespace).
    package let pid: Int32
    /// The base name of `argv[0]`: what the caller says it is (any process can say anything).
    package let personality: String
    /// The caller's executable first, then its parent's, and so on; nil where unknown.
    package let executables: [String?]
    /// The caller's systemd units.
    package let placement: SystemdPlacement
    /// Whether what was read is known to be the peer's.
    package let identified: Bool

    /// How many ancestors are read at most.
    static let maximumDepth = 64

    /// Identifies the peer of a connection just accepted.
    package static func identify(_ peer: AgentPeer) -> AgentCaller {
        let pid = peer.pid
        guard pid > 0, !peer.goneAtAccept, let first = ProcessFiles.statFields(of: pid).flatMap(Lineage.init) else {
            return unidentified(pid)
        }
        var executables: [String?] = []
        var current = pid, lineage = first, childStart = first.startTime
        for _ in 0..<maximumDepth {
            guard current == pid || lineage.startTime <= childStart else { break }
            let executable = ProcessFiles.executable(of: current)
            // Still the process whose start time was read: its PID was not reused meanwhile.
            guard ProcessFiles.startTime(of: current) == lineage.startTime else { break }
            executables.append(executable)
            childStart = lineage.startTime
            guard current > 1, lineage.parent > 0,
                  let parent = ProcessFiles.statFields(of: lineage.parent).flatMap(Lineage.init) else { break }
            current = lineage.parent
            lineage = parent
        }
        let argv0 = ProcessFiles.argumentZero(of: pid) ?? ""
        let personality = argv0.split(separator: "/").last.map(String.init) ?? argv0
        let placement = ProcessFiles.cgroups(of: pid).map(SystemdPlacement.parse(cgroupFile:)) ?? .none
        // The caller must not have been replaced while all this was read.
        let stillThePeer = peer.hasExited().map { !$0 } ?? (ProcessFiles.startTime(of: pid) == first.startTime)
        guard stillThePeer else { return unidentified(pid) }
        return AgentCaller(pid: pid, personality: personality, executables: executables, placement: placement, identified: true)
    }

    /// A caller nothing is known of.
    static func unidentified(_ pid: Int32) -> AgentCaller {
        AgentCaller(pid: pid, personality: "", executables: [], placement: .none, identified: false)
    }

    /// A line for the log and for a refusal: pid, personality, the chain and the units.
    package var description: String {
        guard identified else { return "an unidentified process (pid \(pid): it exited or was replaced before the agent identified it)" }
        let chain = executables.map { $0 ?? "unknown" }.joined(separator: " < ")
        return "\(personality) (pid \(pid); \(chain)\(placement.unit.map { "; unit \($0)" } ?? "")"
            + "\(placement.userUnit.map { "; user unit \($0)" } ?? ""))"
    }

    /// Parent and start time, read from one /proc/PID/stat so both belong to the same process.
    private struct Lineage {
        let parent: Int32
        let startTime: UInt64

        init?(_ fields: [Substring]) {
            guard fields.count > 19, let parent = Int32(fields[1]), let startTime = UInt64(fields[19]) else { return nil }
            self.parent = parent
            self.startTime = startTime
        }
    }
}
