#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CredentialVault
import FoundationEssentials
import VaultCrypto

/// The clipboard, through whichever of `wl-copy`, `xclip` or `xsel` is on PATH (`wl-copy`
/// first under Wayland). vault never talks to the display server itself.
struct Clipboard: Sendable {
    /// One clipboard program and how to copy, read and clear with it.
    struct Tool: Sendable, Equatable {
        let name: String
        let copy: [String]
        let paste: [String]
        let clear: [String]
    }

    static let wayland = Tool(name: "wl-copy", copy: ["wl-copy"], paste: ["wl-paste", "--no-newline"], clear: ["wl-copy", "--clear"])
    static let xclip = Tool(name: "xclip", copy: ["xclip", "-selection", "clipboard", "-in"],
                            paste: ["xclip", "-selection", "clipboard", "-out"], clear: ["xclip", "-selection", "clipboard", "-in"])
    static let xsel = Tool(name: "xsel", copy: ["xsel", "--clipboard", "--input"],
                           paste: ["xsel", "--clipboard", "--output"], clear: ["xsel", "--clipboard", "--clear"])

    let tool: Tool

    /// The tool to use, by name (for the clearer process).
    init?(toolName: String) {
        guard let tool = [Self.wayland, Self.xclip, Self.xsel].first(where: { $0.name == toolName }) else { return nil }
        self.tool = tool
    }

    /// The first usable tool on `PATH` (`wl-copy` first when `WAYLAND_DISPLAY` is set).
    /// - Parameter environment: the command's environment.
    /// - Throws: `.notFound` naming the programs to install when there is none.
    static func find(environment: CommandEnvironment) throws -> Clipboard {
        let order = environment[.waylandDisplay] != nil ? [wayland, xclip, xsel] : [xclip, xsel, wayland]
        let path = environment[.path] ?? "/usr/bin:/bin"
        guard let tool = order.first(where: { executable($0.copy[0], path: path) != nil }) else {
            throw VaultError(.notFound, "no clipboard program found: --clip needs wl-copy (Wayland), xclip or xsel on PATH",
                             fix: "install one (e.g. apt-get install wl-clipboard, xclip or xsel), or leave out --clip to print the secret")
        }
        return Clipboard(tool: tool)
    }

    private init(tool: Tool) { self.tool = tool }

    /// The full path of `name` in one of `path`'s folders, or nil.
    static func executable(_ name: String, path: String) -> String? {
        for directory in path.split(separator: ":") where !directory.isEmpty {
            let candidate = "\(directory)/\(name)"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }

    /// Puts `secret` on the clipboard (through the tool's standard input, never its arguments;
    /// xclip stays in the background holding the selection, so its output goes to /dev/null).
    /// - Throws: `.io` when the tool fails (e.g. no display).
    func copy(_ secret: SecureBytes) throws {
        let status = Subprocess.run(tool.copy, input: secret, timeout: 10).status
        guard status == 0 else {
            throw VaultError(.io, "\(tool.name) could not copy to the clipboard (exit status \(status))",
                             fix: "check that a graphical session is running (DISPLAY or WAYLAND_DISPLAY is set)")
        }
    }

    /// The clipboard's SHA-256, or nil when it cannot be read.
    func currentDigest() -> [UInt8]? {
        let result = Subprocess.run(tool.paste, captureOutput: true, timeout: 10)
        guard result.status == 0, let output = result.output else { return nil }
        return try? SHA256.hash(output)
    }

    /// Empties the clipboard.
    func clear() {
        _ = Subprocess.run(tool.clear, input: .empty, timeout: 10)
    }
}
