import Foundation
import Testing
import TestScheduling
@testable import VaultCLI

/// The parse without the argument parser's completion-script probe (`CommandParser`): used only when
/// nothing on the command line can ask the parser for help, the version or a completion script,
/// and every failure is parsed again the standard way, so what the parser prints is unchanged.
@Suite(.blockingWork) struct FastParseTests {
    @Test(arguments: [
        (["vault", "get", "api"], false),
        (["vault", "list", "--json"], false),
        (["vault", "exec", "--env", "A=b", "--", "curl", "--help"], false),
        (["vault", "--help"], true),
        (["vault", "get", "-h"], true),
        (["vault", "help", "get"], true),
        (["vault", "--version"], true),
        (["vault", "--generate-completion-script", "bash"], true),
        (["vault", "--generate-completion-script=zsh"], true),
        (["vault", "--experimental-dump-help"], true),
    ])
    func onlyCommandLinesThatCannotAskTheParserAreParsedFast(arguments: [String], asksTheParser: Bool) {
        #expect(CommandParser.mayAskTheParser(arguments) == asksTheParser)
    }

    @Test func theFastRootDiffersOnlyInTheProbeSwitch() {
        #expect(VaultCommand.configuration._superCommandName == nil, "help and errors name the command as always")
        #expect(CommandParser.FastRoot.configuration._superCommandName == "vault")
        #expect(CommandParser.FastRoot.configuration.commandName == VaultCommand.configuration.commandName)
    }

    @Test func aFastParseGivesTheSameCommandAndTheRootFallsBack() throws {
        let get = try CommandParser.parse(["vault", "get", "api", "--owner", "u"])
        let parsed = try #require(get as? VaultCommand.Get)
        #expect(parsed.name == "api")
        #expect(parsed.owner == "u")
        // No subcommand: the standard root (its help and --mdoc-sections), not the fast one.
        #expect(try CommandParser.parse(["vault"]) is VaultCommand)
        #expect(try CommandParser.parse(["vault", "--mdoc-sections"]) is VaultCommand)
    }

    @Test func errorsAndCompletionScriptsAreTheParsersOwn() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        // An unknown option: parsed fast first, then again the standard way for the message.
        let unknown = try sandbox.run(["get", "api", "--bogus"], environment: key)
        #expect(unknown.status == 64)
        #expect(unknown.stderrText.contains("Error: Unknown option '--bogus'"))
        #expect(unknown.stderrText.contains("Usage: vault get "), "no prefix before the command name")
        // A validation error (thrown by validate() during the parse).
        let invalid = try sandbox.run(["get", "api", "--clear-after", "5s"], environment: key)
        #expect(invalid.status == 64)
        #expect(invalid.stderrText.contains("--clear-after goes with --clip"))
        #expect(invalid.stderrText.contains("Usage: vault get "))
        // The completion script still comes out (the probe runs on this command line).
        let script = try sandbox.run(["--generate-completion-script", "bash"])
        #expect(script.status == 0)
        #expect(script.stdoutText.contains("_vault"))
    }
}
