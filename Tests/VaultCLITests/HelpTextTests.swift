import Testing
@testable import VaultCLI

/// The root discussion is built only for runs that can show the root's help.
@Suite struct HelpTextTests {
    @Test(arguments: [
        (["vault"], true),
        (["vault", "--help"], true),
        (["vault", "-h"], true),
        (["vault", "help"], true),
        (["vault", "help", "get"], true),
        (["vault", "--experimental-dump-help"], true),
        (["vault", "get", "api"], false),
        (["vault", "get", "--help"], false),
        (["vault", "status", "--json"], false),
    ])
    func rootHelpIsBuiltOnlyWhenItCanBeShown(arguments: [String], expected: Bool) {
        #expect(HelpText.rootHelpMayBeShown(arguments: arguments) == expected)
    }

    @Test func theRootHelpStillCarriesTheExitStatusesAndAnotherCommandsHelpDoesNot() throws {
        let sandbox = try CLISandbox()
        defer { sandbox.cleanUp() }
        let root = try sandbox.run(["--help"])
        #expect(root.stdoutText.contains("EXIT STATUS"))
        let get = try sandbox.run(["get", "--help"])
        #expect(get.stdoutText.contains("USAGE: vault get"))
        #expect(!get.stdoutText.contains("EXIT STATUS"))
    }
}
