import FoundationEssentials
#if canImport(Glibc)
import Glibc
#else
#error("vault runs on Linux (Glibc)")
#endif

/// Path arithmetic on plain strings, as `NSString`'s path methods do it, so the library
/// needs only FoundationEssentials (NSString lives in the full Foundation, whose static link
/// brings ICU and ~50 MB with it).
package enum PathText {
    /// `base` + "/" + `component`, with one slash between them (`NSString.appendingPathComponent`).
    /// `path` with every symbolic link, "." and ".." resolved, or nil when it does not exist
    /// (`Syscall.canonicalPath`).
    package static func canonical(_ path: String) -> String? {
        try? Syscall.canonicalPath(path)
    }

    package static func joining(_ base: String, _ component: String) -> String {
        if base.isEmpty { return component }
        if component.isEmpty { return base }
        let trimmedComponent = component.drop(while: { $0 == "/" })
        return base.hasSuffix("/") ? base + trimmedComponent : base + "/" + trimmedComponent
    }

    /// The path without its last component (`NSString.deletingLastPathComponent`):
    /// "/a/b" → "/a", "/a" → "/", "a" → "", trailing slashes ignored.
    package static func parent(of path: String) -> String {
        var trimmed = Substring(path)
        while trimmed.count > 1 && trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
        guard let slash = trimmed.lastIndex(of: "/") else { return "" }
        let parent = trimmed[..<slash]
        return parent.isEmpty ? "/" : String(parent)
    }

    /// The user's home folder: `$HOME` when set and not empty (as `NSHomeDirectory()` does),
    /// else the password database's entry for this user; nil when neither is known.
    /// - Parameter environment: the process environment.
    package static func homeDirectory(environment: [String: String] = ProcessEnvironment.values("HOME")) -> String? {
        if let home = environment["HOME"], !home.isEmpty { return home }
        guard let entry = getpwuid(getuid()), let directory = entry.pointee.pw_dir else { return nil }
        let home = String(cString: directory)
        return home.isEmpty ? nil : home
    }

    /// The folder for temporary files: `$TMPDIR` when set and absolute, else /tmp.
    package static func temporaryDirectory(environment: [String: String] = ProcessEnvironment.values("TMPDIR")) -> String {
        if let temporary = environment["TMPDIR"], temporary.hasPrefix("/") { return temporary }
        return "/tmp"
    }

    /// `~` and `~/…` expanded with the home folder; other paths unchanged.
    package static func expandingTilde(_ path: String) -> String {
        guard path == "~" || path.hasPrefix("~/"), let home = homeDirectory() else { return path }
        return joining(home, String(path.dropFirst(2)))
    }
}
