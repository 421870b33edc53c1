import ArgumentParser
import CredentialVault

/// Parses the command line into a command, without swift-argument-parser's completion-script
/// probe when nothing on the command line can ask for a completion script, help or the version.
///
/// On every parse the argument parser first tries the whole command line against two extra
/// commands, to see whether it asks for `--generate-completion-script` (building their argument
/// sets by reflection): about 15 % of `vault get` in a profile (docs/BENCHMARKS.md). A root
/// command with a `_superCommandName` skips that probe (and only prefixes that name to usage
/// lines). `_superCommandName` is the one swift-argument-parser internal vault uses, and this is
/// the only place that uses it: `FastRoot` is the root with it set, over the same subcommands.
/// A command line with no `-h`, `--help`, `help`, `--version` or completion request is parsed
/// with `FastRoot`; if that parse fails for any reason or names no subcommand, the command line
/// is parsed again with `VaultCommand`, so every error, help page and completion script is the
/// parser's own, word for word.
enum CommandParser {
    /// Arguments (before `--`) that make the parser show something itself.
    static func mayAskTheParser(_ arguments: [String]) -> Bool {
        for argument in arguments.dropFirst() {
            if argument == "--" { return false }
            if ["-h", "--help", "-help", "help", "--version", "--experimental-dump-help"].contains(argument)
                || argument.hasPrefix("--generate-completion-script") {
                return true
            }
        }
        return false
    }

    /// Parses `arguments` (argv, argv[0] first) as a `VaultCommand` command line, fast when it can be.
    /// - Throws: the parser's errors; `CleanExit` with the version for `vault --version`.
    static func parse(_ arguments: [String]) throws -> ParsableCommand {
        let words = Array(arguments.dropFirst())
        if words.first == "--version" { throw versionRequest }
        if !mayAskTheParser(arguments), let fast = try? FastRoot.parseAsRoot(words), !(fast is FastRoot) {
            return fast
        }
        return try VaultCommand.parseAsRoot(words)
    }

    /// `vault --version`, answered here rather than by argument-parser's `version:` (which every
    /// subcommand would inherit): the version alone on standard output, exit 0, as before.
    static var versionRequest: CleanExit { .message(VaultVersion.current) }

    /// The root for a fast parse: `VaultCommand`'s subcommands, no discussion, and a
    /// `_superCommandName`, which turns the completion-script probe off.
    struct FastRoot: ParsableCommand {
        static let configuration: CommandConfiguration = {
            var configuration = CommandConfiguration(commandName: "vault", groupedSubcommands: VaultCommand.commandGroups)
            configuration._superCommandName = "vault"
            return configuration
        }()
    }
}
