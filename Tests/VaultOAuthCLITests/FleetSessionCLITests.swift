import CredentialVault
import CredentialVaultOAuth
import Foundation
import OAuthServerSupport
import Testing
import TestScheduling
import VaultCrypto

/// The session commands on a PostgreSQL store (`--store … --session NAME`), through the built
/// `vault` (which hands them to `vault-postgres`), against the real authorization server and the
/// real PostgreSQL server: 8 processes needing a fresh token at once → one refresh grant.
@Suite("Fleet sessions on the command line: PostgreSQL store + the real authorization server", .blockingWork,
       .enabled(if: OAuthServer.shouldRun && (ProcessInfo.processInfo.environment["VAULT_POSTGRES_URL"] != nil
                                              || ProcessInfo.processInfo.environment["CI"] == "true")))
struct FleetSessionCLITests {
    @Test("client + signin on the store, 8 × vault token at once → one refresh grant, signout revokes at the server")
    func fleetSessionLifecycle() async throws {
        let server = try OAuthServer.require()
        guard let url = ProcessInfo.processInfo.environment["VAULT_POSTGRES_URL"] else {
            throw ServerFailure("no PostgreSQL server: VAULT_POSTGRES_URL is not set (run the tests through scripts/test)")
        }
        let folder = try SessionFolder()
        defer { folder.cleanUp() }
        let store = ["--store", url, "--store-name", "fleet-cli-" + UUID().uuidString]
        let session = ["--session", "billing"]
        #expect(try vault(["init"] + store, folder: folder).status == 0)
        let client = try vault(["client"] + store + ["--issuer", try server.issuer.absoluteString,
                                                     "--client-id", try server.string("confidential_client_id"), "--auth", "basic",
                                                     "--secret-file", try server.string("confidential_secret_file")], folder: folder)
        #expect(client.status == 0, "\(client.stderr)")

        // A token response whose access token expires in 1 s.
        var response = try #require(try JSONSerialization.jsonObject(with: Data(try server.script(["password-grant", server.directory, "read"])))
                                    as? [String: Any])
        response["expires_in"] = 1
        let firstRefresh = SecureBytes(copying: Array(try #require(response["refresh_token"] as? String).utf8))
        let signin = try vault(["signin"] + store + session, folder: folder, input: try JSONSerialization.data(withJSONObject: response))
        #expect(signin.status == 0, "\(signin.stderr)")
        try await Task.sleep(for: .milliseconds(1500))   // past the 1 s token's expiry
        let status = try vault(["status", "--json"] + store + session, folder: folder)
        #expect(String(decoding: status.stdout, as: UTF8.self).contains("\"expired\""), "\(status.stderr)")

        // 8 replicas at once.
        let runs = try await withThrowingTaskGroup(of: VaultRun.self) { group in
            for _ in 0..<8 { group.addTask { try vault(["token"] + store + session, folder: folder) } }
            var all: [VaultRun] = []
            for try await run in group { all.append(run) }
            return all
        }
        for run in runs { #expect(run.status == 0, "\(run.stderr)") }
        #expect(Set(runs.map(\.stdout)).count == 1, "every replica got the same fresh token")
        let record = try server.records(of: firstRefresh)
        #expect(record.refreshGrants == 1)
        #expect(record.liveInFamily == 1)
        let fresh = try #require(runs.first?.stdout)
        #expect(try server.records(of: SecureBytes(copying: Array(fresh))).revoked == false)
        let valid = try vault(["status", "--json"] + store + session, folder: folder)
        #expect(String(decoding: valid.stdout, as: UTF8.self).contains("\"signedIn\""))

        // The file vault's session is untouched by all of this, and --session needs a PostgreSQL store.
        #expect(try vault(["token", "--session", "billing"], folder: folder).status == 64)
        #expect(try vault(["guest"] + store, folder: folder).status == 64)

        let signout = try vault(["signout"] + store + session, folder: folder)
        #expect(signout.status == 0, "\(signout.stderr)")
        #expect(signout.stderr.contains("revoked"), "\(signout.stderr)")
        #expect(try server.records(of: SecureBytes(copying: Array(fresh))).revoked)
        #expect(try vault(["token"] + store + session, folder: folder).status == 66)
    }
}
