/// Where systemd placed a process, read from its cgroup path (`/proc/PID/cgroup`): the unit of the
/// system manager (PID 1) and, for a process under a user's manager (`user@UID.service`), the unit
/// of that manager.
///
/// systemd puts a unit's processes in the cgroup `<slices>/<unit>`: slices nest
/// (`system.slice/system-getty.slice/getty@tty1.service`), and the unit is the first component
/// under them that is not a slice. Anything deeper is the unit's own sub-cgroups (a `Delegate=`
/// service, or the user's manager, arranges them as it likes), so a component named
/// `backup.service` deep in `user@1000.service/app.slice/x.service/backup.service` says nothing
/// about the system. Only the system unit is placed by root; the user's manager, and any process of
/// the user through its delegated tree, can put the user's processes into any user unit.
package struct SystemdPlacement: Sendable, Equatable {
    /// The system manager's unit (`backup.service`, `session-2.scope`, `user@1000.service`).
    package let unit: String?
    /// The unit of the user's own manager, when `unit` is `user@UID.service` (`app-foo.scope`, `sync.service`).
    package let userUnit: String?

    /// No unit known.
    static let none = SystemdPlacement(unit: nil, userUnit: nil)

    /// Reads the contents of `/proc/PID/cgroup`: the cgroup v2 line (`0::/path`), else the v1
    /// `name=systemd` hierarchy's line.
    static func parse(cgroupFile text: String) -> SystemdPlacement {
        let lines = text.split(separator: "\n")
        let unified = lines.first { $0.hasPrefix("0::") }.map { $0.dropFirst(3) }
        let legacy = lines.lazy.compactMap { line -> Substring? in
            let fields = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            return fields.count == 3 && fields[1] == "name=systemd" ? fields[2] : nil
        }.first
        // On a hybrid system the v2 line is "0::/" while systemd's tree is the v1 one.
        let path = [unified, legacy].compactMap { $0 }.first { $0 != "/" } ?? unified ?? legacy
        return path.map { parse(path: String($0)) } ?? .none
    }

    /// Reads one cgroup path, as the agent's cgroup namespace shows it.
    static func parse(path: String) -> SystemdPlacement {
        let components = path.split(separator: "/")
        // "/../.." is a cgroup outside the agent's namespace: nothing can be said about it.
        guard !components.contains(".."), let systemIndex = components.firstIndex(where: { !$0.hasSuffix(".slice") }),
              isUnitName(components[systemIndex]) else { return .none }
        let unit = String(components[systemIndex])
        guard isUserManager(unit) else { return SystemdPlacement(unit: unit, userUnit: nil) }
        let rest = components[(systemIndex + 1)...]
        let userUnit = rest.first { !$0.hasSuffix(".slice") }.flatMap { isUnitName($0) ? String($0) : nil }
        return SystemdPlacement(unit: unit, userUnit: userUnit)
    }

    /// The unit types that hold processes.
    private static let processUnitSuffixes = [".service", ".scope", ".socket", ".mount", ".swap"]

    private static func isUnitName(_ name: Substring) -> Bool {
        processUnitSuffixes.contains { name.hasSuffix($0) && name.count > $0.count }
    }

    /// `user@UID.service`: the unit that runs a user's own manager.
    private static func isUserManager(_ unit: String) -> Bool {
        guard unit.hasPrefix("user@"), unit.hasSuffix(".service") else { return false }
        let uid = unit.dropFirst("user@".count).dropLast(".service".count)
        return !uid.isEmpty && uid.allSatisfy { $0 >= "0" && $0 <= "9" }
    }
}
