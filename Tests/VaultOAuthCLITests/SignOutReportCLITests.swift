@testable import CredentialVault
import Foundation
import OAuthServerSupport
import Testing
import TestScheduling
import VaultCrypto

/// Review findings 4, 5 and 6 (after issue 35): what `vault signout` says and tries, and what
/// `vault token` leaves alone, through the library's one flow.
extension SealedClientTests {
    @Test("review 5: 'vault signout --recover' of two users prints each user's line, then what the server did with that user's tokens")
    func recoveryReportsUserAfterUser() async throws {
        let server = try OAuthServer.require()
        let folder = try signedIn(server)
        defer { folder.cleanUp() }
        let bob = try server.passwordGrant()
        try folder.store().update { transaction in try CredentialRecords.write(bob, owner: "user:bob", into: &transaction) }
        try FileManager.default.removeItem(atPath: folder.path + "/vault/profile.json")
        let recover = try vault(["signout", "--recover"], folder: folder)
        #expect(recover.status == 0, "\(recover.stderr)")
        let lines = recover.stderr.split(separator: "\n").map(String.init).filter { $0.hasPrefix("Ending") || $0.hasPrefix("Server:") }
        #expect(lines.count == 4, "\(recover.stderr)")
        #expect(lines.enumerated().allSatisfy { $0.element.hasPrefix($0.offset % 2 == 0 ? "Ending the session of '" : "Server: revoked") },
                "each user's result follows their own line: \(lines)")
        #expect(Set(lines.filter { $0.hasPrefix("Ending") }) == ["Ending the session of 'alice'.", "Ending the session of 'bob'."])
        #expect(try server.records(of: try #require(bob.refreshToken)).revoked)
    }

    @Test("review 4: a 'vault signout' whose revocation fails still tries the tokens kept from an earlier one")
    func aFailedSignOutRetriesTheEarlierTokens() throws {
        let server = try OAuthServer.require()
        let failing = try server.standIn.appendingPathComponent("500/revoke-\(UUID().uuidString)").absoluteString
        let folder = try signedIn(server, extra: ["--revocation-endpoint", failing])
        defer { folder.cleanUp() }
        let first = try vault(["signout"], folder: folder)
        #expect(first.status == 0 && first.stderr.contains("Kept 2 tokens sealed in the vault"), "\(first.stderr)")
        let signin = try vault(["signin", "--user-id", "alice"], folder: folder, input: Data(try server.script(["password-grant", server.directory, "read"])))
        #expect(signin.status == 0, "\(signin.stderr)")
        let second = try vault(["signout"], folder: folder)
        #expect(second.status == 0, "\(second.stderr)")
        #expect(second.stderr.contains("Server: revoked 0 of 2 tokens kept from an earlier sign-out."), "\(second.stderr)")
        #expect(second.stderr.contains("Kept 2 tokens sealed in the vault"), "\(second.stderr)")
        #expect(try folder.store().list(owner: "revocation:pending").count == 4)
    }

    @Test("review 6: 'vault token' refreshing leaves the pending revocations alone (no background task cut short at exit)")
    func tokenLeavesPendingRevocationsAlone() async throws {
        let server = try OAuthServer.require()
        let folder = try signedIn(server)
        defer { folder.cleanUp() }
        let old = try server.passwordGrant()
        let session = try folder.session()
        _ = await session.restore()
        let kept = try await session.keepUnrevoked(old, revoked: [], server: try server.issuer.absoluteString,
                                                   clientID: try server.string("confidential_client_id"))
        #expect(kept == 2)
        let token = try vault(["token"], folder: folder)
        #expect(token.status == 0, "\(token.stderr)")
        #expect(try folder.store().list(owner: "revocation:pending").count == 2)
        #expect(try !server.records(of: try #require(old.refreshToken)).revoked)
        // The next sign-out tries them.
        let signout = try vault(["signout"], folder: folder)
        #expect(signout.stderr.contains("revoked 2 of 2 tokens kept from an earlier sign-out"), "\(signout.stderr)")
    }
}
