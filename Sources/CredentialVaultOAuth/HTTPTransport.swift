import AsyncHTTPClient
import FoundationEssentials
import NIOCore
import NIOHTTP1
import NIOSSL

/// One HTTP exchange with the authorization server, and what came back.
struct HTTPExchange: Sendable {
    var status: Int
    var headers: HTTPHeaders
    var body: [UInt8]
}

/// The HTTP client of an `OAuthClient`: no redirects (credentials must not follow them),
/// the system trust store or a CA bundle, bounded bodies and deadlines.
final class HTTPTransport: Sendable {
    /// Larger responses are refused.
    static let maximumBodyLength = 1 << 20
    private let client: HTTPClient

    init(caBundlePath: String?) throws {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let caBundlePath {
            tls.trustRoots = .file(caBundlePath)
        }
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls, redirectConfiguration: .disallow)
        configuration.httpVersion = .http1Only
        // A refused connection fails the attempt at once; RetryPolicy decides about retries
        // (AsyncHTTPClient would otherwise keep reconnecting until the deadline).
        configuration.connectionPool.retryConnectionEstablishment = false
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    func shutdown() async throws {
        try await client.shutdown()
    }

    /// Sends the request; transport failures are thrown as they come (the caller classifies them).
    func send(_ url: URL, method: HTTPMethod, headers: HTTPHeaders, body: ByteBuffer?, timeout: Duration) async throws -> HTTPExchange {
        var request = HTTPClientRequest(url: url.absoluteString)
        request.method = method
        request.headers = headers
        request.headers.replaceOrAdd(name: "Accept", value: "application/json")
        if let body {
            request.body = .bytes(body)
        }
        let milliseconds = Int64(RetryPolicy.seconds(timeout) * 1000)
        let response = try await client.execute(request, timeout: .milliseconds(milliseconds))
        let buffer = try await response.body.collect(upTo: Self.maximumBodyLength)
        return HTTPExchange(status: Int(response.status.code), headers: response.headers,
                            body: Array(buffer.readableBytesView))
    }
}
