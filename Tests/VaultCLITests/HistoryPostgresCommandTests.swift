import Foundation
import Testing
import TestScheduling

/// A PostgreSQL store keeps no entry history: `vault history` and `vault restore` say so (64), and
/// `vault audit` works on a vault file only. Runs against the server scripts/test starts.
@Suite(.blockingWork, .enabled(if: PostgresCLI.shouldRun, "no PostgreSQL server (VAULT_POSTGRES_URL)"), .serialized)
struct HistoryPostgresCommandTests {
    @Test func historyAndRestoreAreRefusedOnPostgres() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let url = try PostgresCLI.requireURL()
        let store = ["--store", url, "--store-name", PostgresCLI.freshStoreName()]
        #expect(try sandbox.run(["init"] + store, environment: key).status == 0)
        #expect(try sandbox.run(["add", "api"] + store, stdin: Data("one".utf8), environment: key).status == 0)
        #expect(try sandbox.run(["add", "api", "--replace"] + store, stdin: Data("two".utf8), environment: key).status == 0)
        let history = try sandbox.run(["history", "api"] + store, environment: key)
        #expect(history.status == 64)
        #expect(history.stderrText.contains("PostgreSQL store keeps no history"))
        #expect(try sandbox.run(["restore", "api", "--version", "1"] + store, environment: key).status == 64)
        #expect(try sandbox.run(["history", "--limit", "3"] + store, environment: key).status == 64)
        #expect(try sandbox.run(["audit"] + store, environment: key).status == 64)
        #expect(try sandbox.run(["get", "api"] + store, environment: key).stdoutText == "two")
    }

    /// Review of issue 39, finding 6: kept versions do not follow a copy to PostgreSQL; the copy says so.
    @Test func migrateStoreToPostgresWarnsThatKeptVersionsStayBehind() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let url = try PostgresCLI.requireURL()
        #expect(try sandbox.run(["add", "api"], stdin: Data("one".utf8), environment: key).status == 0)
        #expect(try sandbox.run(["add", "api", "--replace"], stdin: Data("two".utf8), environment: key).status == 0)
        #expect(try sandbox.run(["rm", "api"], environment: key).status == 0)
        #expect(try sandbox.run(["add", "other"], stdin: Data("x".utf8), environment: key).status == 0)
        let copied = try sandbox.run(["migrate-store", "--to", url, "--to-store-name", PostgresCLI.freshStoreName()], environment: key)
        #expect(copied.status == 0, "\(copied.stderrText)")
        #expect(copied.stderrText.contains("warning: the 2 earlier versions kept as history in the vault file were not copied"),
                "\(copied.stderrText)")
        // Without kept versions, no warning.
        let (plain, plainKey) = try CLISandbox.withVault()
        defer { plain.cleanUp() }
        #expect(try plain.run(["add", "api"], stdin: Data("one".utf8), environment: plainKey).status == 0)
        let quiet = try plain.run(["migrate-store", "--to", url, "--to-store-name", PostgresCLI.freshStoreName()], environment: plainKey)
        #expect(quiet.status == 0 && !quiet.stderrText.contains("warning"), "\(quiet.stderrText)")
    }
}
