import CredentialVault
import FoundationEssentials

/// Text shared by the help pages and the man page: the environment, the exit statuses and
/// the examples, each kept in one table here (exit statuses in `VaultExitStatus`).
///
/// Tables are wrapped by hand with a hanging indent to `width` columns, so that nothing
/// breaks at column 0 in an 80-column terminal (swift-argument-parser does not re-wrap
/// lines that fit).
enum HelpText {
    /// The widest line of a hand-laid-out block.
    static let width = 78

    /// The environment variables the command reads, with what each means.
    static let environment: [(name: String, meaning: String)] = [
        ("VAULT_DIR", "the vault directory (default: $XDG_DATA_HOME/vault, else ~/.local/share/vault)"),
        ("VAULT_KEY_FILE", "a key file, as --key-file"),
        ("VAULT_PASSPHRASE", "the passphrase, when no key file is given"),
        ("VAULT_NEW_PASSPHRASE", "the new passphrase for 'vault passwd'"),
        ("VAULT_STORE", "where the vault is, as --store: 'file' (default) or postgres://USER@HOST:PORT/DB"),
        ("VAULT_STORE_NAME", "which vault in that database, as --store-name (default: default)"),
        ("PGPASSWORD, PGPASSFILE", "the database password (never in the URL); PGPASSFILE default ~/.pgpass"),
        ("XDG_DATA_HOME", "where the default vault directory lives, when VAULT_DIR is not set"),
        ("XDG_RUNTIME_DIR, TMPDIR", "where 'exec --file' puts its private folder (XDG_RUNTIME_DIR first)"),
        ("GNUPGHOME", "the gpg home 'import --from pass' decrypts with (gpg's own default otherwise)"),
        ("VAULT_AGENT_SOCK", "the agent's socket (default $XDG_RUNTIME_DIR/vault/agent.sock)"),
        ("XDG_CONFIG_HOME", "where the agent's rules are: $XDG_CONFIG_HOME/vault/agent.json"),
    ]

    /// Examples for `vault --help` and the man page: a command line and what it does.
    static let examples: [(command: String, meaning: String)] = [
        ("vault keygen ~/.config/vault/key",
         "Make a random key file (mode 0600; missing folders are made 0700)."),
        ("export VAULT_KEY_FILE=~/.config/vault/key; vault init",
         "Use it for every command, and create the vault."),
        ("printf %s \"$GITHUB_TOKEN\" | vault add github --kind accessToken",
         "Store a secret read from standard input (never from an argument)."),
        ("curl -H \"Authorization: Bearer $(vault get github)\" \"$API_URL\"",
         "Use it: 'get' writes the secret exactly, with nothing added."),
        ("vault list --json", "Names and metadata as JSON, never the secrets."),
        ("vault exec --env-file .env --mask -- ./server",
         "Run with the .env file's vault://NAME values filled in, secrets masked in its output."),
        ("vault inject -i config.tpl -o config.yaml",
         "Fill a template's {{ vault://NAME }} placeholders into a 0600 file."),
        ("vault import --from pass ~/.password-store --dry-run",
         "List what an import from pass would bring; drop --dry-run to import."),
        ("vault status --json | jq -r .state", "The session state, as an app would find it at start-up."),
    ]

    /// The root command's discussion: where keys come from, the environment, the exit
    /// statuses and examples.
    static var rootDiscussion: String {
        let statuses = VaultExitStatus.meanings.map { (String($0.status), $0.meaning) }
        return """
            Secrets are read from standard input or typed at a prompt, never taken from arguments. \
            The key is the first of: --key-file, --passphrase-file, a running 'vault agent' holding the \
            vault unlocked (--no-agent skips it), $VAULT_KEY_FILE, $VAULT_PASSPHRASE, a prompt on the \
            terminal. With none of them and no terminal, a command fails at once. 'vault --version' \
            prints the version.

            ENVIRONMENT:

            """ + table(environment.map { ($0.name, $0.meaning) }, nameWidth: 22).joined(separator: "\n") + """


            EXIT STATUS:

            """ + table(statuses, nameWidth: 5).joined(separator: "\n") + """


            EXAMPLES:

            """ + exampleLines.joined(separator: "\n")
    }

    /// The man page's ENVIRONMENT, EXIT STATUS and EXAMPLES sections in mdoc(7), each
    /// starting with its `.Sh` line; scripts/manpages puts them in place of the generic
    /// EXIT STATUS section that swift-argument-parser's generate-manual writes.
    static var mdocSections: String {
        var lines = [".Sh ENVIRONMENT", ".Bl -tag -width VAULT_NEW_PASSPHRASE"]
        for variable in environment {
            lines += [".It Ev \(variable.name)", mdocText(variable.meaning)]
        }
        lines += [".El", ".Sh EXIT STATUS", ".Bl -tag -width 4n"]
        for row in VaultExitStatus.meanings {
            lines += [".It \(row.status)", mdocText(row.meaning)]
        }
        lines += [".El", ".Sh EXAMPLES"]
        for (index, example) in examples.enumerated() {
            if index > 0 { lines.append(".Pp") }
            lines += [mdocText(example.meaning), ".Bd -literal -offset indent", mdocText(example.command), ".Ed"]
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Text for an mdoc text line: backslashes written as `\e`, and a leading `.` or `'`
    /// protected with `\&` so that it is not read as a macro.
    static func mdocText(_ text: String) -> String {
        let escaped = text.replacing("\\", with: "\\e")
        if let first = escaped.first, first == "." || first == "'" { return "\\&" + escaped }
        return escaped
    }

    /// Each example as its command line (indented 2) and its meaning (indented 6) below.
    static var exampleLines: [String] {
        examples.flatMap { example in
            ["  " + example.command] + wrap(example.meaning, width: width - 6).map { "      " + $0 }
        }
    }

    /// "  NAME  meaning" rows: the meaning starts at column `nameWidth + 2` and its
    /// continuation lines are indented to the same column; no line is wider than `width`.
    static func table(_ rows: [(String, String)], nameWidth: Int) -> [String] {
        let indent = String(repeating: " ", count: 2 + nameWidth)
        return rows.flatMap { name, meaning -> [String] in
            let lines = wrap(meaning, width: width - indent.count)
            let head = "  " + name
            let first = head.count < indent.count
                ? head + String(repeating: " ", count: indent.count - head.count) + (lines.first ?? "")
                : head + "\n" + indent + (lines.first ?? "")
            return [first] + lines.dropFirst().map { indent + $0 }
        }
    }

    /// Greedy word wrap to `width` columns (a word longer than that gets a line of its own).
    static func wrap(_ text: String, width: Int) -> [String] {
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ") {
            if line.isEmpty {
                line = String(word)
            } else if line.count + 1 + word.count <= width {
                line += " " + word
            } else {
                lines.append(line)
                line = String(word)
            }
        }
        if !line.isEmpty { lines.append(line) }
        return lines
    }
}
