#if canImport(Glibc)
import Glibc
#endif
import CredentialVault
import FoundationEssentials
import Synchronization

/// Why a loopback redirect listener failed.
public struct LoopbackRedirectError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public enum Kind: Sendable, Hashable {
        /// The port could not be bound (in use, or not allowed).
        case portUnavailable
        /// No callback with the right `state` came in time.
        case noCallback
    }

    /// What went wrong.
    public let kind: Kind
    /// In our words.
    public let description: String
}

/// An HTTP listener on 127.0.0.1 for one authorization response (RFC 8252 §7.3): it answers
/// `GET /callback` and `GET /signin`, one connection at a time, with bounded reads.
///
/// Only this user's own processes are answered: a connection whose peer socket belongs to
/// another uid (`LoopbackPeer`, the kernel's socket tables) gets 403 before its request is read,
/// and the wait goes on; so another local user who learnt the `state` cannot complete the
/// sign-in. `GET /signin` redirects to the authorization URL, so that the browser is started with
/// this address only and the URL (`state`, `nonce`, `code_challenge`) never sits in a process's
/// arguments, which every user can read. Requests for other paths get 404; a callback whose
/// `state` is missing or wrong gets 400 and changes nothing (the wait goes on). The first
/// callback with the right `state` is handed to the caller with its connection still open, so
/// that the browser's page can say how the sign-in ended (`respond`).
final class LoopbackRedirectListener: Sendable {
    /// The bound port.
    let port: Int
    private let descriptor: Int32
    /// Set by `cancel()` (the waiting task was cancelled): the wait ends within 250 ms.
    private let cancelled = Atomic<Bool>(false)

    /// Ends `waitForCallback` with `CancellationError` (from any thread).
    func cancel() { cancelled.store(true, ordering: .relaxed) }

    /// The redirect URI to register: `http://127.0.0.1:PORT/callback`.
    var redirectURI: String { "http://127.0.0.1:\(port)/callback" }

    /// The start address for the sign-in whose authorization URL is `authorizationURL` (its
    /// `redirect_uri` names the listener); nil when it names no loopback listener of ours.
    static func startURI(forAuthorizationURL authorizationURL: String) -> String? {
        guard let mark = authorizationURL.firstIndex(of: "?"),
              let redirect = parameters(String(authorizationURL[authorizationURL.index(after: mark)...]))["redirect_uri"],
              redirect.hasPrefix("http://127.0.0.1:"), redirect.hasSuffix("/callback") else { return nil }
        return String(redirect.dropLast("/callback".count)) + "/signin"
    }

    /// Whether the peer of `connection` is a process of this user (its socket's uid is our effective uid).
    static func peerIsThisUser(_ connection: Int32) -> Bool {
        LoopbackPeer.ownerUID(of: connection) == geteuid()
    }

    /// The longest request line and headers read (a callback URL is well under this).
    static let maximumRequestBytes = 16 * 1024

    /// Binds 127.0.0.1:`port` (0 for an ephemeral port) and listens.
    init(port: Int) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else {
            throw LoopbackRedirectError(kind: .portUnavailable, description: "cannot open a socket: \(SystemErrorText.describe(errno))")
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(clamping: port)).bigEndian
        address.sin_addr.s_addr = in_addr_t(0x7F00_0001).bigEndian
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 16) == 0 else {
            let code = errno
            close(fd)
            throw LoopbackRedirectError(kind: .portUnavailable,
                                        description: "cannot listen on 127.0.0.1:\(port): \(SystemErrorText.describe(code))")
        }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        descriptor = fd
        self.port = Int(UInt16(bigEndian: actual.sin_port))
    }

    deinit { close(descriptor) }

    /// One accepted callback: its query parameters, and the connection to answer on.
    struct Callback: Sendable {
        let parameters: [String: String]
        let connection: Int32
    }

    /// Waits for the first `GET /callback` from this user whose `state` equals `state`, until
    /// `deadline`. Every other request is answered (403 for another user, 404, or 400 for a wrong
    /// state) and closed.
    /// - Throws: `LoopbackRedirectError` `.noCallback` at the deadline; `CancellationError`.
    /// `GET /signin` is answered with a redirect to `authorizationURL`.
    func waitForCallback(state: String, authorizationURL: String, until deadline: ContinuousClock.Instant) throws -> Callback {
        while true {
            if cancelled.load(ordering: .relaxed) { throw CancellationError() }
            let remaining = deadline - .now
            guard remaining > .zero else {
                throw LoopbackRedirectError(kind: .noCallback, description: "no sign-in came back to \(redirectURI) in time")
            }
            guard Self.waitReadable(descriptor, for: min(remaining, .milliseconds(250))) else { continue }
            let connection = accept(descriptor, nil, nil)
            guard connection >= 0 else {
                usleep(50_000)   // out of descriptors, say: no busy loop until the deadline
                continue
            }
            _ = fcntl(connection, F_SETFD, FD_CLOEXEC)
            guard Self.peerIsThisUser(connection) else {
                Self.respond(connection, status: "403 Forbidden",
                             page: "This sign-in belongs to another user of this computer; the request was refused.")
                continue
            }
            // A browser may open a connection and send nothing (a preconnect): 3 s at most each.
            guard let target = Self.readRequestTarget(connection, until: min(deadline, .now + .seconds(3))) else {
                Self.respond(connection, status: "400 Bad Request", page: "Bad request.")
                continue
            }
            let (path, query) = Self.split(target)
            if path == "/signin" {
                // Printable ASCII only (it is built from percent-encoded parts): nothing can end the header line.
                let printable = authorizationURL.utf8.allSatisfy { (0x21...0x7E).contains($0) }
                Self.respond(connection, status: printable ? "302 Found" : "500 Internal Server Error",
                             page: printable ? "Continue to the sign-in page." : "The sign-in address cannot be sent.",
                             location: printable ? authorizationURL : nil)
                continue
            }
            guard path == "/callback" else {
                Self.respond(connection, status: "404 Not Found", page: "Not found.")
                continue
            }
            let parameters = Self.parameters(query)
            guard let given = parameters["state"],
                  SecureBytes(copying: Array(given.utf8)) == SecureBytes(copying: Array(state.utf8)) else {
                Self.respond(connection, status: "400 Bad Request",
                             page: "This sign-in response does not belong to the sign-in that is waiting; it was ignored.")
                continue
            }
            return Callback(parameters: parameters, connection: connection)
        }
    }

    /// Answers a callback with a short page and closes its connection.
    static func finish(_ callback: Callback, succeeded: Bool, message: String) {
        respond(callback.connection, status: succeeded ? "200 OK" : "400 Bad Request", page: message)
    }

    // MARK: HTTP, minimally

    private static func waitReadable(_ fd: Int32, for duration: Duration) -> Bool {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let milliseconds = Int32(clamping: duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000)
        return poll(&entry, 1, max(1, milliseconds)) > 0
    }

    /// The request target of a `GET` request, or nil for anything else, too long, or too slow.
    private static func readRequestTarget(_ fd: Int32, until deadline: ContinuousClock.Instant) -> String? {
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while !received.contains(where: { $0 == UInt8(ascii: "\n") }) {
            guard received.count < maximumRequestBytes else { return nil }
            let remaining = deadline - .now
            guard remaining > .zero, waitReadable(fd, for: remaining) else { return nil }
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard count > 0 else { return nil }
            received += chunk[0..<count]
        }
        guard let end = received.firstIndex(of: UInt8(ascii: "\n")) else { return nil }
        let line = String(decoding: received[..<end].filter { $0 != UInt8(ascii: "\r") }, as: UTF8.self)
        let parts = line.split(separator: " ", omittingEmptySubsequences: true)
        guard parts.count == 3, parts[0] == "GET", parts[2].hasPrefix("HTTP/1.") else { return nil }
        return String(parts[1])
    }

    private static func split(_ target: String) -> (path: String, query: String) {
        guard let mark = target.firstIndex(of: "?") else { return (target, "") }
        return (String(target[..<mark]), String(target[target.index(after: mark)...]))
    }

    /// `a=b&c=d` with `+` as space and `%XX` decoded; the first of a repeated name wins, and a
    /// name given twice with different values is dropped (a confused or hostile redirect).
    static func parameters(_ query: String) -> [String: String] {
        var result: [String: String] = [:]
        var conflicting: Set<String> = []
        for pair in query.split(separator: "&") {
            let halves = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decoded(_ text: Substring) -> String? {
                let spaced = Array(text.utf8).map { $0 == UInt8(ascii: "+") ? UInt8(ascii: " ") : $0 }
                return spaced.percentDecoded().flatMap { String(validating: $0, as: UTF8.self) }
            }
            guard let name = decoded(halves[0]), let value = decoded(halves.count > 1 ? halves[1] : "") else { continue }
            if let existing = result[name], existing != value { conflicting.insert(name) }
            if result[name] == nil { result[name] = value }
        }
        for name in conflicting { result[name] = nil }
        return result
    }

    private static func respond(_ fd: Int32, status: String, page: String, location: String? = nil) {
        let body = "<!doctype html><html><head><meta charset=\"utf-8\"><title>vault</title></head><body><p>"
            + htmlEscaped(page) + "</p></body></html>\n"
        let redirect = location.map { "Location: \($0)\r\n" } ?? ""
        let head = "HTTP/1.1 \(status)\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: \(body.utf8.count)\r\n"
            + redirect + "Cache-Control: no-store\r\nReferrer-Policy: no-referrer\r\nConnection: close\r\n\r\n"
        let bytes = Array((head + body).utf8)
        var offset = 0
        while offset < bytes.count {
            // MSG_NOSIGNAL: a browser that closed first must not kill the process with SIGPIPE.
            let written = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard written > 0 else { break }
            offset += written
        }
        shutdown(fd, Int32(SHUT_WR))
        close(fd)
    }

    private static func htmlEscaped(_ text: String) -> String {
        var escaped = ""
        for character in text {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            default: escaped.append(character)
            }
        }
        return escaped
    }
}
