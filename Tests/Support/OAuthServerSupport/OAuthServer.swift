import CredentialVault
import CredentialVaultOAuth
import Foundation
import Testing
import TestScheduling
import VaultCrypto

/// Test support shared by the OAuth suites (CredentialVaultOAuthTests, VaultOAuthCLITests,
/// CredentialVaultPostgresTests' fleet refresh test).
///
/// The real authorization server (django-oauth-toolkit) that `scripts/oauth-server` started:
/// its folder comes in `VAULT_OAUTH_SERVER` (scripts/test sets it). Without it the suites
/// skip on a developer machine and fail under CI=true.
package struct OAuthServer: Sendable {
    package static let folder = ProcessInfo.processInfo.environment["VAULT_OAUTH_SERVER"]
    /// Run the suites: a server is there, or this is CI (where a missing one must fail).
    package static let shouldRun = folder != nil || ProcessInfo.processInfo.environment["CI"] == "true"

    package static var repositoryRoot: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().path
    }

    package let facts: [String: JSONValue]
    package let directory: String

    /// The running server, or a failure naming why there is none.
    package static func require() throws -> OAuthServer {
        guard let folder else {
            throw ServerFailure("no OAuth server: VAULT_OAUTH_SERVER is not set (run the tests through scripts/test, "
                                + "or scripts/oauth-server run -- swift test)")
        }
        let data = try Data(contentsOf: URL(fileURLWithPath: folder).appendingPathComponent("server.json"))
        guard case .object(let facts) = try JSONValue(parsing: data) else { throw ServerFailure("server.json is not an object") }
        return OAuthServer(facts: facts, directory: folder)
    }

    package func string(_ key: String) throws -> String {
        guard let value = facts[key]?.stringValue else { throw ServerFailure("server.json lacks \(key)") }
        return value
    }

    package func url(_ key: String) throws -> URL {
        guard let url = URL(string: try string(key)) else { throw ServerFailure("\(key) is not a URL") }
        return url
    }

    package var issuer: URL { get throws { try url("issuer") } }
    package var tokenEndpoint: URL { get throws { try url("token_endpoint") } }
    package var standIn: URL { get throws { try url("standin") } }
    package var userID: String { get throws { try string("user_id") } }

    package func secret(_ role: String) throws -> SecureBytes {
        let text = try String(contentsOfFile: try string(role + "_secret_file"), encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        return SecureBytes(copying: Array(text.utf8))
    }

    /// A client of the public device app (discovery from the issuer).
    package func deviceClient(scopes: [String] = ["openid", "read"], retry: RetryPolicy = RetryPolicy(baseDelay: .milliseconds(50))) throws -> OAuthClient {
        // django-oauth-toolkit lists its device endpoint in neither metadata document: configured here.
        try OAuthClient(configuration: OAuthConfiguration(
            issuer: issuer, endpoints: OAuthEndpoints(deviceAuthorization: try url("device_authorization_endpoint")),
            clientID: try string("device_client_id"), scopes: scopes, retry: retry))
    }

    /// A client of the confidential app.
    package func confidentialClient(post: Bool = false) throws -> OAuthClient {
        let secret = try secret("confidential")
        return try OAuthClient(configuration: OAuthConfiguration(
            issuer: issuer, clientID: try string("confidential_client_id"),
            authentication: post ? .clientSecretPost(secret) : .clientSecretBasic(secret)))
    }

    /// Runs scripts/oauth-server with `arguments`, `input` on stdin; returns stdout.
    package func script(_ arguments: [String], input: SecureBytes? = nil,
                        sourceLocation: SourceLocation = #_sourceLocation) throws -> [UInt8] {
        BlockingWait.check("waiting for scripts/oauth-server \(arguments.first ?? "")", sourceLocation: sourceLocation)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.repositoryRoot + "/scripts/oauth-server")
        process.arguments = arguments
        let output = Pipe(), stdin = Pipe()
        process.standardOutput = output
        process.standardInput = stdin
        try process.run()
        if let input { input.withUnsafeBytes { stdin.fileHandleForWriting.write(Data($0)) } }
        try stdin.fileHandleForWriting.close()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw ServerFailure("scripts/oauth-server \(arguments.first ?? "") exited \(process.terminationStatus)")
        }
        return Array(data)
    }

    /// The user's browser approving (or denying) the device code.
    package func approve(_ authorization: DeviceAuthorization, deny: Bool = false) throws {
        _ = try script(["approve", directory, authorization.userCode] + (deny ? ["--deny"] : []))
    }

    /// An ID token signed by the stand-in issuer (jwcrypto): `order` is {"alg", "claims", "key", "header"}.
    package func signedByStandIn(_ order: [String: Any]) throws -> SecureBytes {
        let body = try JSONSerialization.data(withJSONObject: order)
        guard case .object(let members) = try JSONValue(parsing: try script(["sign", directory], input: SecureBytes(copying: Array(body)))),
              let token = members["token"]?.stringValue else { throw ServerFailure("sign: no token") }
        return SecureBytes(copying: Array(token.utf8))
    }

    /// The HTTP status of a GET of the stand-in's DPoP resource with these header lines.
    package func dpopResourceStatus(headers: String) throws -> Int {
        let output = try script(["resource", directory], input: SecureBytes(copying: Array(headers.utf8)))
        return Int(String(decoding: output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
    }

    /// The resources the stand-in's RFC 8707 token endpoint was asked for, in order, and whether it answered.
    package func audienceLog() throws -> [(resource: String?, ok: Bool)] {
        guard let data = FileManager.default.contents(atPath: directory + "/standin-audience.json"),
              case .array(let entries) = try JSONValue(parsing: data) else { return [] }
        return entries.compactMap { entry in
            guard case .object(let members) = entry, let ok = members["ok"]?.boolValue else { return nil }
            return (members["resource"]?.stringValue, ok)
        }
    }

    /// The DPoP proofs the stand-in checked: endpoint, whether it accepted, why not, and the
    /// RFC 7638 thumbprint (by jwcrypto) of the key whose signature verified.
    package func dpopLog() throws -> [(endpoint: String, ok: Bool, why: String?, jkt: String?)] {
        guard let data = FileManager.default.contents(atPath: directory + "/standin-dpop.json"),
              case .array(let entries) = try JSONValue(parsing: data) else { return [] }
        return entries.compactMap { entry in
            guard case .object(let members) = entry, let endpoint = members["endpoint"]?.stringValue,
                  let ok = members["ok"]?.boolValue else { return nil }
            return (endpoint, ok, members["why"]?.stringValue, members["jkt"]?.stringValue)
        }
    }

    /// The stand-in issuer (`/oidc`), whose ID tokens `signedByStandIn` makes.
    package var standInIssuer: URL { get throws { try standIn.appendingPathComponent("oidc") } }

    /// Tokens for the test user through the confidential client.
    package func passwordGrant(scope: String = "read") throws -> Credentials {
        try TokenResponse.parse(try script(["password-grant", directory, scope]), receivedAt: Date())
    }

    /// What the server's own database says of `token`.
    package func records(of token: SecureBytes) throws -> TokenRecord {
        guard case .object(let members) = try JSONValue(parsing: try script(["records", directory], input: token)) else {
            throw ServerFailure("records: not a JSON object")
        }
        return TokenRecord(kind: members["kind"]?.stringValue ?? "?", revoked: members["revoked"]?.boolValue ?? false,
                           refreshGrants: members["refresh_grants"]?.intValue,
                           liveInFamily: members["live_in_family"]?.intValue)
    }

    /// Waits (at most 5 s) until the server's access log has not grown for 200 ms: what a killed
    /// process had sent is then processed, as it would be long before a real next launch.
    package func waitUntilIdle() async throws {
        let log = directory + "/server.log"
        func size() -> Int { ((try? FileManager.default.attributesOfItem(atPath: log))?[.size] as? Int) ?? 0 }
        let deadline = ContinuousClock.now + .seconds(5)
        var last = size()
        while ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(200))
            let now = size()
            if now == last { return }
            last = now
        }
    }

    /// How many requests the stand-in got per mode ("500", "garbage", "slow").
    package func standInCounts() throws -> [String: Int] {
        let data = try Data(contentsOf: URL(fileURLWithPath: directory + "/standin-counts.json"))
        guard case .object(let members) = try JSONValue(parsing: data) else { return [:] }
        return members.compactMapValues { $0.intValue }
    }

    /// The polls the stand-in's device grant got for `deviceCode`: when each arrived (seconds
    /// on the server's monotonic clock) and what it answered.
    package func standInPolls(deviceCode: String) throws -> [(at: Double, answer: String)] {
        let data = try Data(contentsOf: URL(fileURLWithPath: directory + "/standin-polls.json"))
        guard case .object(let codes) = try JSONValue(parsing: data), case .array(let polls)? = codes[deviceCode] else {
            throw ServerFailure("the stand-in has no polls for \(deviceCode)")
        }
        return polls.compactMap { poll in
            guard case .array(let pair) = poll, pair.count == 2, let at = pair[0].doubleValue,
                  let answer = pair[1].stringValue else { return nil }
            return (at, answer)
        }
    }
}

/// A token as the server's database sees it.
package struct TokenRecord: Sendable {
    package var kind: String
    package var revoked: Bool
    package var refreshGrants: Int?
    package var liveInFamily: Int?
}

package struct ServerFailure: Error, CustomStringConvertible {
    package let description: String
    package init(_ description: String) { self.description = description }
}

/// A session folder with its own key file, removed at the end.
package struct SessionFolder {
    package let path: String
    package let keyPath: String

    package init() throws {
        path = NSTemporaryDirectory() + "vault-oauth-test-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        keyPath = path + "/test.key"
        try VaultKey.generateKeyFile(path: keyPath)
    }

    package func session(leeway: Duration = .zero) throws -> SessionManager {
        SessionManager(directory: path + "/vault", key: try VaultKey.fromKeyFile(path: keyPath),
                       configuration: SessionConfiguration(leeway: leeway, lockTimeout: .seconds(60)))
    }

    /// The folder's vault, opened directly.
    package func store() throws -> SecretStore {
        try SecretStore.open(in: path + "/vault", key: try VaultKey.fromKeyFile(path: keyPath))
    }

    package func cleanUp() { try? FileManager.default.removeItem(atPath: path) }
}

extension Credentials {
    /// The same tokens, expired a minute ago by our clock (the server still takes the access token).
    package var expiredLocally: Credentials {
        var copy = self
        copy.expiresAt = Date().addingTimeInterval(-60)
        return copy
    }

    /// The same tokens, valid for another hour by our clock: for a step about what a valid token
    /// does, so that a busy machine (tests in parallel on two cores can stall a task for longer
    /// than the server's 20 s access-token lifetime) does not turn it into a refresh.
    package var validLocally: Credentials {
        var copy = self
        copy.expiresAt = Date().addingTimeInterval(3600)
        return copy
    }
}


/// Locates an executable built next to the test bundle.
package enum BuiltProducts {
    package static func path(of name: String) throws -> String {
        var candidates: [URL] = []
        if let executable = Bundle.main.executableURL { candidates.append(executable.deletingLastPathComponent()) }
        candidates.append(Bundle.main.bundleURL)
        candidates.append(Bundle.main.bundleURL.deletingLastPathComponent())
        for directory in candidates {
            let candidate = directory.appendingPathComponent(name).path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        throw ServerFailure("cannot find the built product \(name) near \(candidates.map(\.path))")
    }
}

/// Runs one built worker as `processes` processes at once (each with `arguments`, the
/// confidential client's secret file in its environment) and returns each one's exit status
/// and trimmed output, in start order.
package enum ConcurrentWorkers {
    package static func run(_ name: String, processes: Int, arguments: [String], server: OAuthServer,
                            sourceLocation: SourceLocation = #_sourceLocation) throws -> [(status: Int32, output: String)] {
        BlockingWait.check("waiting for \(processes) \(name) processes", sourceLocation: sourceLocation)
        let worker = try BuiltProducts.path(of: name)
        var running: [(Process, Pipe)] = []
        for _ in 0..<processes {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: worker)
            process.arguments = arguments
            let output = Pipe()
            process.standardOutput = output
            process.standardError = output
            process.environment = ProcessInfo.processInfo.environment.merging(
                ["VAULT_OAUTH_CLIENT_SECRET_FILE": try server.string("confidential_secret_file")]) { $1 }
            try process.run()
            running.append((process, output))
        }
        return running.map { process, output in
            let data = output.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return (process.terminationStatus, String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
        }
    }
}
