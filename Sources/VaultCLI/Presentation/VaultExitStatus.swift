import CredentialVault
/// The exit statuses of the `vault` command, after BSD `sysexits.h`: one table from
/// `VaultError.Code` to status, shared by every command and documented in `vault --help`.
package enum VaultExitStatus {
    /// Success.
    static let success: Int32 = 0
    /// An unexpected error.
    static let unexpected: Int32 = 1
    /// Bad usage: an unknown option, a bad value, no key source and no terminal (`EX_USAGE`).
    static let usage: Int32 = 64
    /// The vault is corrupt, tampered, rolled back, of an unsupported version or outside the KDF policy (`EX_DATAERR`).
    static let dataError: Int32 = 65
    /// The vault, an entry or a named file does not exist (`EX_NOINPUT`).
    static let notFound: Int32 = 66
    /// The vault, entry or key file already exists (`EX_CANTCREAT`).
    static let alreadyExists: Int32 = 73
    /// An I/O error: disk full, standard output closed (`EX_IOERR`).
    static let ioError: Int32 = 74
    /// The authorization server could not be reached or failed transiently (`EX_UNAVAILABLE`); the session is kept.
    /// Also no agent answering, and no session bus or Secret Service provider on it.
    package static let serverUnavailable: Int32 = 69
    /// Another process holds the vault lock past the timeout (`EX_TEMPFAIL`).
    package static let busy: Int32 = 75
    /// The authorization server answered with an OAuth error response (`EX_PROTOCOL`), e.g. an
    /// `error` piped to `vault signin`, `invalid_client`, `access_denied`.
    package static let serverRefused: Int32 = 76
    /// 71 (EX_OSERR): the system refused a resource vault needs, e.g. the --redirect-port.
    package static let systemError: Int32 = 71
    /// Wrong key, invalid key or insecure permissions (`EX_NOPERM`).
    package static let permission: Int32 = 77

    /// The one mapping from error code to exit status; codes not listed exit with 1.
    static let byCode: [VaultError.Code: Int32] = [
        .invalidInput: usage,
        .corrupt: dataError,
        .tampered: dataError,
        .unsupportedVersion: dataError,
        .kdfOutsidePolicy: dataError,
        .suspiciousKDFParameters: dataError,
        .rollbackDetected: dataError,
        .notFound: notFound,
        .alreadyExists: alreadyExists,
        .io: ioError,
        .busy: busy,
        .wrongKey: permission,
        .invalidKey: permission,
        .insecurePermissions: permission,
        .notSignedIn: notFound,
        .mergeConflict: alreadyExists,
        .minTTLTooLarge: usage,
        .sessionExpired: permission,
        .serverUnavailable: serverUnavailable,
        .serverRefused: serverRefused,
        .unsupportedOperation: usage,
        .agentUnavailable: serverUnavailable,
        .vaultLocked: permission,
        .deniedByRule: permission,
        .busUnavailable: serverUnavailable,
    ]

    /// Every status with what it means, in order, for `vault --help` and `docs/CLI.md`.
    static let meanings: [(status: Int32, meaning: String)] = [
        (success, "success"),
        (unexpected, "unexpected error"),
        (usage, "usage: bad option or value, no key source and no terminal; not available on a fleet session"),
        (dataError, "vault corrupt, tampered, rolled back, unsupported version or KDF outside policy"),
        (notFound, "vault, entry or file not found; nobody signed in; a helper not installed: vault-oauth, vault-postgres or vault-secret-service"),
        (serverUnavailable, "authorization or PostgreSQL server unreachable or failing (5xx, timeout, bad answer); nothing lost; no vault agent answering (start one: vault agent); no D-Bus session bus, or no Secret Service provider on it"),
        (systemError, "the system refused a resource: signin --browser's --redirect-port cannot be bound"),
        (alreadyExists, "vault, entry or key file already exists; another user signed in; merge conflict; the Secret Service name, org.freedesktop.secrets, owned by another program"),
        (ioError, "I/O error: disk full, standard output closed"),
        (busy, "busy: another process holds the vault lock; temporary: no browser sign-in came back within --wait"),
        (serverRefused, "authorization server answered an OAuth error (invalid_client, access_denied, …), or a check of its answer failed (ID token, iss, state)"),
        (permission, "wrong key, invalid key file, insecure permissions; session expired (sign in again); vault not unlocked in the agent; refused by an agent rule"),
    ]

    /// The exit status for `code`; 1 for codes this table does not know.
    static func forCode(_ code: VaultError.Code) -> Int32 {
        byCode[code] ?? unexpected
    }
}

extension VaultError {
    /// The `vault` command's exit status for this error (see `VaultExitStatus`).
    var exitStatus: Int32 { VaultExitStatus.forCode(code) }
}
