/// The user's browser, for `vault signin --browser`.
enum SystemBrowser {
    /// Starts `$BROWSER` when set (the URL as its only argument), else `xdg-open`.
    /// - Parameter environment: the command's environment (`$BROWSER`).
    /// - Returns: whether it could be started.
    static func open(_ url: String, environment: CommandEnvironment) -> Bool {
        let browser = environment[.browser] ?? "xdg-open"
        return Subprocess.startDetached([browser, url])
    }
}
