import CredentialVault
import FoundationEssentials
import NIOHTTP1
import VaultCrypto

extension OAuthClient {
    /// Starts a device sign-in (RFC 8628 §3.1) with the configured scopes.
    /// - Throws: `OAuthError`; `.transient` when the answer lacks a member RFC 8628 requires.
    public func startDeviceAuthorization() async throws -> DeviceAuthorization {
        let url = try await endpoint(\.deviceAuthorization, "device authorization endpoint")
        let name = "device authorization endpoint \(Self.display(url))"
        var form = FormBody()
        if !configuration.scopes.isEmpty { form.append("scope", configuration.scopes.joined(separator: " ")) }
        let response = try await post(url, name: "device authorization endpoint", form: form, retry: .idempotent)
        guard case .object(let members)? = try? JSONValue(parsing: response.body),
              let deviceCode = members["device_code"]?.stringValue, !deviceCode.isEmpty,
              let userCode = members["user_code"]?.stringValue, !userCode.isEmpty,
              let verification = members["verification_uri"]?.stringValue ?? members["verification_url"]?.stringValue,
              let expiresIn = members["expires_in"]?.doubleValue, expiresIn > 0, expiresIn < 86_400 * 366
        else {
            throw OAuthError(.transient, endpoint: name, status: response.status,
                             detail: "the answer is not a device authorization response")
        }
        let interval = members["interval"]?.doubleValue.map { max(1, min($0, 600)) } ?? 5
        return DeviceAuthorization(userCode: ServerText.sanitized(userCode), verificationURI: ServerText.sanitized(verification),
                                   verificationURIComplete: members["verification_uri_complete"]?.stringValue.map(ServerText.sanitized),
                                   expiresAt: Date().addingTimeInterval(expiresIn),
                                   interval: .milliseconds(Int(interval * 1000)),
                                   deviceCode: SecureBytes(copying: Array(deviceCode.utf8)))
    }

    /// Polls the token endpoint until the user approves (RFC 8628 §3.4–3.5): waits `interval`
    /// before every poll, adds 5 s to it after each `slow_down` for all later polls, and never
    /// asks again sooner (an `authorization_pending` or `slow_down` answer is not retried
    /// within the poll), until the device code expires.
    /// - Returns: the tokens.
    /// - Throws: `OAuthError` `.accessDenied`, `.expiredToken` (also when the code's lifetime
    ///   passes with no answer), or any other non-transient error.
    public func pollDeviceAuthorization(_ authorization: DeviceAuthorization) async throws -> Credentials {
        let url = try await endpoint(\.token, "token endpoint")
        let name = "token endpoint \(Self.display(url))"
        var interval = authorization.interval
        // The wait before the next poll: `interval`, doubled after each failed exchange
        // (RFC 8628 §3.5's backoff on timeouts) up to a minute, back to `interval` on an answer.
        var wait = interval
        // Bounded in time by the code's expiry and in count by what that allows at 1 poll/s.
        let maximumPolls = Int(max(1, authorization.expiresAt.timeIntervalSinceNow)) + 2
        for _ in 0..<maximumPolls {
            guard Date().addingTimeInterval(RetryPolicy.seconds(wait)) < authorization.expiresAt else { break }
            try await Task.sleep(for: wait)
            var form = FormBody()
            form.append("grant_type", "urn:ietf:params:oauth:grant-type:device_code")
            form.append("device_code", secret: authorization.deviceCode)
            do {
                let response = try await post(url, name: "token endpoint", form: form, retry: .never)
                return try Self.credentials(from: response, endpoint: name)
            } catch let error as OAuthError {
                switch error.serverError {
                case "authorization_pending":
                    wait = interval
                case "slow_down":
                    interval += .seconds(5)
                    wait = interval
                default:
                    if error.kind != .transient { throw error }
                    wait = min(max(wait * 2, interval), max(interval, .seconds(60)))
                }
            }
        }
        throw OAuthError(.expiredToken, endpoint: name, detail: "the device code expired before the user approved it")
    }

    /// The user id (`sub`): from the ID token when the token endpoint sent one, once its
    /// signature and claims are verified (`verifyIDToken`; a token that fails is an error, never
    /// skipped), else from the userinfo endpoint. Without a configured issuer an ID token cannot
    /// be verified, so it is not used.
    /// - Returns: the subject, or nil when neither source has one.
    /// - Throws: `OAuthError` `.verificationFailed` for an ID token that fails a check.
    public func subject(of credentials: Credentials, nonce: String? = nil) async throws -> String? {
        if configuration.issuer != nil, let verified = try await verifiedIdentity(of: credentials, nonce: nonce) {
            return verified.subject
        }
        return try await userInfo(of: credentials)?.subject
    }

    /// What the userinfo endpoint (OpenID Connect Core §5.3) says of the user the access token
    /// of `credentials` belongs to: `sub`, and `name` and `email` when it has them.
    /// - Returns: nil when the server has no userinfo endpoint or its answer names no subject.
    package func userInfo(of credentials: Credentials) async throws -> (subject: String, name: String?, email: String?)? {
        guard let url = try await optionalEndpoint(\.userinfo, "userinfo endpoint") else { return nil }
        var headers = HTTPHeaders()
        let token = credentials.accessToken.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
        var proof: (@Sendable () throws -> HTTPHeaders)?
        if let key = configuration.dpopKey, credentials.tokenType.lowercased() == "dpop" {
            headers.add(name: "Authorization", value: "DPoP " + token)
            proof = dpopProof(key: key, method: "GET", url: url, accessToken: credentials.accessToken)
        } else {
            headers.add(name: "Authorization", value: "Bearer " + token)
        }
        let response = try await exchange(url, name: "userinfo endpoint", method: .GET, headers: headers, body: nil,
                                          retry: .idempotent, perAttempt: proof)
        guard case .object(let members)? = try? JSONValue(parsing: response.body),
              let subject = members["sub"]?.stringValue, !subject.isEmpty else { return nil }
        return (subject, members["name"]?.stringValue, members["email"]?.stringValue)
    }
}
