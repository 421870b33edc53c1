/// Recognises the names `vault` answers to from argv[0], so one binary, linked as
/// `git-credential-vault` or `docker-credential-vault` beside `vault`, serves git and docker
/// (and, re-executed as `vault-clipboard-clearer`, clears the clipboard after `get --clip`).
enum CredentialHelperDispatch {
    /// The helper's entry point for the program name `argv0` (a path or a bare name), or nil for `vault` itself.
    static func helper(invokedAs argv0: String) -> (([String]) -> Int32)? {
        switch argv0.split(separator: "/").last.map(String.init) ?? "" {
        case GitCredentialHelper.executableName: GitCredentialHelper.main
        case DockerCredentialHelper.executableName: DockerCredentialHelper.main
        case ClipboardClearer.executableName: ClipboardClearer.main
        default: nil
        }
    }
}
