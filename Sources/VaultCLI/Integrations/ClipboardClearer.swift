#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CredentialVault
import FoundationEssentials
import VaultCrypto

/// The detached process that empties the clipboard after `vault get --clip`, but only if it
/// still holds the secret. It knows only the secret's SHA-256 (read from its standard
/// input), never the secret, and runs as `vault` re-executed under the name below.
enum ClipboardClearer {
    /// The argv[0] under which `vault` acts as the clearer.
    static let executableName = "vault-clipboard-clearer"

    /// Starts the clearer for `secret` on `clipboard` after `seconds`, detached (own session,
    /// standard output and error on /dev/null), and returns at once.
    /// - Throws: `.io` when it cannot be started.
    static func start(after seconds: Int64, clipboard: Clipboard, secret: SecureBytes) throws {
        var digest = try SHA256.hash(secret)
        defer { SecureWipe.wipe(&digest) }
        var pipeEnds: [Int32] = [0, 0]
        guard pipe(&pipeEnds) == 0 else { throw VaultError.io("starting the clipboard clearer", path: nil, errno: errno) }
        defer { close(pipeEnds[1]) }
        var launch = ProgramLaunch(executable: "/proc/self/exe", arguments: [executableName, String(seconds), clipboard.tool.name])
        launch.searchesPath = false
        launch.standardInput = .descriptor(pipeEnds[0])
        launch.closedInChild = pipeEnds
        launch.standardOutput = .null
        launch.standardError = .null
        let started = launch.start()
        close(pipeEnds[0])
        if case .failure(let failure) = started { throw VaultError.io("starting the clipboard clearer", path: nil, errno: failure.errno) }
        try digest.withUnsafeBytes { try StandardIO.writeAll($0, to: pipeEnds[1], name: "the clipboard clearer") }
    }

    /// The clearer's own main: waits, then clears if the clipboard's digest is still the secret's.
    /// - Parameter arguments: seconds and the tool name.
    static func main(_ arguments: [String]) -> Int32 {
        _ = setsid()
        guard arguments.count == 2, let seconds = Int64(arguments[0]), seconds >= 0,
              let clipboard = Clipboard(toolName: arguments[1]),
              let input = try? StandardIO.readAll(from: StandardIO.input, limit: SHA256.byteCount, name: "standard input"),
              input.count == SHA256.byteCount else { return VaultExitStatus.usage }
        close(StandardIO.input)
        var request = timespec(tv_sec: Int(seconds), tv_nsec: 0)
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0, errno == EINTR { request = remaining }
        guard let current = clipboard.currentDigest(), SecureBytes(copying: current) == input else { return 0 }
        clipboard.clear()
        return 0
    }
}
