import Testing
import TestScheduling
@testable import VaultCLI

/// The root discussion (environment, exit statuses, examples) is in the root's help only.
@Suite(.blockingWork) struct HelpTextTests {
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
