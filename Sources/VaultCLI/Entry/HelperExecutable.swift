#if canImport(Glibc)
import Glibc
#else
#error("vault runs on Linux (Glibc): helpers are found through /proc/self/exe")
#endif
import CredentialVault

/// A companion executable that `vault` replaces itself with for work it does not link: a
/// PostgreSQL store (`vault-postgres`) or a call to an authorization server (`vault-oauth`).
/// It is looked up next to this executable, then in `../lib/vault/` (where scripts/install
/// and the .deb put it), and is given the same arguments (argv[0] included) and the environment
/// exactly as this process was started with: the entry pipeline hands over before it reads a
/// key, a prompt, standard input, or takes anything out of the environment.
struct HelperExecutable: Sendable {
    /// The helper's file name.
    let name: String
    /// What needs it, for the error when it is missing ("a PostgreSQL store").
    let purpose: String
    /// How to install it, for that error's hint.
    let fix: String

    /// `vault-oauth`: the commands linked with the OAuth client.
    static let oauth = HelperExecutable(name: "vault-oauth", purpose: "talking to an OAuth server",
                                        fix: "install vault with its helpers (scripts/install, or the .deb)")

    /// `vault-postgres`: the commands linked with the PostgreSQL store.
    static let postgres = HelperExecutable(name: "vault-postgres", purpose: "a PostgreSQL store",
                                           fix: "install it (scripts/install --with-postgres), or use the vault file")

    /// The variable that tells a helper it was handed a command (its value: the helper's name).
    static let handOverMarker = "VAULT_HANDED_OVER_TO"

    /// Reads and removes `handOverMarker`, so that no child process inherits it. The entry
    /// pipeline calls it first thing.
    /// - Returns: the helper name this process was started as by a handover, if it was.
    static func takeHandOverMarker() -> String? {
        guard let value = getenv(handOverMarker) else { return nil }
        let name = String(cString: value)
        unsetenv(handOverMarker)
        return name
    }

    /// Replaces this process with the helper, or exits 66 saying that it is not installed.
    /// - Parameter arrivedAs: the helper this process was itself started as (`takeHandOverMarker`).
    func replaceProcess(arrivedAs: String?) -> Never {
        replaceProcessIfInstalled(arrivedAs: arrivedAs)
        exit(ErrorReport.report(missing(), oauth: nil) ?? VaultExitStatus.notFound)
    }

    /// Replaces this process with the helper when it is installed; returns when it is not (the
    /// command then runs here without it, e.g. `signout` wipes and says nothing was revoked).
    /// Exits 66 when this process is itself the result of a handover to it: a copy of `vault`
    /// installed under the helper's name would hand the command on for ever.
    func replaceProcessIfInstalled(arrivedAs: String?) {
        if arrivedAs == name {
            let error = VaultError(.notFound, "\(name) handed the command back: the file installed as \(name) is not the helper",
                                   path: candidates().first, fix: "install vault with its helpers again (scripts/install, or the .deb)")
            exit(ErrorReport.report(error, oauth: nil) ?? VaultExitStatus.notFound)
        }
        for path in candidates() where access(path, X_OK) == 0 {
            Self.execute(path, marker: name)
        }
    }

    /// The one place the process is replaced (`execv`): with the same arguments and environment,
    /// plus `handOverMarker`. Returns only when `execv` failed (the marker is removed again).
    private static func execute(_ path: String, marker: String) {
        setenv(handOverMarker, marker, 1)
        _ = execv(path, CommandLine.unsafeArgv)
        unsetenv(handOverMarker)
    }

    /// Next to this executable, then `../lib/vault/`.
    func candidates() -> [String] {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink("/proc/self/exe", &buffer, Int(PATH_MAX))
        guard length > 0 else { return [] }
        let executable = String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard let slash = executable.lastIndex(of: "/") else { return [] }
        let directory = String(executable[..<slash])
        return [PathText.joining(directory, name), PathText.joining(directory, "../lib/vault/" + name)]
    }

    /// The error for a helper that is not installed (exit 66).
    func missing() -> VaultError {
        VaultError(.notFound, "\(purpose) needs \(name), which is not installed beside this vault",
                   path: candidates().first, fix: fix)
    }
}
