/// A file path split into its directory and last component, so the file layer can work
/// relative to an open directory descriptor (`openat`, `renameat`, `unlinkat`).
struct SplitPath: Sendable, Equatable {
    /// The containing directory: "." for a bare name, "/" for a file in the root.
    let directory: String
    /// The last component; never empty, "." or "..".
    let name: String

    /// Splits `path`, ignoring trailing slashes.
    /// - Throws: `VaultError` `.invalidInput` when the path has no usable file name.
    init(_ path: String) throws(VaultError) {
        var trimmed = Substring(path)
        while trimmed.count > 1 && trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
        if let slash = trimmed.lastIndex(of: "/") {
            let parent = trimmed[..<slash]
            directory = parent.isEmpty ? "/" : String(parent)
            name = String(trimmed[trimmed.index(after: slash)...])
        } else {
            directory = "."
            name = String(trimmed)
        }
        guard !name.isEmpty, name != ".", name != ".." else {
            throw VaultError(.invalidInput, "the path does not name a file", path: path,
                             fix: "pass a path that ends in a file name")
        }
    }
}
