import ArgumentParser

/// A `vault` command: parsed by swift-argument-parser, run by the entry pipeline with the
/// process's `CommandContext`.
///
/// Whether it runs in `vault` or is handed to `vault-oauth` (`oauthHandOver`) or to
/// `vault-secret-service` (`needsSecretService`) is decided by the pipeline once the command line
/// is parsed, before the command reads anything.
protocol ContextCommand: ParsableCommand {
    /// Whether commands of this type need the OAuth client (`vault-oauth`); `.never` unless said.
    static var oauthHandOver: OAuthHandOver { get }

    /// This parsed command's need: the type's, unless its options change it (`signin --device`).
    var oauthHandOver: OAuthHandOver { get }

    /// Whether this parsed command needs the Secret Service provider (`vault-secret-service`, which
    /// links sd-bus): `agent --secret-service`, `import --from secret-service`; false unless said.
    var needsSecretService: Bool { get }

    /// Runs the command.
    func run(_ context: CommandContext) async throws
}

extension ContextCommand {
    static var oauthHandOver: OAuthHandOver { .never }
    var oauthHandOver: OAuthHandOver { Self.oauthHandOver }
    var needsSecretService: Bool { false }
}

/// Where a command runs, for the executables that do not link the OAuth client (`vault`).
enum OAuthHandOver: Sendable, Equatable {
    /// Here: the command never calls an authorization server.
    case never
    /// In `vault-oauth`; without it the command fails at once (exit 66): `refresh`, `signin --device`.
    case always
    /// In `vault-oauth` when it is installed; without it the command does what it can here and
    /// says what it could not: `token` prints a valid token, `signout` and `guest` wipe and say
    /// the tokens were not revoked.
    case whenInstalled
}
