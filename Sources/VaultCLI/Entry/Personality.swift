/// The names `vault` answers to from argv[0]: one binary, linked as `git-credential-vault` or
/// `docker-credential-vault` beside `vault`, serves git and docker, and re-executed as
/// `vault-clipboard-clearer` it clears the clipboard after `get --clip`. Each is a command of its
/// own, with its own argument syntax (git's and docker's), run by the entry pipeline before any
/// `vault` command line is parsed.
enum Personality {
    case gitCredentialHelper
    case dockerCredentialHelper
    case clipboardClearer

    /// The personality for the program name `argv0` (a path or a bare name), or nil for `vault` itself.
    init?(invokedAs argv0: String) {
        switch argv0.split(separator: "/").last.map(String.init) ?? "" {
        case GitCredentialHelper.executableName: self = .gitCredentialHelper
        case DockerCredentialHelper.executableName: self = .dockerCredentialHelper
        case ClipboardClearer.executableName: self = .clipboardClearer
        default: return nil
        }
    }

    /// Runs it with the arguments after argv[0].
    /// - Returns: the exit status.
    func run(_ arguments: [String], context: CommandContext) -> Int32 {
        switch self {
        case .gitCredentialHelper: GitCredentialHelper.main(arguments, context: context)
        case .dockerCredentialHelper: DockerCredentialHelper.main(arguments, context: context)
        case .clipboardClearer: ClipboardClearer.main(arguments)
        }
    }
}
