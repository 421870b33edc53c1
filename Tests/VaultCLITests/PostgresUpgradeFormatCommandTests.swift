@testable import CredentialVaultPostgres
import CredentialVault
import Foundation
import Testing
import TestScheduling

/// `vault upgrade-format` on a PostgreSQL store (issue 38): the explicit step that moves a store an
/// earlier release wrote (layout version 2) to the bucketed layout, version 3.
@Suite(.blockingWork, .enabled(if: PostgresCLI.shouldRun, "no PostgreSQL server (VAULT_POSTGRES_URL)"), .serialized)
struct PostgresUpgradeFormatCommandTests {
    @Test func upgradeFormatMovesAVersion2StoreToBucketsOnceAndKeepsItsEntries() async throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let url = try PostgresCLI.requireURL()
        let name = PostgresCLI.freshStoreName()
        let store = ["--store", url, "--store-name", name]
        // The store as the previous release writes it (state version 2), with the CLI's key.
        var legacy = PostgresSecretStore.Options()
        legacy.layoutVersion = 2
        let keyFile = try #require(key["VAULT_KEY_FILE"])
        let old = try await PostgresSecretStore.create(
            configuration: try PostgresStoreConfiguration(url: url, storeName: name, environment: ProcessInfo.processInfo.environment),
            key: try VaultKey.fromKeyFile(path: keyFile), options: legacy)
        try await old.add(NewEntry(name: "api", secret: SecureBytes(copying: Array("before".utf8))))
        await old.close()
        #expect(try sandbox.run(["get", "api"] + store, environment: key).stdoutText == "before", "a version 2 store reads")

        let moved = try sandbox.run(["upgrade-format", "--json"] + store, environment: key)
        #expect(moved.status == 0, "\(moved.stderrText)")
        let fields = try #require(try JSONSerialization.jsonObject(with: moved.stdout) as? [String: Any])
        #expect(fields["previousVersion"] as? Int == 2 && fields["version"] as? Int == 3 && fields["changed"] as? Bool == true)
        #expect(try sandbox.run(["get", "api"] + store, environment: key).stdoutText == "before")
        #expect(try sandbox.run(["add", "api", "--replace"] + store, stdin: Data("after".utf8), environment: key).status == 0)
        #expect(try sandbox.run(["get", "api"] + store, environment: key).stdoutText == "after")

        let again = try sandbox.run(["upgrade-format"] + store, environment: key)
        #expect(again.status == 0, "\(again.stderrText)")
        #expect(again.stderrText.contains("already version 3; nothing was written"), "\(again.stderrText)")
        let json = try sandbox.run(["upgrade-format", "--json"] + store, environment: key)
        let unchanged = try #require(try JSONSerialization.jsonObject(with: json.stdout) as? [String: Any])
        #expect(unchanged["previousVersion"] as? Int == 3 && unchanged["changed"] as? Bool == false)
    }

    @Test func theTextSaysOlderReleasesCannotReadTheStore() async throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let url = try PostgresCLI.requireURL()
        let name = PostgresCLI.freshStoreName()
        var legacy = PostgresSecretStore.Options()
        legacy.layoutVersion = 2
        let old = try await PostgresSecretStore.create(
            configuration: try PostgresStoreConfiguration(url: url, storeName: name, environment: ProcessInfo.processInfo.environment),
            key: try VaultKey.fromKeyFile(path: try #require(key["VAULT_KEY_FILE"])), options: legacy)
        await old.close()
        let moved = try sandbox.run(["upgrade-format", "--store", url, "--store-name", name], environment: key)
        #expect(moved.status == 0, "\(moved.stderrText)")
        #expect(moved.stderrText.contains("from version 2 to version 3"), "\(moved.stderrText)")
        #expect(moved.stderrText.contains("releases before it cannot read the store"), "\(moved.stderrText)")
    }
}
