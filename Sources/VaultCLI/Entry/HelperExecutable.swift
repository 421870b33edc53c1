#if canImport(Glibc)
import Glibc
#else
#error("vault runs on Linux (Glibc): helpers are found through /proc/self/exe")
#endif
import CredentialVault

/// A companion executable that `vault` replaces itself with for work it does not link: a
/// PostgreSQL store (`vault-postgres`), a call to an authorization server (`vault-oauth`) or the
/// Secret Service on D-Bus (`vault-secret-service`).
/// It is looked up only next to this executable's canonical path (`/proc/self/exe`), then in
/// `../lib/vault/` from there (where scripts/install and the .deb put it); one that others could
/// have planted or could swap is refused (`checkSafe`, exit 77). It is given the same arguments
/// (argv[0] included) and the environment
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

    /// `vault-secret-service`: the commands linked with the Secret Service provider (sd-bus).
    static let secretService = HelperExecutable(name: "vault-secret-service", purpose: "serving the Secret Service on D-Bus",
                                                fix: "install vault with its helpers (scripts/install, or the .deb)")

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
        for candidate in candidates() {
            guard let resolved = PathText.canonical(candidate), access(resolved, X_OK) == 0 else { continue }
            do {
                try checkSafe(resolved)
            } catch {
                exit(ErrorReport.report(error, oauth: nil) ?? VaultExitStatus.permission)
            }
            Self.execute(resolved, marker: name)
        }
    }

    /// Refuses a helper that someone else could have planted or could swap: the file and every
    /// folder on its canonical path must be owned by root or by the caller, and none may be
    /// writable by group or others — except a folder of root's with the sticky bit (as /tmp),
    /// whose entry on the path is then root's or the caller's (checked as every component is):
    /// others can neither rename nor replace that entry. So `../lib/vault/` made by another user
    /// under /tmp is refused, and so is a group-writable helper or folder anywhere on the path.
    /// - Throws: `.insecurePermissions` (exit 77) naming the component and why.
    func checkSafe(_ path: String) throws {
        let me = geteuid()
        var components = ["/"]
        var prefix = ""
        for part in path.split(separator: "/") {
            prefix += "/" + part
            components.append(prefix)
        }
        for (index, component) in components.enumerated() {
            var status = stat()
            guard lstat(component, &status) == 0 else {
                throw VaultError.io("checking where \(name) is installed", path: component, errno: errno)
            }
            let isLast = index == components.count - 1
            let kind = status.st_mode & S_IFMT
            func refuse(_ why: String) -> VaultError {
                VaultError(.insecurePermissions, "\(name) is not run: \(component) \(why), so someone else could have put a program there",
                           path: component, fix: "install vault and its helpers where only root or you can write (scripts/install, or the .deb)")
            }
            guard kind == (isLast ? S_IFREG : S_IFDIR) else { throw refuse(isLast ? "is not a regular file" : "is not a folder") }
            guard status.st_uid == 0 || status.st_uid == me else { throw refuse("belongs to another user (uid \(status.st_uid))") }
            if status.st_mode & 0o022 != 0 {
                let sharedSticky = !isLast && status.st_uid == 0 && status.st_mode & S_ISVTX != 0
                guard sharedSticky else {
                    throw refuse("can be written by group or others (mode \(String(status.st_mode & 0o7777, radix: 8)))")
                }
            }
        }
    }


    /// The one place the process is replaced (`execv`): with the same arguments and environment,
    /// plus `handOverMarker`. Returns only when `execv` failed (the marker is removed again).
    private static func execute(_ path: String, marker: String) {
        setenv(handOverMarker, marker, 1)
        _ = execv(path, CommandLine.unsafeArgv)
        unsetenv(handOverMarker)
    }

    /// Next to this executable (its canonical path), then `../lib/vault/` from there.
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
