import CredentialVault

/// Whether a command line names a PostgreSQL store, which only `vault-postgres` can open.
enum StoreRouting {
    /// True when the command line or `VAULT_STORE` names a PostgreSQL store: any argument before
    /// `--` that is (or ends in `=` followed by) a `postgres://` URL. It may say yes for a label
    /// that looks like a URL; the helper then runs the command just the same.
    /// - Parameter environment: the process's environment (`VAULT_STORE`).
    static func needsPostgres(arguments: [String], environment: CommandEnvironment) -> Bool {
        func isURL(_ text: Substring) -> Bool { text.hasPrefix("postgres://") || text.hasPrefix("postgresql://") }
        for argument in arguments.dropFirst() {
            if argument == "--" { break }
            let text = Substring(argument)
            if isURL(text) { return true }
            if argument.hasPrefix("--"), let equals = text.firstIndex(of: "="), isURL(text[text.index(after: equals)...]) { return true }
        }
        return environment[.vaultStore].map { isURL(Substring($0)) } ?? false
    }
}
