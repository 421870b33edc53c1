import CredentialVault
import Foundation
import Testing
@testable import VaultCLI

/// The one reader of ordinary environment variables (`CommandEnvironment`), and the code that
/// reads it instead of `getenv`: store selection and routing, the pinentry's terminal options,
/// the agent's rules path, completion's `~/`, `--clip`'s program, `vault demo`'s steps. Each is
/// handed an environment here, never the test process's.
@Suite struct CommandEnvironmentTests {
    @Test func emptyValuesAreUnsetAndTheProcessIsReadByName() {
        let environment = CommandEnvironment([.vaultStore: "", .home: "/h"])
        #expect(environment[.vaultStore] == nil)
        #expect(environment[.home] == "/h")
        #expect(environment[.term] == nil)
        #expect(CommandEnvironment.Variable.browser.name == "BROWSER")
        #expect(CommandEnvironment.Variable.listenFDs.name == "LISTEN_FDS")
        let home = ProcessInfo.processInfo.environment["HOME"].flatMap { $0.isEmpty ? nil : $0 }
        #expect(CommandEnvironment.process()[.home] == home)
    }

    @Test func theStoreIsSelectedFromTheGivenEnvironment() throws {
        let url = "postgres://vault@db.test:5432/secrets"
        #expect(try StoreSelection(store: nil, storeName: nil, environment: CommandEnvironment()) == .file)
        #expect(try StoreSelection(store: nil, storeName: nil, environment: CommandEnvironment([.vaultStore: url, .vaultStoreName: "team"]))
            == .postgres(url: url, storeName: "team"))
        // The options win over the environment.
        #expect(try StoreSelection(store: "file", storeName: nil, environment: CommandEnvironment([.vaultStore: url])) == .file)
        #expect(try StoreSelection(store: nil, storeName: "mine", environment: CommandEnvironment([.vaultStore: url, .vaultStoreName: "team"]))
            == .postgres(url: url, storeName: "mine"))
        let error = #expect(throws: VaultError.self) {
            try StoreSelection(store: nil, storeName: nil, environment: CommandEnvironment([.vaultStore: "mysql://x"]))
        }
        #expect(error?.code == .invalidInput)
        #expect(StoreRouting.needsPostgres(arguments: ["vault", "list"], environment: CommandEnvironment([.vaultStore: url])))
        #expect(!StoreRouting.needsPostgres(arguments: ["vault", "list"], environment: CommandEnvironment([.vaultStore: "file"])))
        #expect(!StoreRouting.needsPostgres(arguments: ["vault", "list"], environment: CommandEnvironment()))
    }

    @Test func thePinentryIsToldTheGivenTerminalAndLocale() {
        let options = Pinentry.terminalOptions(CommandEnvironment([.gpgTTY: "/dev/pts/9", .term: "xterm-256color", .lcAll: "",
                                                                   .lcCType: "de_DE.UTF-8", .lang: "C"]))
        #expect(options == ["ttyname=/dev/pts/9", "ttytype=xterm-256color", "lc-ctype=de_DE.UTF-8"])
    }

    @Test func theAgentsRulesFileIsFoundFromTheGivenEnvironment() {
        #expect(AgentRules.path(CommandEnvironment([.xdgConfigHome: "/cfg", .home: "/h"])) == "/cfg/vault/agent.json")
        #expect(AgentRules.path(CommandEnvironment([.home: "/h"])) == "/h/.config/vault/agent.json")
        #expect(AgentRules.path(CommandEnvironment()) == nil)
    }

    /// `--clip` looks on the given PATH, `wl-copy` first only when the given WAYLAND_DISPLAY is set.
    @Test func theClipboardProgramIsFoundFromTheGivenEnvironment() throws {
        let folder = NSTemporaryDirectory() + "vault-clipboard-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        for program in ["wl-copy", "xclip"] {
            #expect(FileManager.default.createFile(atPath: folder + "/" + program, contents: Data("#!/bin/sh\n".utf8),
                                                   attributes: [.posixPermissions: 0o755]))
        }
        let path = "/nonexistent:" + folder
        #expect(try Clipboard.find(environment: CommandEnvironment([.path: path])).tool == Clipboard.xclip)
        #expect(try Clipboard.find(environment: CommandEnvironment([.path: path, .waylandDisplay: "wayland-0"])).tool == Clipboard.wayland)
        #expect(try Clipboard.find(environment: CommandEnvironment([.path: path, .waylandDisplay: ""])).tool == Clipboard.xclip)
        let error = #expect(throws: VaultError.self) {
            try Clipboard.find(environment: CommandEnvironment([.path: folder + "/none", .waylandDisplay: "wayland-0"]))
        }
        #expect(error?.code == .notFound)
    }

    /// `vault demo`'s steps run with the demo's vault, key file and HOME, and the given PATH: nothing else of the user's.
    @Test func theDemoStepsGetOnlyTheirOwnEnvironment() {
        let given = CommandEnvironment([.path: "/opt/bin:/usr/bin", .home: "/home/someone", .vaultStore: "postgres://db/x",
                                        .xdgConfigHome: "/cfg", .waylandDisplay: "wayland-0"])
        #expect(DemoRunner.stepEnvironment(folder: "/tmp/vault-demo-1", inherited: given)
            == ["VAULT_DIR": "/tmp/vault-demo-1/vault", "VAULT_KEY_FILE": "/tmp/vault-demo-1/demo.key", "HOME": "/tmp/vault-demo-1",
                "PATH": "/opt/bin:/usr/bin"])
        #expect(DemoRunner.stepEnvironment(folder: "/f", inherited: CommandEnvironment())["PATH"] == nil)
    }
}
