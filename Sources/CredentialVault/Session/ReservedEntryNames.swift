/// The entries that belong to the session, not to the user: every name that starts with
/// `session.` (in any owner: the tokens, the ID token, token info, the refresh journal's marker,
/// per-audience tokens, the OAuth client's configuration, its secret, the DPoP key), and every
/// entry of the pending revocations' owner (`revocation:pending`).
///
/// They decide where tokens and the client secret are sent, or are those secrets: an entry
/// planted under such a name (an import, a `vault add`) would redirect the next refresh, and one
/// handed out (`vault get`, `exec`, `inject`, a `vault://` reference) would print a private key.
/// So the entry commands refuse them (`.invalidInput`), and the agent refuses them to every
/// request that is not marked as the session's own (`AgentRequestHandler`). Any process of the
/// user can send that marker: it keeps reserved entries out of the agent's ordinary requests, it
/// does not tell processes apart (the agent's rules do). The session itself writes them through
/// `SecretStore` transactions, or through the agent with that marker (`VaultAgentClient.forSession`).
public enum ReservedEntryNames {
    /// What a command would do with a reserved entry, for its message.
    public enum Use: Sendable {
        /// Store it (`add`, `import`, the agent's add).
        case store
        /// Hand its secret out (`get`, `exec`, `inject`, a reference, the agent's get).
        case read
        /// Remove it (`rm`, the agent's rm).
        case remove
    }

    /// The name prefix the session keeps for itself.
    public static let prefix = SessionNamespaces.Reserved.prefix

    /// Whether the entry `name` of `owner` belongs to the session.
    public static func isReserved(name: String, owner: String = "") -> Bool {
        name.utf8.starts(with: prefix.utf8) || owner == SessionManager.pendingRevocationOwner
    }

    /// Refuses an entry that belongs to the session.
    /// - Parameters:
    ///   - name: the entry's name.
    ///   - owner: its owner ("" for a plain entry).
    ///   - use: what the caller would do with it.
    /// - Throws: `VaultError` `.invalidInput` (exit 64 in the CLI) naming the entry, never a value.
    public static func check(name: String, owner: String = "", for use: Use) throws {
        guard isReserved(name: name, owner: owner) else { return }
        let what = name.utf8.starts(with: prefix.utf8)
            ? "'\(TerminalText.escaped(name))' is reserved: names starting with '\(prefix)' belong to the sign-in session"
                + " (its tokens, the OAuth client, its secret and DPoP key)"
            : "the owner '\(TerminalText.escaped(owner))' is reserved for the session's pending revocations"
        switch use {
        case .store:
            throw VaultError(.invalidInput, "\(what); such an entry is written only by the session, never stored by hand",
                             fix: "choose another name; the session stores its OAuth client and tokens itself", topic: .reservedEntry(use))
        case .read:
            throw VaultError(.invalidInput, "\(what); its secret is never handed out",
                             fix: "ask the session for a valid access token instead; an entry's metadata can be shown without its secret",
                             topic: .reservedEntry(use))
        case .remove:
            throw VaultError(.invalidInput, "\(what); it is removed only by the session",
                             fix: "sign out to end the session, or forget the OAuth client configuration", topic: .reservedEntry(use))
        }
    }
}
