import Foundation
import Testing
import TestScheduling

/// `vault` links neither the OAuth client's HTTP stack nor the PostgreSQL driver; the commands
/// that need them run in `vault-oauth` and `vault-postgres` (docs/ARCHITECTURE.md, "Helper
/// executables"). These tests read the built binaries and run `vault` without its helpers.
@Suite(.blockingWork) struct HelperExecutableTests {
    /// The Swift modules whose symbols a binary holds (mangled names start `$s<length><module>`).
    static func linkedModules(_ path: String) throws -> Set<String> {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/nm")
        process.arguments = ["--defined-only", path]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        var modules: Set<String> = []
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
            guard let symbol = line.split(separator: " ").last, symbol.hasPrefix("$s") else { continue }
            let rest = symbol.dropFirst(2)
            let digits = rest.prefix { $0.isNumber }
            guard let length = Int(digits), length > 0 else { continue }
            let name = rest.dropFirst(digits.count).prefix(length)
            if name.count == length { modules.insert(String(name)) }
        }
        return modules
    }

    @Test func vaultLinksNoHTTPStackAndNoDatabaseDriver() throws {
        let vault = try CLIBinary.path()
        let modules = try Self.linkedModules(vault)
        // The guard must be able to fail: the helpers hold these modules, and vault its own.
        #expect(modules.contains("VaultCLI"))
        #expect(modules.contains("ArgumentParser"))
        for module in ["NIOCore", "NIOPosix", "NIOSSL", "AsyncHTTPClient", "CredentialVaultOAuth", "VaultOAuthCLI",
                       "PostgresNIO", "CredentialVaultPostgres", "Crypto"] {
            #expect(!modules.contains(module), "vault links \(module)")
        }
        let helper = URL(fileURLWithPath: vault).deletingLastPathComponent().appendingPathComponent("vault-oauth").path
        let helperModules = try Self.linkedModules(helper)
        #expect(helperModules.isSuperset(of: ["AsyncHTTPClient", "NIOCore", "CredentialVaultOAuth", "VaultOAuthCLI", "VaultCLI"]))
        #expect(!helperModules.contains("PostgresNIO"))
    }

    /// A `vault` installed without its helpers: a command that calls a server exits 66 naming
    /// `vault-oauth`, before it reads anything; the others run as usual.
    @Test func withoutTheOAuthHelperAServerCommandSaysWhatIsMissing() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let alone = sandbox.path("bin/vault")
        try FileManager.default.createDirectory(atPath: sandbox.path("bin"), withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: try CLIBinary.path(), toPath: alone)
        let device = try sandbox.runBinary(alone, ["signin", "--device", "--issuer", "http://127.0.0.1:9", "--client-id", "app"],
                                           environment: key)
        #expect(device.status == 66)
        #expect(device.stderrText.contains("needs vault-oauth, which is not installed beside this vault"))
        #expect(device.stdoutText.isEmpty)
        // Commands that never call a server do not need it.
        #expect(try sandbox.runBinary(alone, ["add", "api"], stdin: Data("v".utf8), environment: key).status == 0)
        #expect(try sandbox.runBinary(alone, ["get", "api"], environment: key).stdoutText == "v")
        #expect(try sandbox.runBinary(alone, ["status", "--json"], environment: key).status == 0)
        // With the helper beside it, the same command reaches the (absent) server: 69, not 66.
        let installed = URL(fileURLWithPath: try CLIBinary.path()).deletingLastPathComponent()
        try FileManager.default.copyItem(atPath: installed.appendingPathComponent("vault-oauth").path, toPath: sandbox.path("bin/vault-oauth"))
        let reached = try sandbox.runBinary(alone, ["signin", "--device", "--issuer", "http://127.0.0.1:9", "--client-id", "app"],
                                            environment: key, timeout: 60)
        #expect(reached.status == 69, "\(reached.stderrText)")
    }

    /// A sandbox with a signed-in user (token valid for an hour, with a refresh token) and an OAuth
    /// client stored whose server is not there (127.0.0.1:9 refuses connections).
    static func signedInWithClient(_ sandbox: CLISandbox, key: [String: String]) throws {
        let response = #"{"access_token":"at-1","token_type":"Bearer","expires_in":3600,"refresh_token":"rt-1"}"#
        let signedIn = try sandbox.run(["signin", "--user-id", "u1"], stdin: Data(response.utf8), environment: key)
        #expect(signedIn.status == 0, "\(signedIn.stderrText)")
        let client = try sandbox.run(["client", "--issuer", "http://127.0.0.1:9", "--client-id", "app"], environment: key)
        #expect(client.status == 0, "\(client.stderrText)")
    }

    /// `vault` alone in a folder of its own, as an install without its helpers.
    static func vaultAlone(in sandbox: CLISandbox) throws -> String {
        try FileManager.default.createDirectory(atPath: sandbox.path("bin"), withIntermediateDirectories: true)
        let alone = sandbox.path("bin/vault")
        try FileManager.default.copyItem(atPath: try CLIBinary.path(), toPath: alone)
        return alone
    }

    /// VAULT_PASSPHRASE is taken out of the environment at start-up; a command handed to
    /// vault-oauth must still open the vault with it (the helper gets the environment back).
    @Test func aPassphraseFromTheEnvironmentReachesTheOAuthHelper() throws {
        let sandbox = try CLISandbox()
        defer { sandbox.cleanUp() }
        let passphrase = ["VAULT_PASSPHRASE": "correct horse battery staple"]
        #expect(try sandbox.run(["init"], environment: passphrase).status == 0)
        try Self.signedInWithClient(sandbox, key: passphrase)
        // A valid token: printed by vault itself.
        let valid = try sandbox.run(["token"], environment: passphrase)
        #expect(valid.status == 0, "\(valid.stderrText)")
        #expect(valid.stdoutText == "at-1")
        // Not valid for two hours: a refresh, in vault-oauth, which opens the vault with the
        // passphrase and then finds no server (69). Without the passphrase it would be 64 (no key).
        let refreshed = try sandbox.run(["token", "--min-ttl", "2h"], environment: passphrase, timeout: 60)
        #expect(refreshed.status == 69, "\(refreshed.stderrText)")
        #expect(refreshed.stdout.isEmpty)
    }

    @Test func withoutTheHelperAValidTokenIsPrintedAndSignOutStillWipes() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        try Self.signedInWithClient(sandbox, key: key)
        let alone = try Self.vaultAlone(in: sandbox)
        let valid = try sandbox.runBinary(alone, ["token"], environment: key)
        #expect(valid.status == 0, "\(valid.stderrText)")
        #expect(valid.stdoutText == "at-1")
        let needsRefresh = try sandbox.runBinary(alone, ["token", "--min-ttl", "2h"], environment: key)
        #expect(needsRefresh.status == 66)
        #expect(needsRefresh.stderrText.contains("needs vault-oauth"))
        let signedOut = try sandbox.runBinary(alone, ["signout"], environment: key)
        #expect(signedOut.status == 0, "\(signedOut.stderrText)")
        #expect(signedOut.stderrText.contains("not revoked"))
        #expect(signedOut.stderrText.contains("vault-oauth"))
        let status = try sandbox.runBinary(alone, ["status", "--json"], environment: key)
        #expect(status.stdoutText.contains("\"guest\""), "\(status.stdoutText)")
    }

    /// A copy of vault installed as vault-oauth would hand the command on for ever; it stops.
    @Test func aHelperThatIsNotTheHelperDoesNotLoop() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let alone = try Self.vaultAlone(in: sandbox)
        try FileManager.default.copyItem(atPath: alone, toPath: sandbox.path("bin/vault-oauth"))
        let result = try sandbox.runBinary(alone, ["signin", "--device", "--issuer", "http://127.0.0.1:9", "--client-id", "app"],
                                           environment: key, timeout: 30)
        #expect(result.status == 66)
        #expect(result.stderrText.contains("vault-oauth handed the command back"), "\(result.stderrText)")
    }

    // MARK: Helpers others could have planted (issue 25, point 1)

    static let deviceSignIn = ["signin", "--device", "--issuer", "http://127.0.0.1:9", "--client-id", "app"]

    static func copyOAuthHelper(to path: String) throws {
        let installed = URL(fileURLWithPath: try CLIBinary.path()).deletingLastPathComponent()
        try FileManager.default.copyItem(atPath: installed.appendingPathComponent("vault-oauth").path, toPath: path)
    }

    /// A helper writable by others, or in a folder writable by group, is refused (77) before it runs.
    @Test func aHelperOthersCanWriteIsRefused() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let alone = try Self.vaultAlone(in: sandbox)
        let helper = sandbox.path("bin/vault-oauth")
        try Self.copyOAuthHelper(to: helper)
        chmod(helper, 0o757)
        let writable = try sandbox.runBinary(alone, Self.deviceSignIn, environment: key, timeout: 30)
        #expect(writable.status == 77, "\(writable.stderrText)")
        #expect(writable.stderrText.contains("vault-oauth is not run") && writable.stderrText.contains("written by group or others"),
                "\(writable.stderrText)")
        chmod(helper, 0o755)
        chmod(sandbox.path("bin"), 0o775)
        let folder = try sandbox.runBinary(alone, Self.deviceSignIn, environment: key, timeout: 30)
        #expect(folder.status == 77, "\(folder.stderrText)")
        #expect(folder.stderrText.contains(sandbox.path("bin")), "names the folder: \(folder.stderrText)")
        chmod(sandbox.path("bin"), 0o755)
        let safe = try sandbox.runBinary(alone, Self.deviceSignIn, environment: key, timeout: 60)
        #expect(safe.status == 69, "the same helper, made safe, runs and finds no server: \(safe.stderrText)")
    }

    /// The attack: `vault` in a folder of its own directly under a shared sticky folder (as /tmp),
    /// where another user made `lib/vault/vault-oauth`. Refused; a helper beside `vault` still runs.
    @Test(.enabled(if: geteuid() == 0)) func aHelperAnotherUserPlantedUnderASharedFolderIsRefused() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let shared = sandbox.path("shared")
        try FileManager.default.createDirectory(atPath: shared + "/x", withIntermediateDirectories: true)
        chmod(shared, 0o1777)
        chmod(shared + "/x", 0o755)
        let vault = shared + "/x/vault"
        try FileManager.default.copyItem(atPath: try CLIBinary.path(), toPath: vault)
        // Another user (nobody, 65534) plants ../lib/vault/vault-oauth.
        try FileManager.default.createDirectory(atPath: shared + "/lib/vault", withIntermediateDirectories: true)
        try Self.copyOAuthHelper(to: shared + "/lib/vault/vault-oauth")
        for path in [shared + "/lib", shared + "/lib/vault", shared + "/lib/vault/vault-oauth"] { chown(path, 65534, 65534) }
        let planted = try sandbox.runBinary(vault, Self.deviceSignIn, environment: key, timeout: 30)
        #expect(planted.status == 77, "\(planted.stderrText)")
        #expect(planted.stderrText.contains("belongs to another user"), "\(planted.stderrText)")
        // Its own folder under the shared one is safe: a helper beside vault runs.
        try Self.copyOAuthHelper(to: shared + "/x/vault-oauth")
        let beside = try sandbox.runBinary(vault, Self.deviceSignIn, environment: key, timeout: 60)
        #expect(beside.status == 69, "\(beside.stderrText)")
    }
}
