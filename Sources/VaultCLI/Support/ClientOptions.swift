import ArgumentParser
import VaultCrypto
import CredentialVault
import FoundationEssentials

/// The options that describe an OAuth client (`vault signin --device`, `vault client`).
struct ClientOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The authorization server's issuer URL (discovery reads its metadata).", valueName: "URL"))
    var issuer: String?

    @Option(name: .customLong("client-id"), help: "The OAuth client id.")
    var clientID: String?

    @Option(name: .customLong("scope"), help: ArgumentHelp("A scope to request (repeat, or space-separated).", valueName: "S"))
    var scopes: [String] = []

    @Option(name: .customLong("token-endpoint"), help: ArgumentHelp("Override the discovered token endpoint.", valueName: "URL"))
    var tokenEndpoint: String?

    @Option(name: .customLong("revocation-endpoint"), help: ArgumentHelp("Override the discovered revocation endpoint.", valueName: "URL"))
    var revocationEndpoint: String?

    @Option(name: .customLong("device-endpoint"), help: ArgumentHelp("Override the discovered device authorization endpoint.", valueName: "URL"))
    var deviceEndpoint: String?

    @Option(name: .customLong("authorization-endpoint"), help: ArgumentHelp("Override the discovered authorization endpoint (--browser).", valueName: "URL"))
    var authorizationEndpoint: String?

    @Flag(help: "Bind the tokens to a P-256 key with DPoP (RFC 9449), sealed in the vault (a sealed key is kept; else a new one).")
    var dpop = false

    @Option(name: .customLong("ca-bundle"), help: ArgumentHelp("A PEM file of CA certificates to trust instead of the system's.", valueName: "FILE"))
    var caBundle: String?

    /// The configuration to store, with the given authentication and grant.
    func stored(authMethod: ClientAuthMethod = .none, grant: ClientGrant = .refreshToken) throws -> StoredClientConfiguration {
        guard let clientID, !clientID.isEmpty else { throw UsageError("--client-id is required") }
        guard issuer != nil || tokenEndpoint != nil else {
            throw UsageError("give --issuer (or at least --token-endpoint)")
        }
        let caBundle = caBundle.map { PathText.expandingTilde($0) }.map { $0.hasPrefix("/") ? $0 : FileManager.default.currentDirectoryPath + "/" + $0 }
        var stored = StoredClientConfiguration(
            issuer: issuer, clientID: clientID, authMethod: authMethod, grant: grant,
            scopes: scopes.flatMap { $0.split(separator: " ").map(String.init) },
            tokenEndpoint: tokenEndpoint, revocationEndpoint: revocationEndpoint, deviceEndpoint: deviceEndpoint,
            authorizationEndpoint: authorizationEndpoint, caBundle: caBundle, caBundleSHA256: try caBundle.map(StoredClientConfiguration.fingerprint(ofBundle:)))
        stored.dpop = dpop
        return stored
    }

    /// A new DPoP key when `--dpop` was given (its raw form, to seal).
    func newDPoPKey() throws -> SecureBytes? {
        dpop ? try P256SigningKey().rawRepresentation : nil
    }
}
