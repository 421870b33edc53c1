import CredentialVault
import AsyncHTTPClient
import FoundationEssentials
import NIOCore
import NIOHTTP1
import NIOSSL
import VaultCrypto
import Synchronization

/// One HTTP exchange with the authorization server, and what came back.
struct HTTPExchange: Sendable {
    var status: Int
    var headers: HTTPHeaders
    var body: [UInt8]
}

/// The HTTP side of an `OAuthClient`: no redirects (credentials must not follow them),
/// the system trust store or a CA bundle, bounded bodies and deadlines.
final class HTTPTransport: Sendable {
    /// The `lastMoment` headers could not be made (a DPoP proof that failed to sign): a local
    /// failure, thrown as it is and never retried, as nothing was sent.
    struct LastMomentFailure: Error {
        /// What making the headers threw.
        let underlying: any Error
    }

    /// Larger responses are refused.
    static let maximumBodyLength = 1 << 20
    private let client: HTTPClient

    init(caBundlePath: String?, caBundlePEM: [UInt8]? = nil) throws {
        client = try SharedHTTPClients.client(caBundlePath: caBundlePath, pem: caBundlePEM)
    }

    /// Nothing to do: the HTTP client is the process's, shared with every `OAuthClient` that trusts
    /// the same roots, and lives as long as the process (`SharedHTTPClients`).
    func shutdown() async throws {}

    /// Sends the request; transport failures are thrown as they come (the caller classifies them).
    /// One deadline, `timeout`, covers the whole exchange: connecting, the request, the response
    /// head and every byte of the body (a server that trickles its body is cut off at the deadline
    /// with `HTTPClientError.deadlineExceeded`, as one that never answers). `lastMoment` adds
    /// headers made just before the request leaves (a DPoP proof, whose `iat` must be fresh), in
    /// the task that sends it, so no wait for a thread comes between the two.
    func send(_ url: URL, method: HTTPMethod, headers: HTTPHeaders, body: ByteBuffer?, timeout: Duration,
              lastMoment: (@Sendable () throws -> HTTPHeaders)? = nil) async throws -> HTTPExchange {
        let milliseconds = Int64(RetryPolicy.seconds(timeout) * 1000)
        let client = self.client
        let target = Self.connectable(url).absoluteString
        return try await withThrowingTaskGroup(of: HTTPExchange.self) { group in
            group.addTask {
                var request = HTTPClientRequest(url: target)
                request.method = method
                request.headers = headers
                if let lastMoment {
                    do { request.headers.add(contentsOf: try lastMoment()) } catch { throw LastMomentFailure(underlying: error) }
                }
                request.headers.replaceOrAdd(name: "Accept", value: "application/json")
                if let body {
                    request.body = .bytes(body)
                }
                let response = try await client.execute(request, timeout: .milliseconds(milliseconds))
                let buffer = try await response.body.collect(upTo: Self.maximumBodyLength)
                return HTTPExchange(status: Int(response.status.code), headers: response.headers,
                                    body: Array(buffer.readableBytesView))
            }
            group.addTask {
                try await Task.sleep(for: .milliseconds(milliseconds))
                throw HTTPClientError.deadlineExceeded
            }
            defer { group.cancelAll() }
            guard let first = try await group.next() else { throw HTTPClientError.deadlineExceeded }
            return first
        }
    }

    /// `url`, with a plain-http `localhost` replaced by the loopback literal it stands for, so
    /// that no resolver decides where a request with credentials goes (`LoopbackHost`).
    static func connectable(_ url: URL) -> URL {
        guard url.scheme?.lowercased() == "http", let host = url.host, let address = LoopbackHost.address(host), address != host,
              var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return url }
        components.host = address
        return components.url ?? url
    }
}

/// One AsyncHTTPClient per set of trust roots (the system store, or a CA bundle's path), made on
/// first use and kept for the life of the process.
///
/// An `HTTPClient` must be shut down before it is released (a debug build traps otherwise); an app
/// that let an `OAuthClient` go out of scope would crash itself. Shared clients are never released,
/// so no `OAuthClient` needs a shutdown, and connections are pooled across clients. A CA bundle is
/// read when its client is made: one that changes on disk needs a new process.
enum SharedHTTPClients {
    private static let clients = Mutex<[String: HTTPClient]>([:])

    static func client(caBundlePath: String?, pem: [UInt8]? = nil) throws -> HTTPClient {
        // Roots given as bytes are parsed here, once, and keyed by their digest: a client made for
        // one set of bytes never serves another.
        let roots: [NIOSSLCertificate]?
        let key: String
        if let pem {
            do {
                roots = try NIOSSLCertificate.fromPEMBytes(pem)
            } catch {
                throw OAuthError(.configuration, endpoint: "CA bundle", detail: "the CA bundle holds no readable PEM certificate")
            }
            key = "pem:" + (try SHA256.hash(pem)).map { String($0, radix: 16) }.joined(separator: ":")
        } else {
            roots = nil
            key = caBundlePath.map { "file:" + $0 } ?? "system"
        }
        return clients.withLock { clients in
            if let existing = clients[key] { return existing }
            var tls = TLSConfiguration.makeClientConfiguration()
            if let roots {
                tls.trustRoots = .certificates(roots)
            } else if let caBundlePath {
                tls.trustRoots = .file(caBundlePath)
            }
            var configuration = HTTPClient.Configuration(tlsConfiguration: tls, redirectConfiguration: .disallow)
            configuration.httpVersion = .http1Only
            // A refused connection fails the attempt at once; RetryPolicy decides about retries
            // (AsyncHTTPClient would otherwise keep reconnecting until the deadline).
            configuration.connectionPool.retryConnectionEstablishment = false
            let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
            clients[key] = client
            return client
        }
    }
}
