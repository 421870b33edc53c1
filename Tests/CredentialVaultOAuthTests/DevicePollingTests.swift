import CredentialVault
import CredentialVaultOAuth
import Foundation
import OAuthServerSupport
import Testing
import VaultCrypto

/// RFC 8628 §3.5 against a server that counts the gap between polls (the stand-in's device
/// grant, started by scripts/oauth-server beside the real server): django-oauth-toolkit never
/// answers `slow_down`, so the gaps after it are measured here.
@Suite("Device grant polling keeps the server's interval", .enabled(if: OAuthServer.shouldRun))
struct DevicePollingTests {
    @Test("waits the interval before every poll, 5 s more after each slow_down from then on, and never asks again at once")
    func gapsBetweenPolls() async throws {
        let server = try OAuthServer.require()
        let base = try server.standIn
        let client = try OAuthClient(configuration: OAuthConfiguration(
            issuer: base,
            endpoints: OAuthEndpoints(token: base.appendingPathComponent("device/token"),
                                      deviceAuthorization: base.appendingPathComponent("device/authorize")),
            clientID: "vault-device", retry: RetryPolicy(baseDelay: .milliseconds(50))))
        defer { Task { try? await client.shutdown() } }

        let authorization = try await client.startDeviceAuthorization()
        #expect(authorization.interval == .seconds(1))
        let credentials = try await client.pollDeviceAuthorization(authorization)
        let accessToken = credentials.accessToken.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
        #expect(accessToken.hasPrefix("standin-access-dc-"))
        let deviceCode = String(accessToken.dropFirst("standin-access-".count))

        // pending, slow_down, pending, slow_down, tokens: one request per answer, no retries.
        let polls = try server.standInPolls(deviceCode: deviceCode)
        #expect(polls.map(\.answer) == ["authorization_pending", "slow_down", "authorization_pending", "slow_down", "tokens"])
        let gaps = zip(polls.dropFirst(), polls).map { $0.at - $1.at }
        // Before the first slow_down: the interval (1 s); after it: 6 s, kept after the next
        // pending; after the second: 11 s. Each gap is at least that (no upper bound: a loaded
        // test process wakes late, and later is allowed).
        let expected: [Double] = [1, 6, 6, 11]
        #expect(gaps.count == expected.count)
        for (gap, least) in zip(gaps, expected) {
            #expect(gap >= least - 0.05, "a poll came \(gap) s after the previous one; the interval was \(least) s")
        }
    }
}
