#if canImport(Glibc)
import Glibc
#endif
import CredentialVault
import VaultCrypto

/// Asks for a passphrase through a pinentry program (`$VAULT_PINENTRY`), as gpg-agent does: the
/// Assuan commands `SETDESC`, `SETPROMPT`, `GETPIN` and `BYE` on its standard input, the answer
/// (`D <percent-encoded passphrase>` then `OK`, or `ERR …` when cancelled) on its standard output,
/// read into zeroising memory.
package enum Pinentry {
    /// The passphrase typed into the pinentry `program`.
    /// - Parameter environment: the command's environment (the terminal and locale the pinentry is told).
    /// - Throws: `UsageError` when it cannot be run, was cancelled or answered nothing usable.
    package static func askPassphrase(program: String, description: String, environment: CommandEnvironment) throws -> SecureBytes {
        let options = terminalOptions(environment)
        let commands = options.map { "OPTION \(escaped($0))\n" }.joined()
            + "SETDESC \(escaped(description))\nSETPROMPT Passphrase:\nGETPIN\nBYE\n"
        let result = Subprocess.run([program], input: SecureBytes(copying: Array(commands.utf8)), captureOutput: true,
                                    timeout: 300)
        guard result.status != 127 else { throw UsageError("cannot run the pinentry program '\(TerminalText.escaped(program))' (VAULT_PINENTRY)") }
        guard let output = result.output else { throw UsageError("the pinentry program gave no answer") }
        return try output.withUnsafeBytes { bytes throws -> SecureBytes in
            let lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
            guard lines.first?.starts(with: Array("OK".utf8)) == true else {
                throw UsageError("'\(TerminalText.escaped(program))' does not speak the pinentry protocol")
            }
            // Each command ends with one OK or ERR line, in order; GETPIN's comes after the options',
            // SETDESC's and SETPROMPT's (an option the program does not know is its own ERR, ignored).
            let body = Array(lines.dropFirst())
            let ends = body.indices.filter { body[$0].starts(with: Array("OK".utf8)) || body[$0].starts(with: Array("ERR".utf8)) }
            let getpin = options.count + 2
            guard ends.count > getpin else { throw UsageError("the pinentry program ended without an answer") }
            if body[ends[getpin]].starts(with: Array("ERR".utf8)) {
                throw UsageError("the passphrase was not given (the pinentry was cancelled or failed)")
            }
            let answer = body[(ends[getpin - 1] + 1)..<ends[getpin]]
            // Assuan splits long data over several D lines: the passphrase is all of them, in order.
            let data = answer.filter { $0.starts(with: Array("D ".utf8)) }
            guard !data.isEmpty else { throw UsageError("the pinentry returned no passphrase") }
            let passphrase = try decode(data.flatMap { $0.dropFirst(2) })
            guard !passphrase.isEmpty else { throw VaultError(.invalidKey, "the passphrase is empty", fix: "type a non-empty passphrase") }
            return passphrase
        }
    }

    /// The options gpg-agent gives a pinentry so that a terminal one (pinentry-curses, -tty) finds
    /// the terminal: `ttyname` (`$GPG_TTY`, else standard input's or error's terminal), `ttytype`
    /// (`$TERM`) and `lc-ctype`; none of them when there is no terminal (a graphical pinentry).
    static func terminalOptions(_ environment: CommandEnvironment) -> [String] {
        var options: [String] = []
        if let tty = environment[.gpgTTY] ?? [0, 2].lazy.compactMap({ Glibc.ttyname($0).map { String(cString: $0) } }).first {
            options.append("ttyname=" + tty)
            if let term = environment[.term] { options.append("ttytype=" + term) }
        }
        if let ctype = environment[.lcAll] ?? environment[.lcCType] ?? environment[.lang] {
            options.append("lc-ctype=" + ctype)
        }
        return options
    }

    /// Assuan's escaping of a parameter: `%`, CR and LF as `%XX`.
    private static func escaped(_ text: String) -> String {
        var result = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "%": result += "%25"
            case "\r": result += "%0D"
            case "\n": result += "%0A"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    /// Decodes Assuan's `%XX` escapes into zeroising memory.
    private static func decode(_ encoded: some Collection<UInt8>) throws -> SecureBytes {
        guard var bytes = encoded.percentDecoded() else { throw UsageError("the pinentry's answer is malformed") }
        defer { SecureWipe.wipe(&bytes) }
        return SecureBytes(copying: bytes)
    }
}
