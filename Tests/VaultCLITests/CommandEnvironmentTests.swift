import CredentialVault
import Foundation
import Testing
@testable import VaultCLI

/// The one reader of ordinary environment variables (`CommandEnvironment`), and the code that
/// reads it instead of `getenv`: store selection and routing, the pinentry's terminal options,
/// the agent's rules path, completion's `~/`. Each is handed an environment here, never the test
/// process's.
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
}
