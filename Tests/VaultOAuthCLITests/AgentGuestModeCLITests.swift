import CredentialVault
import Foundation
import OAuthServerSupport
import Testing
import TestScheduling
import VaultCrypto

/// Review finding 9 (after issue 35): a session through the agent (`SessionManager(directory:agent:)`)
/// cannot open the vault for guest mode (the agent holds it); it was refused only after the user
/// had been signed out through the agent.
extension AgentTokenCLITests {
    @Test("review 9: guest mode through a real agent is refused before it signs anyone out")
    func guestModeThroughTheAgentChangesNothing() async throws {
        let server = try OAuthServer.require()
        let world = try World()
        #expect(try world.run(["init", "--no-agent"], withKey: true).status == 0)
        let signin = try world.run(["signin", "--no-agent", "--user-id", "alice"], withKey: true,
                                   input: Data(try server.script(["password-grant", server.directory, "read"])))
        #expect(signin.status == 0, "\(signin.stderr)")
        let unlock = try world.run(["unlock", "--key-file", world.folder.keyPath], withKey: false)
        #expect(unlock.status == 0, "\(unlock.stderr)")
        let throughAgent = try SessionManager(directory: world.folder.path + "/vault", agent: VaultAgentClient(socketPath: world.socket))
        let refused = await #expect(throws: SessionUnavailable.self) { _ = try await throughAgent.enterGuestMode() }
        #expect(refused?.reason == .locked)
        let state = await (try world.folder.session()).restore()
        #expect(state.user?.id == "alice" && state.credentials != nil, "still signed in: \(state)")
    }
}
