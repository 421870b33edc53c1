import CredentialVault
import Foundation
import OAuthServerSupport
import Testing
import TestScheduling

/// `vault client --dpop` and `vault token --headers` against a token endpoint and a resource that
/// check DPoP proofs with jwcrypto (the stand-in's /dpop, started by scripts/oauth-server).
@Suite("vault token --headers with DPoP", .blockingWork, .enabled(if: OAuthServer.shouldRun))
struct DPoPCLITests {
    /// Signs `folder` in with a piped token response.
    func signIn(_ folder: SessionFolder, _ response: String) throws {
        _ = try vault(["init"], folder: folder)
        let run = try vault(["signin", "--user-id", "u1"], folder: folder, input: Data(response.utf8))
        #expect(run.status == 0, "\(run.stderr)")
    }

    @Test("the refresh is bound to the sealed key; the printed Authorization and DPoP lines open the resource, as curl -H @- would send them")
    func headersOpenTheResource() throws {
        let server = try OAuthServer.require()
        let folder = try SessionFolder()
        defer { folder.cleanUp() }
        try signIn(folder, #"{"access_token":"a0","token_type":"Bearer","expires_in":1,"refresh_token":"seed-\#(UUID().uuidString)"}"#)
        let stored = try vault(["client", "--client-id", "vault-dpop", "--token-endpoint",
                                try server.standIn.appendingPathComponent("dpop/token").absoluteString, "--dpop"], folder: folder)
        #expect(stored.status == 0, "\(stored.stderr)")
        let resource = try server.standIn.appendingPathComponent("dpop/resource").absoluteString
        Thread.sleep(forTimeInterval: 1.5)   // the piped token (1 s) has expired: the next call refreshes
        for round in 0..<2 {   // the first refreshes (a DPoP token), the second reuses it
            let run = try vault(["token", "--headers", "--http-method", "GET", "--url", resource], folder: folder)
            #expect(run.status == 0, "\(run.stderr)")
            let text = String(decoding: run.stdout, as: UTF8.self)
            let lines = text.split(separator: "\n")
            #expect(lines.count == 2, "round \(round): \(text.prefix(30))… \(run.stderr)")
            #expect(lines.first?.hasPrefix("Authorization: DPoP dpop-access-") == true)
            #expect(lines.last?.hasPrefix("DPoP: ey") == true)
            #expect(try server.dpopResourceStatus(headers: text) == 200, "round \(round)")
        }
        // The key is sealed, never shown: not in the profile, not in the token's output.
        let profile = (try? String(contentsOfFile: folder.path + "/vault/profile.json", encoding: .utf8)) ?? ""
        #expect(!profile.contains("\"d\""))
        // A proof for another method does not open the resource.
        let post = try vault(["token", "--headers", "--http-method", "POST", "--url", resource], folder: folder)
        #expect(try server.dpopResourceStatus(headers: String(decoding: post.stdout, as: UTF8.self)) == 401)
    }

    @Test("a bearer token prints the Authorization line only")
    func bearer() throws {
        let folder = try SessionFolder()
        defer { folder.cleanUp() }
        try signIn(folder, #"{"access_token":"plain-token","token_type":"Bearer","expires_in":3600}"#)
        let run = try vault(["token", "--headers", "--http-method", "GET", "--url", "https://api.example.com/x"], folder: folder)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(String(decoding: run.stdout, as: UTF8.self) == "Authorization: Bearer plain-token\n")
    }

    @Test("a token type holding CR LF is refused: no header injection, nothing printed")
    func headerInjection() throws {
        let folder = try SessionFolder()
        defer { folder.cleanUp() }
        try signIn(folder, #"{"access_token":"t","token_type":"Bearer\r\nX-Injected: 1","expires_in":3600}"#)
        let run = try vault(["token", "--headers", "--http-method", "GET", "--url", "https://api.example.com/x"], folder: folder)
        #expect(run.status != 0)
        #expect(run.stdout.isEmpty)
        #expect(run.stderr.contains("cannot go in a header line"))
        #expect(!run.stderr.contains("X-Injected"))
    }

    @Test("--headers needs --http-method and --url; they need --headers")
    func usage() throws {
        let folder = try SessionFolder()
        defer { folder.cleanUp() }
        #expect(try vault(["token", "--headers", "--url", "https://a.example"], folder: folder).status == 64)
        #expect(try vault(["token", "--http-method", "GET"], folder: folder).status == 64)
    }
}
