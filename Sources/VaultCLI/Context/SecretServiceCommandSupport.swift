import CredentialVault
import FoundationEssentials

/// What the Secret Service provider adds to the command line. `vault-secret-service`
/// (Sources/VaultSecretServiceMain) links sd-bus (`libsystemd`) through `VaultSecretService` and
/// provides it; `vault` does not link a bus library and hands `vault agent --secret-service` and
/// `vault import --from secret-service` to `vault-secret-service` (`HelperExecutable`).
package protocol SecretServiceCommandSupport: Sendable {
    /// Claims `org.freedesktop.secrets` on the session bus and serves the Secret Service API for
    /// the agent until `stop()` is called. Returns once the name is owned.
    /// - Throws: `.alreadyExists` when another program owns the name and `replace` is false;
    ///   `.busUnavailable` when there is no session bus to connect to.
    func start(_ setup: SecretServiceSetup) throws -> any RunningSecretService

    /// Every item (secret, label, attributes) of every collection of the provider that owns
    /// `org.freedesktop.secrets` now: what `vault import --from secret-service` copies.
    /// - Parameter setup: the bus to ask and the time allowed.
    func exportItems(_ setup: SecretServiceExportSetup) throws -> [SecretServiceItemExport]
}

/// What the agent gives the Secret Service provider it starts.
package struct SecretServiceSetup: Sendable {
    /// The vault served as the collection behind the `default` and `login` aliases.
    package var directory: String
    /// Take the name from the program that owns it (`--replace`).
    package var replace: Bool
    /// The agent's vaults and answers: the provider reads and writes entries only through it, so
    /// the key never leaves the agent and the reserved names are checked as for socket callers.
    package var handler: AgentRequestHandler
    /// The agent's rules in force now (re-read when the file changed); nil when there are none.
    /// Throws the rules file's error while it is unusable (every entry request is then refused).
    package var rules: @Sendable () throws -> AgentRules?
    /// The agent's log (never a value).
    package var log: @Sendable (String) -> Void
    /// The command's environment (`$VAULT_PINENTRY` for prompts, the bus address's fallbacks).
    package var environment: CommandEnvironment

    /// A setup; every member as named.
    package init(directory: String, replace: Bool, handler: AgentRequestHandler, rules: @escaping @Sendable () throws -> AgentRules?,
                 log: @escaping @Sendable (String) -> Void, environment: CommandEnvironment) {
        self.directory = directory
        self.replace = replace
        self.handler = handler
        self.rules = rules
        self.log = log
        self.environment = environment
    }
}

/// A Secret Service provider that is running.
package protocol RunningSecretService: Sendable {
    /// Releases the name, closes the bus connection and forgets the in-memory collections.
    func stop()
}

/// What `vault import --from secret-service` asks the provider that owns the name.
package struct SecretServiceExportSetup: Sendable {
    /// The command's environment (the session bus's address comes from the process environment).
    package var environment: CommandEnvironment
    /// How long the whole export may take.
    package var timeout: Duration

    /// A setup; every member as named.
    package init(environment: CommandEnvironment, timeout: Duration) {
        self.environment = environment
        self.timeout = timeout
    }
}

/// One item read from another Secret Service provider.
package struct SecretServiceItemExport: Sendable {
    /// The label of the collection it was in.
    package var collection: String
    /// The item's label.
    package var label: String
    /// The item's attributes (xdg:schema among them, when the client set one).
    package var attributes: [String: String]
    /// The secret's bytes.
    package var secret: SecureBytes
    /// The secret's content type ("text/plain" most often).
    package var contentType: String
    /// When the item was made and last changed, when the provider said.
    package var created: Date?
    /// When the item last changed.
    package var modified: Date?

    /// An item; every member as named.
    package init(collection: String, label: String, attributes: [String: String], secret: SecureBytes, contentType: String,
                 created: Date?, modified: Date?) {
        self.collection = collection
        self.label = label
        self.attributes = attributes
        self.secret = secret
        self.contentType = contentType
        self.created = created
        self.modified = modified
    }
}
