#if canImport(Glibc)
import Glibc
#endif

/// The user's browser, for `vault signin --browser`.
enum SystemBrowser {
    /// Starts `$BROWSER` when set (the URL as its only argument), else `xdg-open`.
    /// - Returns: whether it could be started.
    static func open(_ url: String) -> Bool {
        let browser = getenv("BROWSER").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 } ?? "xdg-open"
        return Subprocess.startDetached([browser, url])
    }
}
