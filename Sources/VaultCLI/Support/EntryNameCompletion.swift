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
/// Names are encrypted, so listing them needs the key. Only the sources that need no
/// question are used: `--key-file`, `--passphrase-file`, `$VAULT_KEY_FILE`,
/// `$VAULT_PASSPHRASE` (as `--no-prompt`). Without one of them, or on any error, it
/// completes nothing: it never prompts, never prints an error into the shell, never writes
/// (the store is only opened and read) and never touches a secret value.
enum EntryNameCompletion {
    /// The completion for an entry-name argument.
    static var kind: CompletionKind { .custom(candidates) }

    /// The names of the default owner's entries that start with `prefix`.
    /// - Parameters:
    ///   - words: the command line's words, verbatim (quotes and `~` not yet expanded).
    ///   - index: the index of the word being completed.
    ///   - prefix: that word's text before the cursor.
    @Sendable static func candidates(_ words: [String], _ index: Int, _ prefix: String) -> [String] {
        let directory = value(of: "--vault", in: words, before: index) ?? VaultLocation.defaultDirectory()
        guard SecretStore.exists(in: directory), let key = quietKey(words: words, before: index),
              let store = try? SecretStore.open(in: directory, key: key),
              let entries = try? store.list(owner: "") else { return [] }
        let wanted = unquoted(prefix)
        return entries.map(\.name).filter { $0.hasPrefix(wanted) && isPlain($0) }.sorted()
    }

    /// The key from a source that needs no prompt, or nil.
    private static func quietKey(words: [String], before index: Int) -> VaultKey? {
        if let path = value(of: "--key-file", in: words, before: index) { return try? VaultKey.fromKeyFile(path: path) }
        if let path = value(of: "--passphrase-file", in: words, before: index) { return try? VaultKey.fromPassphraseFile(path: path) }
        if let path = KeySources.environmentValue("VAULT_KEY_FILE") { return try? VaultKey.fromKeyFile(path: path) }
        // Completion runs while the command line is parsed, before the entry pipeline takes the
        // passphrase out of the environment: read it straight into zeroising memory.
        if let value = getenv("VAULT_PASSPHRASE"), value.pointee != 0 {
            return .passphrase(SecureBytes(copying: UnsafeRawBufferPointer(start: value, count: strlen(value))))
        }
        return nil
    }

    /// The value of `--option VALUE` or `--option=VALUE` among the words before `index`
    /// (the last one given wins), unquoted and with a leading `~/` expanded.
    static func value(of option: String, in words: [String], before index: Int) -> String? {
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
        return found.map { expandedHome(unquoted($0)) }
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

    private static func expandedHome(_ path: String) -> String {
        guard path == "~" || path.hasPrefix("~/") else { return path }
        let home = KeySources.environmentValue("HOME") ?? PathText.homeDirectory() ?? ""
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
