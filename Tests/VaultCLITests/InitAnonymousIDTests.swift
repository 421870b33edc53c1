import Foundation
import Testing
import TestScheduling

/// The install's anonymous id exists from the first launch: `vault init` makes it (as the
/// library's `restore()` does on a first launch), and guest mode keeps it.
@Suite(.blockingWork) struct InitAnonymousIDTests {
    @Test func initMakesTheAnonymousIDThatGuestModeKeeps() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let status = try sandbox.run(["status", "--json"], environment: key)
        #expect(status.status == 0, "\(status.stderrText)")
        let object = try #require(try JSONSerialization.jsonObject(with: status.stdout) as? [String: Any])
        let anonymousID = try #require(object["anonymousId"] as? String, "\(status.stdoutText)")
        #expect(anonymousID.count >= 16)
        let guest = try sandbox.run(["guest"], environment: key)
        #expect(guest.status == 0)
        #expect(guest.stdoutText == anonymousID + "\n")
    }
}
