import CredentialVault
import CredentialVaultOAuth
import Foundation
import OAuthServerSupport
import Testing
import TestScheduling
import VaultCrypto

/// DPoP (RFC 9449) against a token endpoint and a resource that check every proof with
/// jwcrypto, a JOSE library vault did not write (the stand-in's /dpop; django-oauth-toolkit has
/// no DPoP): proofs, the nonce dance, binding, `ath`, and refusals.
@Suite("DPoP: sender-constrained tokens", .blockingWork, .enabled(if: OAuthServer.shouldRun), .serialized)
struct DPoPTests {
    func client(_ server: OAuthServer, key: P256SigningKey) throws -> OAuthClient {
        try OAuthClient(configuration: OAuthConfiguration(
            issuer: nil, endpoints: OAuthEndpoints(token: try server.standIn.appendingPathComponent("dpop/token")),
            clientID: "vault-dpop", retry: RetryPolicy(baseDelay: .milliseconds(50)), dpopKey: key))
    }

    var resource: URL { get throws { try OAuthServer.require().standIn.appendingPathComponent("dpop/resource") } }

    @Test("a refresh carries a proof; use_dpop_nonce is answered by one retry with the nonce; the token is DPoP and works only with a proof of the same key")
    func refreshAndUse() async throws {
        let server = try OAuthServer.require()
        let key = try P256SigningKey()
        let client = try client(server, key: key)
        // Other suites use the stand-in at the same time: this key's entries are told apart by
        // their thumbprint, which jwcrypto computes from the proof (and must equal vault's).
        let thumbprint = try DPoPProof.thumbprint(of: key)
        func mine() throws -> [(endpoint: String, ok: Bool, why: String?, jkt: String?)] { try server.dpopLog().filter { $0.jkt == thumbprint } }
        let credentials = try await client.refresh(secret("seed-\(UUID().uuidString)"))
        #expect(credentials.tokenType == "DPoP")
        // The first request had no nonce (refused: use_dpop_nonce), the retry had it.
        #expect(try mine().map(\.ok) == [false, true])
        #expect(try mine().first?.why == "nonce")
        // The next refresh sends the nonce it learned at once: one request.
        let again = try await client.refresh(try #require(credentials.refreshToken))
        #expect(try mine().count == 3)

        let token = again.accessToken.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
        let proof = try DPoPProof.make(key: key, method: "GET", url: try resource, accessToken: again.accessToken)
        #expect(try server.dpopResourceStatus(headers: "Authorization: DPoP \(token)\nDPoP: \(proof)\n") == 200)
        // The same proof again (a replayed jti), another key's proof, a proof for POST, no ath,
        // and the token as a bearer token are all refused by the resource.
        #expect(try server.dpopResourceStatus(headers: "Authorization: DPoP \(token)\nDPoP: \(proof)\n") == 401)
        let otherKey = try DPoPProof.make(key: try P256SigningKey(), method: "GET", url: try resource, accessToken: again.accessToken)
        #expect(try server.dpopResourceStatus(headers: "Authorization: DPoP \(token)\nDPoP: \(otherKey)\n") == 401)
        let post = try DPoPProof.make(key: key, method: "POST", url: try resource, accessToken: again.accessToken)
        #expect(try server.dpopResourceStatus(headers: "Authorization: DPoP \(token)\nDPoP: \(post)\n") == 401)
        let noAth = try DPoPProof.make(key: key, method: "GET", url: try resource)
        #expect(try server.dpopResourceStatus(headers: "Authorization: DPoP \(token)\nDPoP: \(noAth)\n") == 401)
        #expect(try server.dpopResourceStatus(headers: "Authorization: Bearer \(token)\n") == 401)
    }

    @Test("a refresh token bound to one key is refused with another (invalid_grant)")
    func boundRefreshToken() async throws {
        let server = try OAuthServer.require()
        let first = try await client(server, key: try P256SigningKey()).refresh(secret("seed-\(UUID().uuidString)"))
        let refresh = try #require(first.refreshToken)
        let error = await #expect(throws: OAuthError.self) { try await client(server, key: try P256SigningKey()).refresh(refresh) }
        #expect(error?.kind == .invalidGrant)
    }

    @Test("the proof: typ dpop+jwt, ES256, the public jwk only, htu without query or fragment, a fresh jti, ath and nonce when given")
    func proofShape() throws {
        let key = try P256SigningKey()
        let url = try #require(URL(string: "https://api.example.com:8443/orders/7?expand=items#top"))
        let proof = try DPoPProof.make(key: key, method: "PATCH", url: url, accessToken: secret("token-1"), nonce: "n-1")
        let second = try DPoPProof.make(key: key, method: "PATCH", url: url)
        let decoded = try JWT.decode(secret(proof))
        #expect(decoded.header["typ"]?.stringValue == "dpop+jwt")
        #expect(decoded.header["alg"]?.stringValue == "ES256")
        guard case .object(let jwk)? = decoded.header["jwk"] else {
            Issue.record("no jwk")
            return
        }
        #expect(Set(jwk.keys) == ["kty", "crv", "x", "y"])
        #expect(decoded.claims["htm"]?.stringValue == "PATCH")
        #expect(decoded.claims["htu"]?.stringValue == "https://api.example.com:8443/orders/7")
        #expect(decoded.claims["nonce"]?.stringValue == "n-1")
        let expectedAth = Data(try SHA256.hash(Array("token-1".utf8))).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        #expect(decoded.claims["ath"]?.stringValue == expectedAth)
        #expect(decoded.claims["jti"] != (try JWT.decode(secret(second))).claims["jti"])
        // The signature verifies with the public key the proof carries.
        let parts = proof.split(separator: ".")
        let signature = try #require(Data(base64Encoded: String(parts[2]).replacingOccurrences(of: "-", with: "+")
            .replacingOccurrences(of: "_", with: "/").padding(toLength: (parts[2].count + 3) / 4 * 4, withPad: "=", startingAt: 0)))
        #expect(try key.publicKey.isValidSignature(Array(signature), of: Array((parts[0] + "." + parts[1]).utf8), algorithm: .es256))
        // A method or nonce that could break a header line is refused.
        #expect(throws: VaultError.self) { try DPoPProof.make(key: key, method: "GET\r\nX: y", url: url) }
        #expect(throws: VaultError.self) { try DPoPProof.make(key: key, method: "GET", url: url, nonce: "a\nb") }
    }
}
