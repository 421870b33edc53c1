import CredentialVault

extension PostgresStoreConfiguration {
    /// One server of the URL's host list (`postgres://user@h1:p1,h2:p2/db`, as libpq writes it).
    ///
    /// The store uses the one that answers as the primary (not in recovery); a standby is never
    /// read from (`PostgresPrimarySelection`).
    public struct Endpoint: Sendable, Equatable {
        /// The server's host name or address (an IPv6 literal without its brackets).
        public var host: String
        /// The server's port.
        public var port: Int
        /// TLS, or plain for a loopback host only: decided for each host on its own.
        public var transport: Transport

        /// An endpoint whose transport follows its host: plain for loopback, else TLS.
        /// - Parameters:
        ///   - host: The host name or address.
        ///   - port: The port.
        public init(host: String, port: Int) {
            self.host = host
            self.port = port
            self.transport = PostgresStoreConfiguration.isLoopback(host) ? .plainLoopback : .tlsRequired
        }

        /// The host to connect to: for loopback the IP literal itself (`localhost` → 127.0.0.1, no
        /// name lookup), else the host as given (TLS checks its certificate).
        public var connectionHost: String { LoopbackHost.address(host) ?? host }

        /// `host:port`, with brackets around an IPv6 literal, escaped for a terminal.
        var displayName: String {
            let shown = host.contains(":") ? "[\(host)]" : host
            return "\(TerminalText.escaped(shown)):\(port)"
        }
    }

    /// The first endpoint's host name or address (the URL's first host).
    public var host: String {
        get { endpoints.first?.host ?? "" }
        set { updateFirstEndpoint { $0.host = newValue } }
    }

    /// The first endpoint's port.
    public var port: Int {
        get { endpoints.first?.port ?? 5432 }
        set { updateFirstEndpoint { $0.port = newValue } }
    }

    /// The first endpoint's transport: TLS, or (loopback only) plain.
    public var transport: Transport {
        get { endpoints.first?.transport ?? .tlsRequired }
        set { updateFirstEndpoint { $0.transport = newValue } }
    }

    /// The host to connect to for the first endpoint (see `Endpoint.connectionHost`).
    public var connectionHost: String { endpoints.first?.connectionHost ?? host }

    private mutating func updateFirstEndpoint(_ change: (inout Endpoint) -> Void) {
        if endpoints.isEmpty { endpoints.append(Endpoint(host: "", port: 5432)) }
        change(&endpoints[0])
    }

    /// Parses the URL's host list: `host[:port]` items separated by commas, an IPv6 literal in
    /// brackets (`[::1]:5433`); a missing port is 5432.
    /// - Parameter text: What lies between the URL's `@` and its `/database`.
    /// - Returns: The endpoints in the URL's order (at least one).
    /// - Throws: The reason for `invalidInput`: an empty item, a bad port, a malformed bracket.
    static func parseEndpoints(_ text: Substring) throws(EndpointListError) -> [Endpoint] {
        var endpoints: [Endpoint] = []
        for item in text.split(separator: ",", omittingEmptySubsequences: false) {
            var hostText = item
            var port = 5432
            if item.hasPrefix("[") {
                guard let close = item.firstIndex(of: "]") else { throw .malformedBracket }
                hostText = item[item.index(after: item.startIndex)..<close]
                let after = item[item.index(after: close)...]
                if !after.isEmpty {
                    guard after.hasPrefix(":") else { throw .malformedBracket }
                    port = try parsePort(after.dropFirst())
                }
            } else if let colon = item.firstIndex(of: ":") {
                guard item[item.index(after: colon)...].firstIndex(of: ":") == nil else { throw .malformedBracket }
                hostText = item[..<colon]
                port = try parsePort(item[item.index(after: colon)...])
            }
            guard !hostText.isEmpty else { throw .missingHost }
            endpoints.append(Endpoint(host: String(hostText), port: port))
        }
        guard !endpoints.isEmpty else { throw .missingHost }
        return endpoints
    }

    private static func parsePort(_ text: Substring) throws(EndpointListError) -> Int {
        guard let port = Int(text), (1...65535).contains(port), text.allSatisfy(\.isASCII) else { throw .invalidPort }
        return port
    }

    /// Why a URL's host list was refused.
    enum EndpointListError: Error, Equatable {
        /// An item names no host (`h1,,h2`, `:5432`).
        case missingHost
        /// A port that is not 1...65535.
        case invalidPort
        /// An IPv6 literal without its closing bracket, text after it, or unbracketed.
        case malformedBracket

        /// What the URL does, for the error message.
        var reason: String {
            switch self {
            case .missingHost: "names no host (or an empty item in its host list)"
            case .invalidPort: "has an invalid port"
            case .malformedBracket: "has a malformed host (write an IPv6 address in brackets: [::1]:5432)"
            }
        }
    }
}
