#if canImport(Glibc)
import Glibc
#endif
import CredentialVault
import CredentialVaultOAuth
import Foundation
import OAuthServerSupport
import Testing
import TestScheduling
import VaultCrypto

/// `vault token` through `vault agent` against the real authorization server: the commands are given
/// no key at all; the agent holds the vault, `vault-oauth` calls the server and hands the new pair
/// to the agent; eight at once refresh once; a refresh token the server rejects ends the session
/// through the agent.
@Suite("vault token through the agent, against the real server", .blockingWork, .enabled(if: OAuthServer.shouldRun), .serialized)
struct AgentTokenCLITests {
    /// A session folder with a running agent (socket in a 0700 folder of the session folder).
    final class World: @unchecked Sendable {
        let folder: SessionFolder
        let socket: String
        let agent: Process

        init() throws {
            folder = try SessionFolder()
            let socketFolder = folder.path + "/agent"
            try FileManager.default.createDirectory(atPath: socketFolder, withIntermediateDirectories: false,
                                                    attributes: [.posixPermissions: 0o700])
            socket = socketFolder + "/agent.sock"
            agent = Process()
            agent.executableURL = URL(fileURLWithPath: try BuiltProducts.path(of: "vault"))
            agent.arguments = ["agent"]
            agent.environment = ["VAULT_AGENT_SOCK": socket, "PATH": "/usr/bin:/bin"]
            agent.standardInput = FileHandle.nullDevice
            agent.standardOutput = FileHandle.nullDevice
            agent.standardError = FileHandle.nullDevice
            try agent.run()
            let deadline = Date().addingTimeInterval(20)
            while !FileManager.default.fileExists(atPath: socket), Date() < deadline { usleep(10_000) }
            guard FileManager.default.fileExists(atPath: socket) else { throw ServerFailure("the agent did not start") }
        }

        /// Runs `vault` with the key file (`withKey`) or with nothing but the agent.
        func run(_ arguments: [String], withKey: Bool, input: Data = Data()) throws -> VaultRun {
            var environment = ["VAULT_DIR": folder.path + "/vault", "VAULT_AGENT_SOCK": socket, "PATH": "/usr/bin:/bin"]
            if withKey { environment["VAULT_KEY_FILE"] = folder.keyPath }
            return try vaultRun(arguments, environment: environment, input: input)
        }

        deinit {
            if agent.isRunning { kill(agent.processIdentifier, SIGKILL) }
            agent.waitUntilExit()
            folder.cleanUp()
        }
    }

    @Test("8 × vault token at once with no key: one refresh grant, the new pair saved through the agent")
    func refreshThroughTheAgent() async throws {
        let server = try OAuthServer.require()
        let world = try World()
        #expect(try world.run(["init", "--no-agent"], withKey: true).status == 0)
        let client = try world.run(["client", "--no-agent", "--issuer", try server.issuer.absoluteString,
                                    "--client-id", try server.string("confidential_client_id"), "--auth", "basic",
                                    "--secret-file", try server.string("confidential_secret_file")], withKey: true)
        #expect(client.status == 0, "\(client.stderr)")
        var response = try #require(try JSONSerialization.jsonObject(with: Data(try server.script(["password-grant", server.directory, "read"])))
                                    as? [String: Any])
        response["expires_in"] = 1
        let firstRefresh = SecureBytes(copying: Array(try #require(response["refresh_token"] as? String).utf8))
        let signin = try world.run(["signin", "--no-agent", "--user-id", "alice"], withKey: true,
                                   input: try JSONSerialization.data(withJSONObject: response))
        #expect(signin.status == 0, "\(signin.stderr)")

        // While the agent does not hold the vault, there is no key.
        let locked = try world.run(["token"], withKey: false)
        #expect(locked.status == 64 && locked.stderr.contains("no key for the vault"), "\(locked.stderr)")
        let unlock = try world.run(["unlock", "--key-file", world.folder.keyPath], withKey: false)
        #expect(unlock.status == 0, "\(unlock.stderr)")
        try await Task.sleep(for: .milliseconds(1500))   // past the 1 s token's expiry

        let runs = try await withThrowingTaskGroup(of: VaultRun.self) { group in
            for _ in 0..<8 { group.addTask { try world.run(["token"], withKey: false) } }
            var all: [VaultRun] = []
            for try await run in group { all.append(run) }
            return all
        }
        for run in runs { #expect(run.status == 0, "\(run.stderr)") }
        #expect(Set(runs.map(\.stdout)).count == 1, "every process got the same fresh token")
        let record = try server.records(of: firstRefresh)
        #expect(record.refreshGrants == 1)
        #expect(record.liveInFamily == 1)

        // Saved: the vault opened directly holds the new pair, and the refresh journal is closed.
        let fresh = try #require(runs.first?.stdout)
        let stored = try #require(await (try world.folder.session(leeway: .seconds(-86_400))).restore().credentials)
        #expect(stored.accessToken == SecureBytes(copying: Array(fresh)))
        #expect(stored.refreshToken != firstRefresh)
        let profile = try String(contentsOfFile: world.folder.path + "/vault/profile.json", encoding: .utf8)
        #expect(!profile.contains("refreshInFlight"), "\(profile)")

        // The server now rejects the refresh token: a token that must outlive the server's lifetime
        // asks for a refresh, gets invalid_grant, and the session ends through the agent.
        try await server.confidentialClient().revoke(try #require(stored.refreshToken), hint: "refresh_token")
        let rejected = try world.run(["token", "--min-ttl", "100d"], withKey: false)
        #expect(rejected.status == 77, "\(rejected.stderr)")
        #expect(rejected.stderr.contains("invalid_grant"), "\(rejected.stderr)")
        let after = await (try world.folder.session()).restore()
        #expect(after.name == "guest")
        let left = try world.run(["list", "--json"], withKey: false)
        #expect(left.status == 0, "\(left.stderr)")
        #expect(!String(decoding: left.stdout, as: UTF8.self).contains("user:alice"), "the credentials are gone")
    }
}

/// Runs the built `vault` with exactly `environment`.
func vaultRun(_ arguments: [String], environment: [String: String], input: Data = Data()) throws -> VaultRun {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: try BuiltProducts.path(of: "vault"))
    process.arguments = arguments
    process.environment = environment
    let stdin = Pipe(), stdout = Pipe(), stderr = Pipe()
    process.standardInput = stdin
    process.standardOutput = stdout
    process.standardError = stderr
    try process.run()
    stdin.fileHandleForWriting.write(input)
    try stdin.fileHandleForWriting.close()
    let errors = Collected()
    let reader = Thread { _ = errors.append(stderr.fileHandleForReading.readDataToEndOfFile()) }
    reader.start()
    let out = stdout.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    while !reader.isFinished { usleep(1_000) }
    return VaultRun(status: process.terminationStatus, stdout: out, stderr: errors.append(Data()))
}
