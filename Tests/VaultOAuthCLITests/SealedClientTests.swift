import CredentialVault
import Foundation
import OAuthServerSupport
import Testing
import TestScheduling
import VaultCrypto

/// What decides where tokens and the client secret go is sealed in the vault: an edited profile
/// cannot redirect them, an unsealed copy from an earlier version is refused until `vault client
/// --seal` shows and seals it, and a CA bundle that changed is refused. Against the real server.
@Suite("The OAuth client configuration is sealed in the vault", .blockingWork, .enabled(if: OAuthServer.shouldRun))
struct SealedClientTests {
    /// A folder with a confidential client stored and a session whose access token expires in 1 s.
    func signedIn(_ server: OAuthServer, extra: [String] = []) throws -> SessionFolder {
        let folder = try SessionFolder()
        #expect(try vault(["init"], folder: folder).status == 0)
        let client = try vault(["client", "--issuer", try server.issuer.absoluteString, "--client-id", try server.string("confidential_client_id"),
                                "--auth", "basic", "--secret-file", try server.string("confidential_secret_file")] + extra, folder: folder)
        #expect(client.status == 0, "\(client.stderr)")
        var response = try #require(try JSONSerialization.jsonObject(with: Data(try server.script(["password-grant", server.directory, "read"])))
                                    as? [String: Any])
        response["expires_in"] = 1
        let signin = try vault(["signin", "--user-id", "alice"], folder: folder, input: try JSONSerialization.data(withJSONObject: response))
        #expect(signin.status == 0, "\(signin.stderr)")
        return folder
    }

    func editProfile(_ folder: SessionFolder, _ change: (inout [String: Any]) -> Void) throws {
        let path = folder.path + "/vault/profile.json"
        var profile = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
        change(&profile)
        try JSONSerialization.data(withJSONObject: profile).write(to: URL(fileURLWithPath: path))
    }

    @Test("the profile no longer holds the configuration, and an edited copy there is refused before anything is sent")
    func anEditedProfileCannotRedirectTheTokens() throws {
        let server = try OAuthServer.require()
        let folder = try signedIn(server)
        defer { folder.cleanUp() }
        let profile = try String(contentsOfFile: folder.path + "/vault/profile.json", encoding: .utf8)
        #expect(!profile.contains("oauthClient"), "sealed in the vault, not in the plain profile")
        // The attacker's endpoint: a port nobody listens on. Trying it would be "unreachable" (69).
        try editProfile(folder) { profile in
            profile["oauthClient"] = ["clientId": try? server.string("confidential_client_id"), "authMethod": "client_secret_basic",
                                      "issuer": try? server.issuer.absoluteString, "tokenEndpoint": "http://127.0.0.1:9/steal"]
        }
        for command in [["refresh"], ["token", "--leeway", "0s", "--min-ttl", "1h"]] {
            let run = try vault(command, folder: folder)
            #expect(run.status == 65, "\(command): \(run.stderr)")
            #expect(run.stderr.contains("differs from the one sealed"), "\(command): \(run.stderr)")
        }
        // Removing the forged copy is enough: the sealed configuration still works.
        try editProfile(folder) { $0["oauthClient"] = nil }
        let refresh = try vault(["refresh"], folder: folder)
        #expect(refresh.status == 0, "\(refresh.stderr)")
        // A sign-out with a forged copy still wipes locally, and says the tokens were not revoked, and why.
        try editProfile(folder) { profile in profile["oauthClient"] = ["clientId": "x", "revocationEndpoint": "http://127.0.0.1:9/steal"] }
        let signout = try vault(["signout"], folder: folder)
        #expect(signout.status == 0, "\(signout.stderr)")
        #expect(signout.stderr.contains("not revoked") && signout.stderr.contains("differs from the one sealed"), "\(signout.stderr)")
    }

    /// Review finding F5: a stored client that cannot be read was taken for one without DPoP, so
    /// the sign-in stored the client without it, deleted the sealed key and removed the forged copy.
    @Test("a browser sign-in over a stored DPoP client that cannot be read fails with its error (65), unless --dpop or --no-dpop decides")
    func anUnreadableStoredClientStopsTheSignIn() throws {
        let server = try OAuthServer.require()
        let folder = try SessionFolder()
        defer { folder.cleanUp() }
        #expect(try vault(["init"], folder: folder).status == 0)
        let issuer = try server.issuer.absoluteString
        let clientID = try server.string("browser_client_id")
        let client = try vault(["client", "--issuer", issuer, "--client-id", clientID, "--dpop"], folder: folder)
        #expect(client.status == 0, "\(client.stderr)")
        try editProfile(folder) { $0["oauthClient"] = ["clientId": clientID, "issuer": issuer, "tokenEndpoint": "http://127.0.0.1:9/steal"] }
        let signIn = ["signin", "--browser", "--no-open", "--issuer", issuer, "--client-id", clientID, "--wait", "1s"]
        let refused = try vault(signIn, folder: folder)
        #expect(refused.status == 65, "\(refused.stderr)")
        #expect(refused.stderr.contains("differs from the one sealed"), "\(refused.stderr)")
        #expect(!refused.stderr.contains("open this address"), "refused before the listener starts: \(refused.stderr)")
        // Nothing changed: the forged copy stays as evidence, the sealed DPoP client and its key stay.
        let profile = try String(contentsOfFile: folder.path + "/vault/profile.json", encoding: .utf8)
        #expect(profile.contains("127.0.0.1:9"))
        #expect(try folder.store().list().contains { $0.name == StoredClientConfiguration.dpopKeyEntry })
        // Either flag decides DPoP itself: the sign-in starts (and here times out after 1 s with nobody at the browser).
        for flag in ["--dpop", "--no-dpop"] {
            let decided = try vault(signIn + [flag], folder: folder)
            #expect(decided.status != 65 && decided.stderr.contains("open this address"), "\(flag): \(decided.stderr)")
        }
    }

    @Test("an unsealed configuration written by an earlier version is refused until 'vault client --seal' shows and seals it")
    func anUnsealedProfileCopyNeedsAnExplicitSeal() throws {
        let server = try OAuthServer.require()
        let folder = try signedIn(server)
        defer { folder.cleanUp() }
        // What an earlier version left: the configuration in the profile only.
        let legacy: [String: Any] = ["clientId": try server.string("confidential_client_id"), "authMethod": "client_secret_basic",
                                     "grant": "refresh_token", "issuer": try server.issuer.absoluteString, "scopes": [String]()]
        #expect(try vault(["client", "--remove"], folder: folder).status == 0)
        let secret = try String(contentsOfFile: try server.string("confidential_secret_file"), encoding: .utf8)
        // The secret as that version sealed it (`vault add` refuses the reserved session.* names now).
        _ = try folder.store().put(NewEntry(name: StoredClientConfiguration.secretEntry,
                                            secret: SecureBytes(copying: Array(secret.trimmingCharacters(in: .whitespacesAndNewlines).utf8)),
                                            transferable: false), replace: true)
        try editProfile(folder) { $0["oauthClient"] = legacy }
        let refused = try vault(["refresh"], folder: folder)
        #expect(refused.status == 65, "\(refused.stderr)")
        #expect(refused.stderr.contains("does not seal"), "\(refused.stderr)")
        let seal = try vault(["client", "--seal"], folder: folder)
        #expect(seal.status == 0, "\(seal.stderr)")
        #expect(seal.stderr.contains(try server.issuer.absoluteString), "it shows what it seals: \(seal.stderr)")
        let refresh = try vault(["refresh"], folder: folder)
        #expect(refresh.status == 0, "\(refresh.stderr)")
    }

    @Test("profile.json gone while alice is signed in: exit 65 naming the recovery; 'vault signout --recover' revokes with the sealed client, then ends it")
    func aMissingProfileIsRecoveredWithRevocation() throws {
        let server = try OAuthServer.require()
        let folder = try signedIn(server)
        defer { folder.cleanUp() }
        let refreshToken = try #require(try folder.store().snapshot { view in
            try view.secret(named: "session.refresh-token", owner: "user:alice")
        })
        try FileManager.default.removeItem(atPath: folder.path + "/vault/profile.json")
        let status = try vault(["status", "--json"], folder: folder)
        #expect(status.status == 65, "\(status.stderr)")
        #expect(String(decoding: status.stdout, as: UTF8.self).contains("profileMissing"), "\(status.stderr)")
        let token = try vault(["token"], folder: folder)
        #expect(token.status == 65 && token.stderr.contains("vault signout --recover"), "\(token.stderr)")
        #expect(try !server.records(of: refreshToken).revoked, "nothing was changed or revoked yet")

        let recover = try vault(["signout", "--recover"], folder: folder)
        #expect(recover.status == 0, "\(recover.stderr)")
        #expect(recover.stderr.contains("Ending the session of 'alice'") && recover.stderr.contains("revoked"), "\(recover.stderr)")
        #expect(try server.records(of: refreshToken).revoked, "revoked at the server before it was dropped")
        let after = try vault(["status", "--json"], folder: folder)
        #expect(after.status == 0 && String(decoding: after.stdout, as: UTF8.self).contains("\"guest\""), "\(after.stderr)")
        #expect(try vault(["signout", "--recover"], folder: folder).stderr.contains("Nothing to recover"))
    }

    @Test("a revocation that fails at sign-out is kept sealed, and the next 'vault signout' reaching the server revokes it")
    func aFailedRevocationIsRetriedByTheNextSignOut() throws {
        let server = try OAuthServer.require()
        let failing = try server.standIn.appendingPathComponent("500/revoke-\(UUID().uuidString)").absoluteString
        let folder = try signedIn(server, extra: ["--revocation-endpoint", failing])
        defer { folder.cleanUp() }
        let refreshToken = try #require(try folder.store().snapshot { view in
            try view.secret(named: "session.refresh-token", owner: "user:alice")
        })
        let signout = try vault(["signout"], folder: folder)
        #expect(signout.status == 0, "\(signout.stderr)")
        #expect(signout.stderr.contains("Kept 2 tokens sealed in the vault"), "\(signout.stderr)")
        #expect(try folder.store().list(owner: "revocation:pending").count == 2)
        #expect(!String(decoding: try vault(["list"], folder: folder).stdout, as: UTF8.self).contains("revocation"), "never listed")
        #expect(try !server.records(of: refreshToken).revoked)
        // The same client (issuer, id) with the server's own revocation endpoint: the next sign-out revokes them.
        let client = try vault(["client", "--issuer", try server.issuer.absoluteString, "--client-id", try server.string("confidential_client_id"),
                                "--auth", "basic", "--secret-file", try server.string("confidential_secret_file")], folder: folder)
        #expect(client.status == 0, "\(client.stderr)")
        let again = try vault(["signout"], folder: folder)
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.stderr.contains("revoked 2 of 2 tokens kept from an earlier sign-out"), "\(again.stderr)")
        #expect(try server.records(of: refreshToken).revoked)
        #expect(try folder.store().list(owner: "revocation:pending").isEmpty)
    }

    @Test("a CA bundle whose contents changed since 'vault client --ca-bundle' is refused")
    func aChangedCABundleIsRefused() throws {
        let server = try OAuthServer.require()
        let bundleFolder = try SessionFolder()
        defer { bundleFolder.cleanUp() }
        let bundle = bundleFolder.path + "/ca.pem"
        try Data("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n".utf8).write(to: URL(fileURLWithPath: bundle))
        let folder = try signedIn(server, extra: ["--ca-bundle", bundle])
        defer { folder.cleanUp() }
        try Data("-----BEGIN CERTIFICATE-----\nMIIC\n-----END CERTIFICATE-----\n".utf8).write(to: URL(fileURLWithPath: bundle))
        let refused = try vault(["refresh"], folder: folder)
        #expect(refused.status == 65, "\(refused.stderr)")
        #expect(refused.stderr.contains("CA bundle changed"), "\(refused.stderr)")
    }
}
