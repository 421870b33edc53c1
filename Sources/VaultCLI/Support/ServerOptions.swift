import ArgumentParser

/// The options of every command that talks to an authorization server (`token`, `refresh`,
/// `signout`, `guest`, `signin --device`).
struct ServerOptions: ParsableArguments {
    /// The default deadline of one exchange with the server.
    static let defaultRequestTimeout: Int64 = 10

    @Option(name: .customLong("request-timeout"), help: ArgumentHelp(
        "The deadline of one exchange with the authorization server: connecting, the request and the whole answer (default 10s; 1s to 10m).",
        valueName: "DURATION"), transform: HumanDuration.seconds(in:))
    var requestTimeoutSeconds: Int64 = ServerOptions.defaultRequestTimeout

    func validate() throws {
        guard (1...600).contains(requestTimeoutSeconds) else {
            throw ValidationError("--request-timeout must be between 1s and 10m")
        }
    }

    /// The deadline of one exchange.
    var requestTimeout: Duration { .seconds(requestTimeoutSeconds) }
}
