#if canImport(Glibc)
import Glibc
#else
#error("vault runs on Linux (Glibc)")
#endif
import ArgumentParser
import CredentialVault
import FoundationEssentials

/// Completes entry names (`vault get <TAB>`) from the vault named on the command line.
///
/// Names are encrypted, so listing them needs the key. Only the key sources that need no
/// question are used (`KeySource`: `--key-file`, `--passphrase-file`, `$VAULT_KEY_FILE`,
/// `$VAULT_PASSPHRASE`); when the key would have to be asked for, or on any error, it
/// completes nothing: it never prompts, never prints an error into the shell, never writes
/// (the store is only opened and read) and never touches a secret value.
///
/// `get` and `rm` refuse the session's entries (`ReservedEntryNames`), so their completion does
/// not offer them; `inspect`, which shows them, does.
enum EntryNameCompletion {
    /// The completion for the entry-name argument of `get` and `rm`: the user's entries.
    static var kind: CompletionKind {
        .custom { words, index, prefix in candidates(words, index, prefix, environment: .process(), includingSession: false) }
    }

    /// The completion for `inspect`'s entry name: the session's entries too.
    static var kindIncludingSession: CompletionKind {
        .custom { words, index, prefix in candidates(words, index, prefix, environment: .process(), includingSession: true) }
    }

    /// The names of the default owner's entries that start with `prefix`.
    /// - Parameters:
    ///   - words: the command line's words, verbatim (quotes and `~` not yet expanded).
    ///   - index: the index of the word being completed.
    ///   - prefix: that word's text before the cursor.
    ///   - environment: the process's environment (completion runs before any command context).
    ///   - includingSession: offer the session's entries (`session.*`) too.
    static func candidates(_ words: [String], _ index: Int, _ prefix: String, environment: CommandEnvironment,
                           includingSession: Bool) -> [String] {
        let directory = value(of: "--vault", in: words, before: index, environment: environment) ?? VaultLocation.defaultDirectory()
        guard SecretStore.exists(in: directory), let key = quietKey(words: words, before: index, environment: environment),
              let store = try? SecretStore.open(in: directory, key: key),
              let entries = try? store.list(owner: "") else { return [] }
        let wanted = unquoted(prefix)
        return entries.map(\.name).filter {
            $0.hasPrefix(wanted) && isPlain($0) && (includingSession || !ReservedEntryNames.isReserved(name: $0, owner: ""))
        }.sorted()
    }

    /// The key from a source that needs no prompt, or nil.
    private static func quietKey(words: [String], before index: Int, environment: CommandEnvironment) -> VaultKey? {
        let source = KeySource(keyFile: value(of: "--key-file", in: words, before: index, environment: environment),
                               passphraseFile: value(of: "--passphrase-file", in: words, before: index, environment: environment),
                               environment: environment, passphrase: uncapturedPassphrase())
        return try? source.keyWithoutAsking()
    }

    /// `$VAULT_PASSPHRASE`, read straight into zeroising memory: completion runs while the command
    /// line is parsed, before the entry pipeline takes the passphrase out of the environment.
    private static func uncapturedPassphrase() -> SecureBytes? {
        guard let value = getenv("VAULT_PASSPHRASE"), value.pointee != 0 else { return nil }
        return SecureBytes(copying: UnsafeRawBufferPointer(start: value, count: strlen(value)))
    }

    /// The value of `--option VALUE` or `--option=VALUE` among the words before `index`
    /// (the last one given wins), unquoted and with a leading `~/` expanded.
    static func value(of option: String, in words: [String], before index: Int, environment: CommandEnvironment) -> String? {
        var found: String?
        var position = 0
        let end = min(index, words.count)
        while position < end {
            let word = words[position]
            if word == option, position + 1 < end {
                found = words[position + 1]
                position += 2
                continue
            }
            if word.hasPrefix(option + "=") { found = String(word.dropFirst(option.count + 1)) }
            position += 1
        }
        return found.map { expandedHome(unquoted($0), environment: environment) }
    }

    /// `'text'` or `"text"` without its quotes, and backslash escapes removed.
    static func unquoted(_ word: String) -> String {
        var text = Substring(word)
        if text.count >= 2, let first = text.first, first == text.last, first == "'" || first == "\"" {
            text = text.dropFirst().dropLast()
        } else if let first = text.first, first == "'" || first == "\"" {
            text = text.dropFirst()
        }
        var result = ""
        var escaped = false
        for character in text {
            if !escaped, character == "\\" { escaped = true; continue }
            escaped = false
            result.append(character)
        }
        return result
    }

    private static func expandedHome(_ path: String, environment: CommandEnvironment) -> String {
        guard path == "~" || path.hasPrefix("~/") else { return path }
        let home = environment[.home] ?? PathText.homeDirectory() ?? ""
        return home + path.dropFirst()
    }

    /// Names a shell can offer as they are: nothing the one escaping function (`TerminalText`)
    /// would change, i.e. nothing a terminal could act on or that hides itself. The shell
    /// prints candidates raw, so a name that needs escaping is left out rather than offered
    /// escaped (it would not be the entry's name).
    private static func isPlain(_ name: String) -> Bool {
        TerminalText.escaped(name) == name
    }
}
