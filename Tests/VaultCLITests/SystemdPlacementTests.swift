import Testing
@testable import VaultCLI

/// The agent's `units` and `userUnits`: the unit read from a cgroup path as systemd places it, so a
/// sub-cgroup the user makes in their own delegated tree never passes for a system service.
@Suite struct SystemdPlacementTests {
    @Test func aSystemServiceIsTheFirstComponentUnderTheSlices() {
        #expect(SystemdPlacement.parse(path: "/system.slice/backup.service") == SystemdPlacement(unit: "backup.service", userUnit: nil))
        #expect(SystemdPlacement.parse(path: "/system.slice/system-getty.slice/getty@tty1.service")
                == SystemdPlacement(unit: "getty@tty1.service", userUnit: nil))
        // A Delegate= service's own sub-cgroups are still that service.
        #expect(SystemdPlacement.parse(path: "/system.slice/runner.service/payload/backup.service")
                == SystemdPlacement(unit: "runner.service", userUnit: nil))
        #expect(SystemdPlacement.parse(path: "/init.scope") == SystemdPlacement(unit: "init.scope", userUnit: nil))
    }

    @Test func aSubCgroupOfADelegatedUserServiceNamedLikeASystemServiceIsNotOne() {
        let forged = SystemdPlacement.parse(path: "/user.slice/user-1000.slice/user@1000.service/app.slice/x.service/backup.service")
        #expect(forged == SystemdPlacement(unit: "user@1000.service", userUnit: "x.service"))
        let slices = SystemdPlacement.parse(path: "/user.slice/user-1000.slice/user@1000.service/system.slice/backup.service")
        #expect(slices.unit == "user@1000.service", "a 'system.slice' made inside the user's tree is the user's")
        #expect(slices.userUnit == "backup.service")
    }

    @Test func aSessionScopeIsTheSystemManagersUnit() {
        #expect(SystemdPlacement.parse(path: "/user.slice/user-1000.slice/session-2.scope") == SystemdPlacement(unit: "session-2.scope", userUnit: nil))
    }

    @Test func aUserUnitIsTheUserManagersUnit() {
        #expect(SystemdPlacement.parse(path: "/user.slice/user-1000.slice/user@1000.service/app.slice/app-org.gnome.Terminal.slice/vte-spawn-1.scope")
                == SystemdPlacement(unit: "user@1000.service", userUnit: "vte-spawn-1.scope"))
        #expect(SystemdPlacement.parse(path: "/user.slice/user-1000.slice/user@1000.service/init.scope")
                == SystemdPlacement(unit: "user@1000.service", userUnit: "init.scope"))
        #expect(SystemdPlacement.parse(path: "/user.slice/user-1000.slice/user@1000.service")
                == SystemdPlacement(unit: "user@1000.service", userUnit: nil))
    }

    @Test func noSystemdLayoutMeansNoUnit() {
        #expect(SystemdPlacement.parse(path: "/") == .none)
        #expect(SystemdPlacement.parse(path: "/docker/0123abcd") == .none, "not a unit name")
        #expect(SystemdPlacement.parse(path: "/../../system.slice/backup.service") == .none, "outside the agent's cgroup namespace")
        #expect(SystemdPlacement.parse(path: "/system.slice/.service") == .none)
    }

    @Test func theCgroupFileGivesTheUnifiedLineElseSystemdsOwnHierarchy() {
        #expect(SystemdPlacement.parse(cgroupFile: "0::/system.slice/backup.service\n").unit == "backup.service")
        // Hybrid: the v2 line is the root; systemd's tree is the name=systemd one.
        let hybrid = "12:memory:/system.slice/other.service\n1:name=systemd:/system.slice/backup.service\n0::/\n"
        #expect(SystemdPlacement.parse(cgroupFile: hybrid).unit == "backup.service")
        #expect(SystemdPlacement.parse(cgroupFile: "4:memory:/process_api/abc\n0::/\n") == .none)
        #expect(SystemdPlacement.parse(cgroupFile: "") == .none)
    }

    @Test func unitsAndUserUnitsAreMatchedApart() {
        let rule = AgentRules.Rule(name: "backup", allow: true, operations: nil, entries: nil, owners: nil, clients: nil, parents: nil,
                                   units: ["backup.service"], userUnits: nil)
        let userRule = AgentRules.Rule(name: "user sync", allow: true, operations: nil, entries: nil, owners: nil, clients: nil,
                                       parents: nil, units: nil, userUnits: ["sync.service"])
        func caller(_ path: String) -> AgentCaller {
            AgentCaller(pid: 10, personality: "vault", executables: [nil, "/usr/bin/restic"], placement: SystemdPlacement.parse(path: path),
                        identified: true)
        }
        let system = caller("/system.slice/backup.service")
        let forged = caller("/user.slice/user-1000.slice/user@1000.service/app.slice/x.service/backup.service")
        let user = caller("/user.slice/user-1000.slice/user@1000.service/app.slice/sync.service")
        #expect(rule.matches(operation: .get, entry: ("api", ""), caller: system))
        #expect(!rule.matches(operation: .get, entry: ("api", ""), caller: forged))
        #expect(!rule.matches(operation: .get, entry: ("api", ""), caller: user))
        #expect(userRule.matches(operation: .get, entry: ("api", ""), caller: user))
        #expect(!userRule.matches(operation: .get, entry: ("api", ""), caller: system))
    }

    @Test func anUnknownExecutableMatchesNoGlob() {
        let anything = AgentRules.Rule(name: "any parent", allow: true, operations: nil, entries: nil, owners: nil, clients: nil,
                                       parents: ["*"], units: nil, userUnits: nil)
        let unknownParents = AgentCaller(pid: 10, personality: "vault", executables: [nil, nil, nil], placement: .none, identified: true)
        #expect(!anything.matches(operation: .get, entry: ("api", ""), caller: unknownParents))
        let oneKnown = AgentCaller(pid: 10, personality: "vault", executables: [nil, nil, "/usr/bin/git"], placement: .none, identified: true)
        #expect(anything.matches(operation: .get, entry: ("api", ""), caller: oneKnown), "the walk goes on past an unknown link")
    }
}
