import CredentialVault
import CredentialVaultOAuth
import Foundation
import OAuthServerSupport
import Testing
import TestScheduling
import VaultCrypto

/// ID token verification (OIDC Core §3.1.3.7) against an issuer whose tokens are signed by
/// jwcrypto, a JOSE library vault did not write (the stand-in's /oidc, started by
/// scripts/oauth-server): every accepted algorithm, and one test per check that must refuse.
/// Serialized: the key-rotation test counts the JWKS fetches.
@Suite("ID tokens are verified before they name the user", .blockingWork, .enabled(if: OAuthServer.shouldRun), .serialized)
struct IDTokenVerificationTests {
    static let clientID = "vault-app"

    func client(_ server: OAuthServer) throws -> OAuthClient {
        try OAuthClient(configuration: OAuthConfiguration(issuer: try server.standInIssuer, clientID: Self.clientID,
                                                          retry: RetryPolicy(baseDelay: .milliseconds(50))))
    }

    /// Claims that pass every check; a test changes one.
    func claims(_ server: OAuthServer, _ changes: [String: Any?] = [:]) throws -> [String: Any] {
        let now = Date().timeIntervalSince1970
        var claims: [String: Any] = ["iss": try server.standInIssuer.absoluteString, "sub": "user-42", "aud": Self.clientID,
                                     "exp": Int(now) + 300, "iat": Int(now), "nonce": "n-0S6_WzA2Mj", "name": "Ada", "email": "ada@example.com"]
        for (key, value) in changes { claims[key] = value }
        return claims
    }

    @Test("RS256, PS256, ES256 and EdDSA tokens verify; subject, name and email come from them",
          arguments: ["RS256", "PS256", "ES256", "EdDSA"])
    func acceptedAlgorithms(alg: String) async throws {
        let server = try OAuthServer.require()
        let token = try server.signedByStandIn(["alg": alg, "claims": try claims(server)])
        let verified = try await client(server).verifyIDToken(token, nonce: "n-0S6_WzA2Mj")
        #expect(verified.subject == "user-42")
        #expect(verified.name == "Ada" && verified.email == "ada@example.com")
        #expect(verified.algorithm.rawValue == alg)
        #expect(verified.audiences == [Self.clientID])
    }

    /// One refusal each: what is wrong, and the words the error must contain.
    static var refusals: [(String, [String: Any?], [String: Any], String)] { [
        ("another issuer", ["iss": "https://evil.example"], [:], "issuer (iss)"),
        ("an audience without this client", ["aud": "someone-else"], [:], "audience (aud)"),
        ("several audiences and no azp", ["aud": [clientID, "other"]], [:], "authorized party (azp)"),
        ("an azp that is another client", ["azp": "other"], [:], "authorized party (azp)"),
        ("expired beyond the skew", ["exp": Int(Date().timeIntervalSince1970) - 600], [:], "expired"),
        ("no exp", ["exp": nil], [:], "expiry (exp)"),
        ("issued in the future", ["iat": Int(Date().timeIntervalSince1970) + 600], [:], "issued in the future"),
        ("another nonce", ["nonce": "replayed"], [:], "nonce"),
        ("no nonce", ["nonce": nil], [:], "nonce"),
        ("no subject", ["sub": nil], [:], "subject (sub)"),
        ("alg none", [:], ["alg": "none"], "algorithm 'none'"),
        ("HS256 keyed with the issuer's public key", [:], ["alg": "HS256"], "algorithm 'HS256'"),
        ("a crit header", [:], ["header": ["crit": ["exp"], "exp": 1]], "critical"),
        ("a key the issuer never published", [:], ["alg": "ES256", "key": "unpublished"], "no key with key id 'ghost'"),
        ("an RSA kid on an ES256 token", [:], ["alg": "ES256", "header": ["kid": "rsa-1"]], "no key with key id 'rsa-1'"),
    ] }

    @Test("refused, with the check named", arguments: 0..<15)
    func refused(index: Int) async throws {
        #expect(Self.refusals.count == 15)
        let (what, changes, order, words) = Self.refusals[index]
        let server = try OAuthServer.require()
        var request: [String: Any] = ["alg": "RS256", "claims": try claims(server, changes)]
        for (key, value) in order { request[key] = value }
        let token = try server.signedByStandIn(request)
        let error = await #expect(throws: OAuthError.self, "\(what)") {
            try await client(server).verifyIDToken(token, nonce: "n-0S6_WzA2Mj")
        }
        #expect(error?.kind == .verificationFailed, "\(what)")
        #expect(error?.description.contains(words) == true, "\(what): \(error?.description ?? "")")
        // The message never carries the token.
        let text = token.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
        #expect(error?.description.contains(text.prefix(40)) == false)
    }

    @Test("a changed signature, payload or header is refused")
    func tampered() async throws {
        let server = try OAuthServer.require()
        let client = try client(server)
        let token = try server.signedByStandIn(["alg": "ES256", "claims": try claims(server)])
        let parts = token.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }.split(separator: ".").map(String.init)
        #expect(parts.count == 3)
        let otherClaims = try claims(server, ["sub": "admin"])
        let forgedPayload = Data(try JSONSerialization.data(withJSONObject: otherClaims)).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        var flipped = Array(parts[2])
        flipped[10] = flipped[10] == "A" ? "B" : "A"
        for forged in [parts[0] + "." + forgedPayload + "." + parts[2], parts[0] + "." + parts[1] + "." + String(flipped),
                       parts[0] + "." + parts[1] + "."] {
            let error = await #expect(throws: OAuthError.self) {
                try await client.verifyIDToken(SecureBytes(copying: Array(forged.utf8)), nonce: "n-0S6_WzA2Mj")
            }
            #expect(error?.kind == .verificationFailed)
        }
    }

    @Test("at_hash must match the access token issued with it (SHA-256; SHA-512 for EdDSA)", arguments: ["RS256", "EdDSA"])
    func atHash(alg: String) async throws {
        let server = try OAuthServer.require()
        let access = Array("access-token-issued-together".utf8)
        let digest = alg == "EdDSA" ? try SHA512.hash(access) : try SHA256.hash(access)
        let half = Data(digest.prefix(digest.count / 2)).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        let token = try server.signedByStandIn(["alg": alg, "claims": try claims(server, ["at_hash": half])])
        let client = try client(server)
        let verified = try await client.verifyIDToken(token, nonce: "n-0S6_WzA2Mj", accessToken: SecureBytes(copying: access))
        #expect(verified.subject == "user-42")
        let error = await #expect(throws: OAuthError.self) {
            try await client.verifyIDToken(token, nonce: "n-0S6_WzA2Mj", accessToken: SecureBytes(copying: Array("another".utf8)))
        }
        #expect(error?.description.contains("at_hash") == true)
    }

    @Test("a refreshed ID token keeps the first one's iss, sub and aud (OIDC Core §12.2); the skew allows a minute")
    func refreshConsistency() async throws {
        let server = try OAuthServer.require()
        let client = try client(server)
        let first = try await client.verifyIDToken(try server.signedByStandIn(["alg": "RS256", "claims": try claims(server)]))
        let recentlyExpired = try claims(server, ["exp": Int(Date().timeIntervalSince1970) - 60, "nonce": nil])
        let same = try await client.verifyIDToken(try server.signedByStandIn(["alg": "ES256", "claims": recentlyExpired]),
                                                  previous: first)
        #expect(same.subject == first.subject)
        let other = try server.signedByStandIn(["alg": "RS256", "claims": try claims(server, ["sub": "user-43", "nonce": nil])])
        let error = await #expect(throws: OAuthError.self) { try await client.verifyIDToken(other, previous: first) }
        #expect(error?.description.contains("§12.2") == true)
    }

    @Test("key rotation: an unknown kid fetches the JWKS again once, then verifies; a never-published kid fails after one fetch")
    func rotation() async throws {
        let server = try OAuthServer.require()
        let client = try client(server)
        _ = try await client.verifyIDToken(try server.signedByStandIn(["alg": "ES256", "claims": try claims(server)]), nonce: "n-0S6_WzA2Mj")
        let afterFirst = try server.standInCounts()["oidc-jwks"] ?? 0
        // Cached: a second token with a known kid costs no fetch.
        _ = try await client.verifyIDToken(try server.signedByStandIn(["alg": "RS256", "claims": try claims(server)]), nonce: "n-0S6_WzA2Mj")
        #expect(try server.standInCounts()["oidc-jwks"] == afterFirst)
        // The issuer rotates: the new kid is not in the cached set, so it is fetched once.
        let rotated = try server.signedByStandIn(["alg": "EdDSA", "key": "rotated", "claims": try claims(server)])
        #expect(try await client.verifyIDToken(rotated, nonce: "n-0S6_WzA2Mj").subject == "user-42")
        #expect(try server.standInCounts()["oidc-jwks"] == afterFirst + 1)
        // A kid that is nowhere: one more fetch, then refused (not a fetch per retry).
        let ghost = try server.signedByStandIn(["alg": "ES256", "key": "unpublished", "claims": try claims(server)])
        await #expect(throws: OAuthError.self) { try await client.verifyIDToken(ghost, nonce: "n-0S6_WzA2Mj") }
        #expect(try server.standInCounts()["oidc-jwks"] == afterFirst + 2)
    }
}
