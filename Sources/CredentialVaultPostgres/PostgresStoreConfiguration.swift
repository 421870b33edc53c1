import CredentialVault
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#else
#error("vault runs on Linux (Glibc)")
#endif
import VaultCrypto

/// Where a PostgreSQL-backed vault lives and how to reach it.
///
/// Built from a `postgres://user@host:port/database` URL, or libpq's list of several hosts
/// `postgres://user@h1:p1,h2:p2/database` (the store uses whichever is the primary). The URL
/// carries no password: the password comes from `PGPASSWORD`, from the `PGPASSFILE` (default
/// `~/.pgpass`) line that matches the first host, port, database and user, or from a file named
/// by the app, so it is never in argv; the same password is sent to every host. TLS is
/// required except for loopback addresses (decided for each host); its trust roots come from
/// `PGSSLROOTCERT` when set.
public struct PostgresStoreConfiguration: Sendable {
    /// How the connection is protected.
    public enum Transport: Sendable, Equatable {
        /// TLS with the system's trust store; the server's name is verified.
        case tlsRequired
        /// No TLS. Accepted only for loopback addresses (127.0.0.0/8, ::1, localhost).
        case plainLoopback
    }

    /// The servers, in the URL's order: the store uses the one that answers as the primary (not
    /// in recovery; `PostgresPrimarySelection`). `host`, `port` and `transport` are the first one's.
    public var endpoints: [Endpoint]
    /// The database user.
    public var username: String
    /// The database.
    public var database: String
    /// The password, if the server needs one. Never printed.
    public var password: SecureBytes?
    /// Which vault in the database: several services can share one database, each with its own
    /// store name and key. The store name is the only plaintext name the database holds.
    public var storeName: String
    /// The most connections the pool opens.
    public var maximumConnections: Int = 8
    /// How long to wait for a connection before the store reports the server unavailable.
    public var connectTimeout: Duration = .seconds(5)
    /// A PEM file of the trust roots that verify the server's certificate (libpq's
    /// `PGSSLROOTCERT`, read from the environment like `PGPASSWORD`); nil or `system`: the
    /// system's trust store. Used only with `.tlsRequired`.
    public var trustRootsPath: String?

    /// Parses `postgres://user@host[:port][,host[:port]…]/database`. A password in the URL is
    /// refused (it would end up in argv or shell history); a non-loopback host gets `.tlsRequired`.
    /// - Parameters:
    ///   - url: The server's URL.
    ///   - storeName: Which vault in the database (default `default`).
    ///   - environment: Where `PGPASSWORD` and `PGPASSFILE` are read (default: the process's).
    /// - Throws: `.invalidInput` for a malformed URL (an empty host list item, a bad port) or one
    ///   with a password.
    public init(url: String, storeName: String = "default",
                environment: [String: String] = PostgresStoreConfiguration.processEnvironment()) throws {
        func invalid(_ why: String) -> VaultError {
            VaultError(.invalidInput, "the PostgreSQL URL \(why)",
                       fix: "write it as postgres://USER@HOST:PORT/DATABASE; the password comes from PGPASSWORD or PGPASSFILE")
        }
        var rest: Substring
        if url.hasPrefix("postgres://") { rest = url.dropFirst("postgres://".count) }
        else if url.hasPrefix("postgresql://") { rest = url.dropFirst("postgresql://".count) }
        else { throw invalid("does not start with postgres://") }
        if let query = rest.firstIndex(of: "?") { rest = rest[..<query] }
        guard let at = rest.lastIndex(of: "@") else { throw invalid("names no user") }
        let user = rest[..<at]
        guard !user.contains(":") else { throw invalid("contains a password") }
        guard !user.isEmpty else { throw invalid("names no user") }
        let hostPart = rest[rest.index(after: at)...]
        guard let slash = hostPart.firstIndex(of: "/") else { throw invalid("names no database") }
        let database = hostPart[hostPart.index(after: slash)...]
        guard !database.isEmpty, !database.contains("/") else { throw invalid("names no database") }
        let endpoints: [Endpoint]
        do { endpoints = try Self.parseEndpoints(hostPart[..<slash]) } catch { throw invalid(error.reason) }
        self.endpoints = endpoints
        self.username = String(user)
        self.database = String(database)
        self.storeName = storeName
        self.trustRootsPath = environment["PGSSLROOTCERT"].flatMap { $0.isEmpty ? nil : $0 }
        self.password = Self.password(host: endpoints[0].host, port: endpoints[0].port, database: String(database), user: String(user),
                                      environment: environment)
    }

    /// The process environment, read once per call.
    public static func processEnvironment() -> [String: String] {
        var result: [String: String] = [:]
        var pointer = environ
        while let entry = pointer.pointee {
            let text = String(cString: entry)
            if let equals = text.firstIndex(of: "=") {
                result[String(text[..<equals])] = String(text[text.index(after: equals)...])
            }
            pointer += 1
        }
        return result
    }

    /// True for 127.0.0.0/8 and ::1 as strict IP literals, and exactly `localhost`
    /// (`LoopbackHost`): `127.db.example` is a name, and gets TLS.
    public static func isLoopback(_ host: String) -> Bool {
        LoopbackHost.isLoopback(host)
    }

    /// `PGPASSWORD`, else the first matching `PGPASSFILE` line (`host:port:database:user:password`,
    /// `*` matches anything, `\:` and `\\` escaped), as libpq reads it.
    static func password(host: String, port: Int, database: String, user: String,
                         environment: [String: String]) -> SecureBytes? {
        if let password = environment["PGPASSWORD"] { return SecureBytes(copying: Array(password.utf8)) }
        let path = environment["PGPASSFILE"] ?? environment["HOME"].map { $0 + "/.pgpass" }
        guard let path, let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n", omittingEmptySubsequences: true) where !line.hasPrefix("#") {
            let fields = splitPassFileLine(line)
            guard fields.count == 5 else { continue }
            let wanted = [host, String(port), database, user]
            if zip(fields.prefix(4), wanted).allSatisfy({ $0 == "*" || $0 == $1 }) {
                return SecureBytes(copying: Array(fields[4].utf8))
            }
        }
        return nil
    }

    private static func splitPassFileLine(_ line: Substring) -> [String] {
        var fields: [String] = []
        var current = ""
        var escaped = false
        for character in line {
            if escaped { current.append(character); escaped = false }
            else if character == "\\" { escaped = true }
            else if character == ":" { fields.append(current); current = "" }
            else { current.append(character) }
        }
        fields.append(current)
        return fields
    }
}
