import ArgumentParser
import Synchronization

/// Parsing without swift-argument-parser's completion-script probe, when nothing on the command
/// line can ask for a completion script, help or the version.
///
/// On every parse the argument parser first tries the whole command line against two extra
/// commands, to see whether it asks for `--generate-completion-script` (building their argument
/// sets by reflection): about 15 % of `vault get` in a profile (docs/BENCHMARKS.md). A root
/// command with a `_superCommandName` skips that probe (and only prefixes that name to usage
/// lines). So a command line with no `-h`, `--help`, `help`, `--version` or completion request is
/// parsed with the root configured that way; if that parse fails for any reason, the command line
/// is parsed again exactly as before, so every error, help page and completion script is the
/// parser's own, word for word. The flag is cleared before the command runs.
enum FastParse {
    private static let active = Mutex(false)

    /// True while a fast parse is under way (read by `VaultCommand.configuration`).
    static var isActive: Bool { active.withLock { $0 } }

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

    /// Parses `CommandLine.arguments` as `VaultCommand`, fast when it can be.
    static func parse() throws -> ParsableCommand {
        guard !mayAskTheParser(CommandLine.arguments) else { return try VaultCommand.parseAsRoot() }
        active.withLock { $0 = true }
        let fast = try? VaultCommand.parseAsRoot()
        active.withLock { $0 = false }
        if let fast { return fast }
        return try VaultCommand.parseAsRoot()
    }
}
