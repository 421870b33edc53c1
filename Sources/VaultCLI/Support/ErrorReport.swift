import CredentialVault

/// A mistake in how a command was called that shows only when it runs (exit 64).
struct UsageError: Error, CustomStringConvertible {
    /// What is wrong.
    let message: String
    /// How to fix it, when known.
    let hint: String?

    init(_ message: String, hint: String? = nil) {
        self.message = message
        self.hint = hint
    }

    var description: String { message }
}

/// Prints errors the one way every command does: `vault: <message>` and, when there is
/// a fix, `hint: <fix>`, on standard error. Messages never hold secrets (`VaultError`
/// guarantees it for its own).
enum ErrorReport {
    /// Reports `error` and returns the exit status, or nil for errors that are not ours
    /// (ArgumentParser's own, which it prints itself).
    /// - Parameter oauth: the OAuth client's support, which reports the client's own errors
    ///   (in the executables that link it).
    static func report(_ error: any Error, oauth: (any OAuthCommandSupport)?) -> Int32? {
        switch error {
        case let error as VaultError:
            show(error.message + (error.path.map { " (\($0))" } ?? ""), hint: CommandHints.hint(for: error))
            return error.exitStatus
        case let error as UsageError:
            show(error.message, hint: error.hint)
            return VaultExitStatus.usage
        case let error as CryptoError:
            // Wrong keys and tampering arrive as VaultError; this is libcrypto itself failing.
            show(error.description, hint: error.isLibraryFailure ? CommandHints.openSSLFailure : nil)
            return VaultExitStatus.unexpected
        case let error as CommandNotStarted:
            show(error.description, hint: nil)
            return error.exitStatus
        default:
            // The OAuth client's errors, when this executable links it (vault-oauth, vault-postgres).
            guard let reported = oauth?.report(error) else { return nil }
            show(reported.message, hint: reported.hint)
            return reported.exitStatus
        }
    }

    /// Writes the two lines. Both may quote input (a path, a name, a server's error code),
    /// so each is escaped whole: a line break inside cannot start a line of its own.
    static func show(_ message: String, hint: String?) {
        var text = "vault: \(TerminalText.escaped(message))\n"
        if let hint { text += "hint: \(TerminalText.escaped(hint))\n" }
        StandardIO.printError(text)
    }

    /// A confirmation or note for the person at the terminal, on standard error so that
    /// standard output carries only data and a closed standard output cannot fail a finished change.
    static func note(_ text: String) {
        StandardIO.printError(TerminalText.escaped(text, keepingLineBreaks: true) + "\n")
    }
}
