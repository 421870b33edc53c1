import Foundation
import Testing

/// `vault` links neither the OAuth client's HTTP stack nor the PostgreSQL driver; the commands
/// that need them run in `vault-oauth` and `vault-postgres` (docs/ARCHITECTURE.md, "Helper
/// executables"). These tests read the built binaries and run `vault` without its helpers.
@Suite struct HelperExecutableTests {
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
}
