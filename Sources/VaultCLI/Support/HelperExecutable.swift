import CredentialVault
import Glibc

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

    /// Replaces this process with the helper, before anything was read or changed. Exits 66,
    /// saying so, when the helper is not installed.
    func execute() -> Never {
        for path in candidates() where access(path, X_OK) == 0 {
            _ = execv(path, CommandLine.unsafeArgv)
        }
        let status = ErrorReport.report(missing()) ?? VaultExitStatus.notFound
        exit(status)
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
