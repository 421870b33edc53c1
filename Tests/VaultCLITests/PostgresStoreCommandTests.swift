import Foundation
import Testing
import TestScheduling

/// The `vault` command on a PostgreSQL store (`--store` / `VAULT_STORE`), against the real server
/// that scripts/test starts (`VAULT_POSTGRES_URL`). Without one the suite is skipped on a developer
/// machine and fails under CI=true.
@Suite(.blockingWork, .enabled(if: PostgresCLI.shouldRun, "no PostgreSQL server (VAULT_POSTGRES_URL)"), .serialized)
struct PostgresStoreCommandTests {
    @Test func entryCommandsWorkOnPostgresThroughTheFlagAndTheEnvironment() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let url = try PostgresCLI.requireURL()
        let store = ["--store", url, "--store-name", PostgresCLI.freshStoreName()]
        #expect(try sandbox.run(["init"] + store, environment: key).status == 0)
        let added = try sandbox.run(["add", "api", "--kind", "password", "--label", "prod", "--expires-in", "1h"] + store,
                                    stdin: Data("s3cret-value".utf8), environment: key)
        #expect(added.status == 0, "\(added.stderrText)")
        let got = try sandbox.run(["get", "api"] + store, environment: key)
        #expect(got.status == 0)
        #expect(got.stdoutText == "s3cret-value")
        let listed = try sandbox.run(["list", "--json"] + store, environment: key)
        let entries = try #require(try JSONSerialization.jsonObject(with: listed.stdout) as? [[String: Any]])
        #expect(entries.map { $0["name"] as? String } == ["api"])
        #expect(entries.first?["label"] as? String == "prod")
        #expect(entries.first?["kind"] as? String == "password")
        #expect(!listed.stdout.contains(Data("s3cret-value".utf8)))
        let verified = try sandbox.run(["verify", "--json"] + store, environment: key)
        #expect(verified.status == 0, "\(verified.stderrText)")
        #expect(verified.stdoutText.contains("\"entriesChecked\" : 1") || verified.stdoutText.contains("\"entriesChecked\": 1"))
        #expect(try sandbox.run(["add", "api"] + store, stdin: Data("x".utf8), environment: key).status == 73)

        // The same store through VAULT_STORE / VAULT_STORE_NAME: nothing on the command line.
        let environment = key.merging(["VAULT_STORE": url, "VAULT_STORE_NAME": store[3]]) { _, new in new }
        #expect(try sandbox.run(["get", "api"], environment: environment).stdoutText == "s3cret-value")
        #expect(try sandbox.run(["rm", "api"], environment: environment).status == 0)
        #expect(try sandbox.run(["get", "api"], environment: environment).status == 66)
        // The vault file of the sandbox was never touched: it still has no entries.
        #expect(try sandbox.run(["list", "--json"], environment: key).stdoutText.hasPrefix("["))
        #expect(try sandbox.run(["list", "--json"], environment: key).stdoutText.contains("\"name\"") == false)
    }

    /// Issue 25, point 7: the database put back to an older state is refused by the next command, a
    /// new process (this machine remembers the store's generation, as it does a vault file's);
    /// `--accept-rollback` takes a restore done on purpose, and the memory follows it.
    @Test func aDatabaseRolledBackIsRefusedByTheNextCommand() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let url = try PostgresCLI.requireURL()
        let name = PostgresCLI.freshStoreName()
        let store = ["--store", url, "--store-name", name]
        func psql(_ sql: String) throws {
            let run = try ExternalProcess.run("/usr/bin/psql", [url, "-q", "-v", "ON_ERROR_STOP=1", "-c", sql], environment: sandbox.environment,
                                              stdin: Data(), timeout: 30)
            guard run.status == 0 else { throw CLITestFailure("psql failed: \(run.stderrText)") }
        }
        #expect(try sandbox.run(["init"] + store, environment: key).status == 0)
        #expect(try sandbox.run(["add", "token"] + store, stdin: Data("old".utf8), environment: key).status == 0)
        let snapshot = "snap_" + UUID().uuidString.replacingOccurrences(of: "-", with: "")
        let vault = "(SELECT vault_id FROM vault_stores WHERE store_name = '\(name)')"
        try psql("CREATE TABLE \(snapshot)_s AS SELECT * FROM vault_stores WHERE store_name = '\(name)'; "
                 + "CREATE TABLE \(snapshot)_b AS SELECT * FROM vault_buckets WHERE vault_id = \(vault); "
                 + "CREATE TABLE \(snapshot)_e AS SELECT * FROM vault_entries WHERE vault_id = \(vault)")
        #expect(try sandbox.run(["add", "token", "--replace"] + store, stdin: Data("new".utf8), environment: key).status == 0)
        try psql("""
            DELETE FROM vault_entries WHERE vault_id = \(vault);
            DELETE FROM vault_buckets WHERE vault_id = \(vault);
            UPDATE vault_stores SET state = (SELECT state FROM \(snapshot)_s) WHERE store_name = '\(name)';
            INSERT INTO vault_buckets SELECT * FROM \(snapshot)_b;
            INSERT INTO vault_entries SELECT * FROM \(snapshot)_e;
            DROP TABLE \(snapshot)_s; DROP TABLE \(snapshot)_b; DROP TABLE \(snapshot)_e
            """)
        let refused = try sandbox.run(["get", "token"] + store, environment: key)
        #expect(refused.status == 65, "\(refused.stderrText)")
        #expect(refused.stderrText.contains("older than generation"), "\(refused.stderrText)")
        let accepted = try sandbox.run(["get", "token", "--accept-rollback"] + store, environment: key)
        #expect(accepted.status == 0 && accepted.stdoutText == "old", "\(accepted.stderrText)")
        let after = try sandbox.run(["get", "token"] + store, environment: key)
        #expect(after.status == 0 && after.stdoutText == "old", "the memory followed the restore: \(after.stderrText)")
    }

    @Test func theWrongKeyAndAMissingStoreFailWithTheirOwnStatus() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let store = ["--store", try PostgresCLI.requireURL(), "--store-name", PostgresCLI.freshStoreName()]
        #expect(try sandbox.run(["list"] + store, environment: key).status == 66)
        #expect(try sandbox.run(["init"] + store, environment: key).status == 0)
        #expect(try sandbox.run(["init"] + store, environment: key).status == 73)
        let bob = ["VAULT_KEY_FILE": try sandbox.keyFile("bob.key")]
        let wrong = try sandbox.run(["list"] + store, environment: bob)
        #expect(wrong.status == 77)
        #expect(wrong.stderrText.hasPrefix("vault: "))
    }

    @Test func aServerThatIsNotThereIsUnavailableNotEmpty() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let port = try PostgresCLI.closedPort()
        let result = try sandbox.run(["get", "api", "--store", "postgres://vault@127.0.0.1:\(port)/vault", "--lock-timeout", "2"],
                                     environment: key, timeout: 60)
        #expect(result.status == 69, "\(result.stderrText)")
        #expect(result.stderrText.contains("unavailable"))
        #expect(result.stdout.isEmpty)
    }

    @Test func aPasswordInTheURLIsRefusedAndNotEchoed() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let result = try sandbox.run(["list", "--store", "postgres://vault:hunter2-pw@127.0.0.1:5432/vault"], environment: key)
        #expect(result.status == 64)
        #expect(!result.stderrText.contains("hunter2-pw"))
        // A store that is not a postgres:// URL at all is refused without echoing it either.
        let other = try sandbox.run(["list", "--store", "mysql://vault:hunter2-pw@127.0.0.1/vault"], environment: key)
        #expect(other.status == 64)
        #expect(!other.stderrText.contains("hunter2-pw"))
    }

    @Test func commandsThatWorkOnTheFileOnlyRefuseAPostgresStoreBeforeReadingAnything() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let store = ["--store", try PostgresCLI.requireURL()]
        // (upgrade-format works on PostgreSQL too: PostgresUpgradeFormatCommandTests.)
        for command in [["guest"], ["passwd"], ["rotate"], ["add", "g", "--guest"]] {
            let result = try sandbox.run(command + store, stdin: Data("x".utf8), environment: key)
            #expect(result.status == 64, "\(command): \(result.stderrText)")
            #expect(result.stderrText.contains("vault file only"), "\(command)")
        }
        #expect(FileManager.default.fileExists(atPath: sandbox.vaultFile))
        // The session commands take a fleet session on PostgreSQL, and want its name.
        for command in [["status"], ["signout"], ["token"], ["refresh"]] {
            let result = try sandbox.run(command + store, environment: key)
            #expect(result.status == 64, "\(command): \(result.stderrText)")
            #expect(result.stderrText.contains("--session NAME"), "\(command)")
        }
        #expect(try sandbox.run(["status", "--session", "s"], environment: key).status == 64, "--session needs a PostgreSQL store")
    }

    @Test func execAndWipeWorkOnPostgres() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let url = try PostgresCLI.requireURL()
        let storeName = PostgresCLI.freshStoreName(), neighbour = PostgresCLI.freshStoreName()
        let store = ["--store", url, "--store-name", storeName]
        #expect(try sandbox.run(["init"] + store, environment: key).status == 0)
        #expect(try sandbox.run(["init", "--store", url, "--store-name", neighbour], environment: key).status == 0)
        #expect(try sandbox.run(["add", "api"] + store, stdin: Data("tok-123".utf8), environment: key).status == 0)
        let exec = try sandbox.run(["exec", "--env", "API_TOKEN=api"] + store + ["--", "/bin/sh", "-c", "printf %s \"$API_TOKEN\""],
                                   environment: key)
        #expect(exec.status == 0, "\(exec.stderrText)")
        #expect(exec.stdoutText == "tok-123")

        #expect(try sandbox.run(["wipe", "--all", "--yes"] + store, environment: key).status == 64)
        let wiped = try sandbox.run(["wipe", "--yes"] + store, environment: key)
        #expect(wiped.status == 0, "\(wiped.stderrText)")
        #expect(try sandbox.run(["list"] + store, environment: key).status == 66)
        #expect(try sandbox.run(["wipe", "--yes"] + store, environment: key).status == 66)
        // The other vault in the database, and the vault file, are untouched.
        #expect(try sandbox.run(["list", "--store", url, "--store-name", neighbour], environment: key).status == 0)
        #expect(FileManager.default.fileExists(atPath: sandbox.vaultFile))
    }

    @Test func migrateStoreCopiesAFileVaultToPostgresAndBackKeepingEverything() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let url = try PostgresCLI.requireURL()
        let storeName = PostgresCLI.freshStoreName()
        let secrets = ["github": "ghp_0123456789", "binary": "\u{0}\u{1}\u{FF}tail\n", "owned": "per-user"]
        #expect(try sandbox.run(["add", "github", "--kind", "accessToken", "--label", "ci", "--expires-at", "2031-01-31T08:15:00Z"],
                                stdin: Data(secrets["github", default: ""].utf8), environment: key).status == 0)
        #expect(try sandbox.run(["add", "binary"], stdin: Data(secrets["binary", default: ""].utf8), environment: key).status == 0)
        #expect(try sandbox.run(["add", "owned", "--owner", "user:u-1"], stdin: Data(secrets["owned", default: ""].utf8),
                                environment: key).status == 0)
        let fileBefore = try Data(contentsOf: URL(fileURLWithPath: sandbox.vaultFile))
        let fileList = try sandbox.run(["list", "--json"], environment: key).stdoutText

        let toPostgres = try sandbox.run(["migrate-store", "--to", url, "--to-store-name", storeName], environment: key)
        #expect(toPostgres.status == 0, "\(toPostgres.stderrText)")
        #expect(toPostgres.stderrText.contains("Copied 3 entries"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: sandbox.vaultFile)) == fileBefore, "the source is unchanged")
        let store = ["--store", url, "--store-name", storeName]
        #expect(try sandbox.run(["list", "--json"] + store, environment: key).stdoutText == fileList, "same metadata, same times")
        #expect(try sandbox.run(["get", "binary"] + store, environment: key).stdout == Data(secrets["binary", default: ""].utf8))
        #expect(try sandbox.run(["get", "owned", "--owner", "user:u-1"] + store, environment: key).stdoutText == "per-user")

        // A second copy into the same store is refused whole; with --into-existing the clash stops it before any write.
        #expect(try sandbox.run(["migrate-store", "--to", url, "--to-store-name", storeName], environment: key).status == 73)
        #expect(try sandbox.run(["migrate-store", "--to", url, "--to-store-name", storeName, "--into-existing"],
                                environment: key).status == 73)

        // And back into a new vault file.
        let back = sandbox.path("back")
        let fromPostgres = try sandbox.run(["migrate-store"] + store + ["--to", "file", "--vault", back], environment: key)
        #expect(fromPostgres.status == 0, "\(fromPostgres.stderrText)")
        #expect(try sandbox.run(["list", "--json", "--vault", back], environment: key).stdoutText == fileList)
        for (name, secret) in secrets where name != "owned" {
            #expect(try sandbox.run(["get", name, "--vault", back], environment: key).stdout == Data(secret.utf8))
        }
        #expect(try sandbox.run(["verify", "--vault", back], environment: key).status == 0)
        // The same store as source and destination is refused.
        #expect(try sandbox.run(["migrate-store", "--to", "file"], environment: key).status == 64)
        // The wrong key opens neither side: nothing is created.
        let bob = ["VAULT_KEY_FILE": try sandbox.keyFile("bob.key")]
        let other = PostgresCLI.freshStoreName()
        #expect(try sandbox.run(["migrate-store", "--to", url, "--to-store-name", other], environment: bob).status == 77)
        #expect(try sandbox.run(["list", "--store", url, "--store-name", other], environment: key).status == 66)
    }
}

/// The PostgreSQL server of this test run, for the CLI tests.
enum PostgresCLI {
    static let url = ProcessInfo.processInfo.environment["VAULT_POSTGRES_URL"]
    static let shouldRun = url != nil || ProcessInfo.processInfo.environment["CI"] == "true"

    static func requireURL() throws -> String {
        guard let url else { throw CLITestFailure("no PostgreSQL server: VAULT_POSTGRES_URL is not set (run the tests through scripts/test)") }
        return url
    }

    static func freshStoreName() -> String { "cli-" + UUID().uuidString }

    /// A loopback port nothing listens on (bound, read, closed).
    static func closedPort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw CLITestFailure("socket failed") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw CLITestFailure("bind failed") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
