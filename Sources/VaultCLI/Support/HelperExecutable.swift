import CredentialVault
import Glibc
import Synchronization

/// A companion executable that `vault` replaces itself with for work it does not link: a
/// PostgreSQL store (`vault-postgres`) or a call to an authorization server (`vault-oauth`).
/// It is looked up next to this executable, then in `../lib/vault/` (where scripts/install
/// and the .deb put it), and is given the same arguments (argv[0] included) and environment.
struct HelperExecutable: Sendable {
    /// The helper's file name.
    let name: String
    /// What needs it, for the error when it is missing ("a PostgreSQL store").
    let purpose: String
    /// How to install it, for that error's hint.
    let fix: String

    /// The variable that tells a helper it was handed a command (its value: the helper's name).
    static let handOverMarker = "VAULT_HANDED_OVER_TO"

    /// The helper name this process was started as by a handover, if it was; read and removed
    /// from the environment first thing (`takeHandOverMarker`), so no child process inherits it.
    private static let arrivedAs = Mutex<String?>(nil)

    /// Reads and removes `handOverMarker`. Call once, first thing in `main`.
    static func takeHandOverMarker() {
        guard let value = getenv(handOverMarker) else { return }
        let name = String(cString: value)
        unsetenv(handOverMarker)
        arrivedAs.withLock { $0 = name }
    }

    /// Replaces this process with the helper, before anything was read or changed: same
    /// arguments, and the environment this process started with (the passphrase variables that
    /// `PassphraseEnvironment` took out are put back for it). Exits 66, saying so, when the helper
    /// is not installed, or when this process is itself the result of a handover to it (a copy of
    /// `vault` installed under the helper's name would hand the command on for ever).
    func execute() -> Never {
        handOverWhenInstalled()
        let status = ErrorReport.report(missing()) ?? VaultExitStatus.notFound
        exit(status)
    }

    /// `execute()` when the helper is installed; returns when it is not (the caller goes on
    /// without it, e.g. `signout` wipes locally and reports that nothing was revoked).
    func executeIfInstalled() {
        handOverWhenInstalled()
    }

    private func handOverWhenInstalled() {
        if Self.arrivedAs.withLock({ $0 }) == name {
            let error = VaultError(.notFound, "\(name) handed the command back: the file installed as \(name) is not the helper",
                                   path: candidates().first, fix: "install vault with its helpers again (scripts/install, or the .deb)")
            exit(ErrorReport.report(error) ?? VaultExitStatus.notFound)
        }
        let installed = candidates().filter { access($0, X_OK) == 0 }
        guard !installed.isEmpty else { return }
        setenv(Self.handOverMarker, name, 1)
        PassphraseEnvironment.restoreForHandOver()
        for path in installed {
            _ = execv(path, CommandLine.unsafeArgv)
        }
        // Not replaced after all: take the passphrases out of the environment again.
        PassphraseEnvironment.capture()
        unsetenv(Self.handOverMarker)
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
