/// Where `vault agent` keeps the audit log of each vault it serves: one log per vault, named by
/// the vault id, in `directory` (docs/SECURITY.md, "Audit log").
package struct AgentAudit: Sendable {
    /// The logs' folder (made 0700 on the first record).
    package let directory: String
    /// Size bound and rotation of each log.
    package let limits: AuditLog.Limits

    /// Logs in `directory`.
    package init(directory: String, limits: AuditLog.Limits = .standard) {
        self.directory = directory
        self.limits = limits
    }

    /// Logs in `$XDG_STATE_HOME/vault/audit` (else `~/.local/state/vault/audit`), from the given
    /// variables; nil when neither names an absolute folder (the agent then keeps no audit log).
    package init?(xdgStateHome: String?, home: String?) {
        var environment: [String: String] = [:]
        environment["XDG_STATE_HOME"] = xdgStateHome
        environment["HOME"] = home
        guard let directory = AuditLog.standardDirectory(environment: environment) else { return nil }
        self.init(directory: directory)
    }

    /// The log of the vault `store` holds, keyed from its state key.
    /// - Throws: the errors of `SecretStore.auditKey()`.
    package func log(for store: SecretStore) throws -> AuditLog {
        AuditLog(directory: directory, vaultID: store.vaultID, key: try store.auditKey(), limits: limits)
    }
}
