import CredentialVault

/// Reads the secret for `vault add` from standard input — never from an argument, where
/// `/proc/PID/cmdline` and shell history would show it.
enum SecretInput {
    /// From a pipe or file: every byte, exactly (NUL bytes and a trailing newline kept).
    /// From a terminal: typed with echo off, the final newline dropped.
    /// - Parameters:
    ///   - name: the entry's name, for the prompt.
    ///   - allowPrompt: false under `--no-prompt`; then a terminal on standard input is an error.
    /// - Returns: the secret, not empty.
    /// - Throws: `UsageError` for an empty secret or a forbidden prompt; `.invalidInput` over 1 MiB; `.io`.
    static func read(for name: String, allowPrompt: Bool) throws -> SecureBytes {
        let secret: SecureBytes
        if let terminal = Terminal.standardInput() {
            guard allowPrompt else {
                throw UsageError("standard input is a terminal and --no-prompt forbids asking for the secret",
                                 hint: "pipe the secret in, e.g. vault add NAME < FILE")
            }
            secret = try terminal.readHidden(prompt: "Secret for '\(name)' (not shown): ", limit: VaultLimits.maximumSecretBytes)
        } else {
            secret = try StandardIO.readAll(from: StandardIO.input, limit: VaultLimits.maximumSecretBytes, name: "standard input")
        }
        guard !secret.isEmpty else {
            throw UsageError("the secret is empty; nothing was stored",
                             hint: "pipe the secret in, e.g. printf '%s' \"$TOKEN\" | vault add NAME")
        }
        return secret
    }
}
