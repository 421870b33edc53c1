import CredentialVault
import Foundation
import OAuthServerSupport
import Testing
import TestScheduling

/// `vault token --audience AUD` against the stand-in's RFC 8707 token endpoint.
@Suite("vault token --audience", .blockingWork, .enabled(if: OAuthServer.shouldRun))
struct AudienceCLITests {
    @Test("a token for another resource, cached until it expires; the session's own token is unchanged")
    func audienceToken() throws {
        let server = try OAuthServer.require()
        let folder = try SessionFolder()
        defer { folder.cleanUp() }
        _ = try vault(["init"], folder: folder)
        let response = #"{"access_token":"main-access","token_type":"Bearer","expires_in":3600,"refresh_token":"seed-\#(UUID().uuidString)"}"#
        #expect(try vault(["signin", "--user-id", "u1"], folder: folder, input: Data(response.utf8)).status == 0)
        #expect(try vault(["client", "--client-id", "vault-app", "--token-endpoint",
                           try server.standIn.appendingPathComponent("audience/token").absoluteString], folder: folder).status == 0)
        let audience = "https://orders.example.com/\(UUID().uuidString)"
        let first = try vault(["token", "--audience", audience], folder: folder)
        #expect(first.status == 0, "\(first.stderr)")
        let token = String(decoding: first.stdout, as: UTF8.self)
        #expect(token.hasPrefix("aud-"))
        let second = try vault(["token", "--audience", audience], folder: folder)
        #expect(String(decoding: second.stdout, as: UTF8.self) == token)
        #expect(try server.audienceLog().filter { $0.resource == audience }.count == 1)
        #expect(String(decoding: try vault(["token"], folder: folder).stdout, as: UTF8.self) == "main-access")
        // Without a stored client there is nobody to ask.
        _ = try vault(["client", "--remove"], folder: folder)
        let none = try vault(["token", "--audience", audience + "/b"], folder: folder)
        #expect(none.status == 66, "\(none.stderr)")
    }
}
