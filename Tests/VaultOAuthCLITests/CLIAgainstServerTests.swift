import CredentialVault
import CredentialVaultOAuth
import Foundation
import OAuthServerSupport
import Testing
import TestScheduling
import VaultCrypto

/// One run of the built `vault` binary.
struct VaultRun {
    var status: Int32
    var stdout: Data
    var stderr: String
}

/// Runs `vault` with the folder's vault and key file; `onStderr` sees standard error as it comes.
func vault(_ arguments: [String], folder: SessionFolder, input: Data = Data(), environment: [String: String] = [:],
           onStderr: (@Sendable (String) -> Void)? = nil, sourceLocation: SourceLocation = #_sourceLocation) throws -> VaultRun {
    BlockingWait.check("waiting for vault \(arguments.first ?? "")", sourceLocation: sourceLocation)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: try BuiltProducts.path(of: "vault"))
    process.arguments = arguments
    process.environment = ["VAULT_DIR": folder.path + "/vault", "VAULT_KEY_FILE": folder.keyPath, "PATH": "/usr/bin:/bin"]
        .merging(environment) { $1 }
    let stdin = Pipe(), stdout = Pipe(), stderr = Pipe()
    process.standardInput = stdin
    process.standardOutput = stdout
    process.standardError = stderr
    let collected = Collected()
    try process.run()
    // Read as it comes by a thread of its own (PipeReader: a `readabilityHandler` can crash the
    // test process when several are torn down at once).
    // Collected whether or not someone watches (`onStderr?(collected.append(…))` would skip the append).
    let errors = PipeReader(stderr.fileHandleForReading) { data in
        let text = collected.append(data)
        onStderr?(text)
    }
    stdin.fileHandleForWriting.write(input)
    try stdin.fileHandleForWriting.close()
    let out = stdout.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    // Bounded: a program it started in the background may hold standard error open.
    if !errors.waitUntilFinished() {
        Issue.record("vault \(arguments.first ?? ""): standard error still open 60 s after it exited", sourceLocation: sourceLocation)
    }
    return VaultRun(status: process.terminationStatus, stdout: out, stderr: collected.append(Data()))
}

final class Collected: @unchecked Sendable {
    private let lock = NSLock()
    private var data = Data()
    func append(_ more: Data) -> String {
        lock.lock(); defer { lock.unlock() }
        data.append(more)
        return String(decoding: data, as: UTF8.self)
    }
}

final class OnceFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var claimed = false
    /// True the first time only.
    func claim() -> Bool {
        lock.lock(); defer { lock.unlock() }
        defer { claimed = true }
        return !claimed
    }
}

@Suite("vault CLI against the real server", .blockingWork, .enabled(if: OAuthServer.shouldRun))
struct CLIAgainstServerTests {
    /// `vault signin --device` with the device client, the code approved as soon as vault shows it.
    func deviceSignIn(_ folder: SessionFolder, _ server: OAuthServer) throws -> VaultRun {
        let approved = OnceFlag()
        return try vault(["signin", "--device", "--issuer", try server.issuer.absoluteString,
                          "--client-id", try server.string("device_client_id"), "--scope", "openid read",
                          "--device-endpoint", try server.string("device_authorization_endpoint")],
                         folder: folder) { text in
            guard let range = text.range(of: "enter the code "), text[range.upperBound...].contains("\n") else { return }
            let code = String(text[range.upperBound...].prefix { $0.isLetter || $0.isNumber || $0 == "-" })
            guard !code.isEmpty, approved.claim() else { return }
            _ = try? server.script(["approve", server.directory, code])
        }
    }

    @Test("signin --device stores the name and email the server gives (verified ID token, else userinfo): the library's sign-in, one copy of the flow")
    func deviceStoresVerifiedIdentity() throws {
        let server = try OAuthServer.require()
        let folder = try SessionFolder()
        defer { folder.cleanUp() }
        _ = try vault(["init"], folder: folder)
        let signin = try deviceSignIn(folder, server)
        #expect(signin.status == 0, "\(signin.stderr)")
        let status = try vault(["status", "--json"], folder: folder)
        guard case .object(let members) = try JSONValue(parsing: Array(status.stdout)) else {
            Issue.record("not JSON: \(status.stderr)")
            return
        }
        #expect(members["userId"]?.stringValue == (try server.userID))
        #expect(members["displayName"]?.stringValue == "Alice Example")
        #expect(members["email"]?.stringValue == "alice@example.test")
    }

    @Test("signin --device → token (no network while valid) → refresh rotates → signout revokes at the server")
    func deviceLifecycle() async throws {
        let server = try OAuthServer.require()
        let folder = try SessionFolder()
        defer { folder.cleanUp() }
        _ = try vault(["init"], folder: folder)
        _ = try vault(["guest"], folder: folder)
        let added = try vault(["add", "draft", "--guest"], folder: folder, input: Data("guest-draft".utf8))
        #expect(added.status == 0, "\(added.stderr)")
        let signin = try deviceSignIn(folder, server)
        #expect(signin.status == 0, "\(signin.stderr)")
        #expect(signin.stderr.contains("To sign in, open http://127.0.0.1:"))
        #expect(String(decoding: signin.stdout, as: UTF8.self).contains("draft"))   // moved from the guest

        // A valid token: printed without consulting the client at all (a forged client configuration
        // in the profile, which any use of the client would refuse as tampered, is not even read).
        let profilePath = folder.path + "/vault/profile.json"
        let original = try Data(contentsOf: URL(fileURLWithPath: profilePath))
        var forged = try #require(try JSONSerialization.jsonObject(with: original) as? [String: Any])
        forged["oauthClient"] = ["clientId": "x", "tokenEndpoint": "http://127.0.0.1:9/t"]
        try JSONSerialization.data(withJSONObject: forged).write(to: URL(fileURLWithPath: profilePath))
        let token = try vault(["token", "--leeway", "0s"], folder: folder)
        #expect(token.status == 0, "\(token.stderr)")
        #expect(!token.stdout.isEmpty)
        try original.write(to: URL(fileURLWithPath: profilePath))

        // A forced refresh rotates; the server's records show the old refresh token dead.
        // The stored pair, whatever its expiry: under a loaded full run a 20 s token can lapse
        // between these steps, and expiry is not what this test is about.
        let stored = { try folder.session(leeway: .seconds(-86_400)) }
        let first = try #require(await (try stored()).restore().credentials)
        let refresh = try vault(["refresh"], folder: folder)
        #expect(refresh.status == 0, "\(refresh.stderr)")
        let second = try #require(await (try stored()).restore().credentials)
        #expect(second.refreshToken != first.refreshToken)
        #expect(try server.records(of: try #require(first.refreshToken)).revoked)

        let signout = try vault(["signout"], folder: folder)
        #expect(signout.status == 0)
        #expect(signout.stderr.contains("revoked refresh_token, access_token"), "\(signout.stderr)")
        #expect(try server.records(of: try #require(second.refreshToken)).revoked)
    }

    @Test("an OAuth error piped to signin exits 76 and shows error_description escaped; nothing changes")
    func pipedError() throws {
        let folder = try SessionFolder()
        defer { folder.cleanUp() }
        let body = #"{"error":"access_denied","error_description":"The user said no\u001b[2J"}"#
        let run = try vault(["signin", "--user-id", "u1"], folder: folder, input: Data(body.utf8))
        #expect(run.status == 76)
        #expect(run.stderr.contains("access_denied: The user said no\\x1b[2J"))
        #expect(!run.stderr.contains("\u{1b}"))
        let profile = (try? String(contentsOfFile: folder.path + "/vault/profile.json", encoding: .utf8)) ?? ""
        #expect(!profile.contains("\"user\""))
    }

    @Test("a daemon: vault client --grant client_credentials (secret on stdin), then vault token fetches one")
    func daemon() throws {
        let server = try OAuthServer.require()
        let folder = try SessionFolder()
        defer { folder.cleanUp() }
        let secretText = try String(contentsOfFile: try server.string("daemon_secret_file"), encoding: .utf8)
        let store = try vault(["client", "--issuer", try server.issuer.absoluteString, "--client-id", try server.string("daemon_client_id"),
                               "--auth", "basic", "--grant", "client_credentials", "--scope", "read"],
                              folder: folder, input: Data(secretText.utf8))
        #expect(store.status == 0, "\(store.stderr)")
        let profile = (try? String(contentsOfFile: folder.path + "/vault/profile.json", encoding: .utf8)) ?? ""
        #expect(!profile.contains(secretText.trimmingCharacters(in: .whitespacesAndNewlines)))
        let token = try vault(["token", "--leeway", "0s"], folder: folder)
        #expect(token.status == 0, "\(token.stderr)")
        let access = SecureBytes(copying: token.stdout)
        #expect(try server.records(of: access).kind == "access")
        // Still valid: the same token again, without a new grant.
        let again = try vault(["token", "--leeway", "0s"], folder: folder)
        #expect(again.stdout == token.stdout)
    }

    @Test("vault refresh with the server down exits 69 and keeps the session")
    func refreshServerDown() async throws {
        let server = try OAuthServer.require()
        let folder = try SessionFolder()
        defer { folder.cleanUp() }
        let tokens = try server.script(["password-grant", server.directory, "read"])
        let signin = try vault(["signin", "--user-id", "alice"], folder: folder, input: Data(tokens))
        #expect(signin.status == 0, "\(signin.stderr)")
        let client = try vault(["client", "--token-endpoint", "http://127.0.0.1:9/o/token/", "--client-id", "vault-confidential"],
                               folder: folder)
        #expect(client.status == 0, "\(client.stderr)")
        let refresh = try vault(["refresh"], folder: folder)
        #expect(refresh.status == 69, "\(refresh.stderr)")
        #expect(refresh.stderr.contains("token endpoint http://127.0.0.1:9/o/token/"))
        let after = await (try folder.session()).restore()
        #expect(after.user?.id == "alice")   // kept (signedIn or expired by the 60 s leeway)
    }

    @Test("vault guest while someone is signed in: signed out, and the removed tokens revoked at the server")
    func guestRevokesTheSignedInUsersTokens() async throws {
        let server = try OAuthServer.require()
        let folder = try SessionFolder()
        defer { folder.cleanUp() }
        let tokens = try server.script(["password-grant", server.directory, "read"])
        #expect(try vault(["signin", "--user-id", "alice"], folder: folder, input: Data(tokens)).status == 0)
        let secret = try String(contentsOfFile: try server.string("confidential_secret_file"), encoding: .utf8)
        let client = try vault(["client", "--issuer", try server.issuer.absoluteString, "--client-id", "vault-confidential",
                                "--auth", "basic"], folder: folder, input: Data(secret.utf8))
        #expect(client.status == 0, "\(client.stderr)")
        let response = try #require(try JSONSerialization.jsonObject(with: Data(tokens)) as? [String: Any])
        let refreshToken = SecureBytes(copying: Array(try #require(response["refresh_token"] as? String).utf8))
        #expect(try !server.records(of: refreshToken).revoked)
        let guest = try vault(["guest"], folder: folder)
        #expect(guest.status == 0, "\(guest.stderr)")
        #expect(guest.stderr.contains("Signed out 'alice'"), "\(guest.stderr)")
        #expect(guest.stderr.contains("revoked"), "\(guest.stderr)")
        #expect(try server.records(of: refreshToken).revoked)
        #expect(!guest.stderr.contains(secret.trimmingCharacters(in: .whitespacesAndNewlines)))
        let after = await (try folder.session()).restore()
        #expect(after.name == "guest")
    }
}

extension CLIAgainstServerTests {
    /// Wall-clock bounds: run by scripts/test in a process of their own, one at a time (TimingTests).
    @Suite(.timing, .serialized) struct Timed {
        @Test("vault refresh --request-timeout: one deadline for the whole exchange, a trickled body included; exit 69, session kept")
        func refreshRequestTimeoutCoversTheBody() async throws {
            let server = try OAuthServer.require()
            let folder = try SessionFolder()
            defer { folder.cleanUp() }
            let tokens = try server.script(["password-grant", server.directory, "read"])
            #expect(try vault(["signin", "--user-id", "alice"], folder: folder, input: Data(tokens)).status == 0)
            let trickle = try server.standIn.appendingPathComponent("trickle/token").absoluteString
            #expect(try vault(["client", "--token-endpoint", trickle, "--client-id", "vault-confidential"], folder: folder).status == 0)
            let started = ContinuousClock.now
            let refresh = try vault(["refresh", "--request-timeout", "2s"], folder: folder)
            let elapsed = ContinuousClock.now - started
            #expect(refresh.status == 69, "\(refresh.stderr)")
            #expect(elapsed < .seconds(15), "took \(elapsed): the 28 s body was not cut off")
            #expect(try vault(["refresh", "--request-timeout", "0s"], folder: folder).status == 64)
            let after = await (try folder.session()).restore()
            #expect(after.user?.id == "alice")
        }
    }
}
