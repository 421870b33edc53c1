import FoundationEssentials
import VaultCrypto

/// A token whose revocation failed at sign-out, kept sealed in the vault so that it can be tried
/// again (as Auth0 keeps credentials until their revocation succeeds).
package struct PendingRevocation: Sendable {
    /// Its entry's name in the vault.
    package let id: String
    /// The token.
    package let token: SecureBytes
    /// "refresh_token" or "access_token".
    package let hint: String
    /// The authorization server it belongs to (its issuer, else its revocation endpoint), and the
    /// client it was issued to: it is only ever sent back to that server, by that client.
    package let server: String
    package let clientID: String
    /// When the revocation first failed.
    package let since: Date

    /// The one name of the server a pending revocation belongs to, for the client that keeps it and
    /// the client that tries it again: the issuer, else the revocation endpoint (as URLs write
    /// them); "" when there is neither, and such tokens are never kept (nothing could revoke them).
    package static func server(issuer: URL?, revocationEndpoint: URL?) -> String {
        (issuer ?? revocationEndpoint)?.absoluteString ?? ""
    }
}

/// Pending revocations live in the vault under an owner of their own, never listed as entries or
/// items, at most `pendingRevocationLimit` of them and none older than `pendingRevocationMaximumAge`
/// (the oldest go first); `wipe` removes them with the vault.
extension SessionManager {
    /// The owner of the pending revocations' entries.
    package static let pendingRevocationOwner = "revocation:pending"
    /// At most this many tokens wait for their revocation.
    package static let pendingRevocationLimit = 16
    /// A token older than this is no longer tried (it has expired at the server by then, or the server never will).
    package static let pendingRevocationMaximumAge: TimeInterval = 30 * 24 * 3600

    private struct PendingLabel: Codable {
        var hint: String
        var server: String
        var clientId: String
    }

    /// Keeps tokens whose revocation failed, to try again later. Nothing is kept without a vault
    /// key (the tokens are then only in the caller's report), in a fleet session, or without a
    /// `server` (`PendingRevocation.server(issuer:revocationEndpoint:)`) to send them back to.
    /// - Returns: whether they were kept.
    @discardableResult
    package func keepForRevocation(_ tokens: [(token: SecureBytes, hint: String)], server: String, clientID: String) async throws -> Bool {
        guard !tokens.isEmpty, !server.isEmpty, let vault = try await housekeepingVault() else { return false }
        let now = configuration.clock()
        var entries: [NewEntry] = []
        for (token, hint) in tokens {
            let label = try JSONEncoder().encode(PendingLabel(hint: hint, server: server, clientId: clientID))
            let name = "\(Int64(now.timeIntervalSince1970 * 1000))-\(try Self.randomHex(8))"
            entries.append(NewEntry(name: name, owner: Self.pendingRevocationOwner, secret: token,
                                    kind: hint == "refresh_token" ? .refreshToken : .accessToken,
                                    label: String(decoding: label, as: UTF8.self), transferable: false))
        }
        try vault.update { transaction in
            for entry in entries { try transaction.put(entry, replace: false) }
            Self.prunePendingRevocations(in: &transaction, now: now)
        }
        logger.notice("kept tokens whose revocation failed, to try again", metadata: ["tokens": "\(tokens.count)"])
        return true
    }

    /// Keeps the refresh and access tokens of `credentials` whose types (`"refresh_token"`,
    /// `"access_token"`) are not in `revoked`, for a later sign-out with a client of `server` and `clientID`.
    /// - Returns: how many tokens were kept.
    package func keepUnrevoked(_ credentials: Credentials, revoked: [String], server: String, clientID: String) async throws -> Int {
        let tokens = [(credentials.refreshToken, "refresh_token"), (Optional(credentials.accessToken), "access_token")]
            .compactMap { token, hint in token.map { (token: $0, hint: hint) } }.filter { !revoked.contains($0.hint) }
        return try await keepForRevocation(tokens, server: server, clientID: clientID) ? tokens.count : 0
    }

    /// The tokens waiting for their revocation, oldest first (expired ones are removed first).
    package func pendingRevocations() async throws -> [PendingRevocation] {
        guard let vault = try await housekeepingVault() else { return [] }
        let owner = Self.pendingRevocationOwner
        let now = configuration.clock()
        if try vault.snapshot({ view in view.list(owner: owner).contains { Self.isTooOld($0, now: now) } }) {
            try vault.update { Self.prunePendingRevocations(in: &$0, now: now) }
        }
        return try vault.snapshot { view in
            try view.list(owner: owner).sorted { $0.createdAt < $1.createdAt }.compactMap { metadata -> PendingRevocation? in
                guard let text = metadata.label,
                      let label = try? JSONDecoder().decode(PendingLabel.self, from: Data(text.utf8)) else { return nil }
                return PendingRevocation(id: metadata.name, token: try view.secret(named: metadata.name, owner: owner),
                                         hint: label.hint, server: label.server, clientID: label.clientId, since: metadata.createdAt)
            }
        }
    }

    /// Forgets pending revocations (revoked now, or refused for good by their server).
    package func forgetPendingRevocations(_ ids: [String]) async throws {
        guard !ids.isEmpty, let vault = try await housekeepingVault() else { return }
        try vault.update { transaction in
            for id in ids where transaction.metadata(named: id, owner: Self.pendingRevocationOwner) != nil {
                try transaction.remove(named: id, owner: Self.pendingRevocationOwner)
            }
        }
    }

    /// The vault that keeps pending revocations: none in a fleet session or through the agent.
    private func housekeepingVault() async throws -> SecretStore? {
        guard let device = try? backend.device(for: .pendingRevocations) else { return nil }
        return try await device.housekeepingVault()
    }

    private static func isTooOld(_ metadata: EntryMetadata, now: Date) -> Bool {
        now.timeIntervalSince(metadata.createdAt) > pendingRevocationMaximumAge
    }

    /// Removes the too old, then the oldest beyond the limit.
    private static func prunePendingRevocations(in transaction: inout VaultTransaction, now: Date) {
        let all = transaction.list(owner: pendingRevocationOwner).sorted { $0.createdAt < $1.createdAt }
        let tooOld = all.filter { isTooOld($0, now: now) }
        let kept = all.filter { !isTooOld($0, now: now) }
        for metadata in tooOld + kept.dropLast(pendingRevocationLimit) {
            try? transaction.remove(named: metadata.name, owner: pendingRevocationOwner)
        }
    }
}
