import CredentialVault

/// What a command asks its context for, the one way it gets a store (`CommandContext.storage`):
/// which storage (the entry commands' path through the agent, the selected store, the vault file,
/// the fleet sessions of a PostgreSQL store) and whether it is opened or created. The type of
/// what comes back follows from the request: `SecretStore` for the vault file, `any FleetSessionStore`
/// for PostgreSQL, `any SecretStorage` for either.
///
///     let store = try await context.storage(.vaultFile(), options)            // passwd, rotate
///     let storage = try await context.storage(.entries, options)              // get, add, list…
///     let created = try await context.storage(.selected(.create), options)    // init
struct StorageRequest<Storage> {
    /// Opened or created.
    typealias Access = StorageAccess

    /// Which storage.
    enum Target {
        /// The vault file in `--vault DIR`; `refusingPostgres`: a PostgreSQL selection is refused
        /// (`requireFileStore`), else the file is used whatever the options select (`migrate-store`).
        case vaultFile(refusingPostgres: Bool, (SecretStore) -> Storage)
        /// The selected store: the vault file, or a PostgreSQL store (`vault-postgres`).
        case selected((any SecretStorage) -> Storage)
        /// The entry commands' store: through the user's agent when it holds the vault, else the selected one.
        case entries((any SecretStorage) -> Storage)
        /// The selected PostgreSQL store, for the fleet sessions; the vault file is refused.
        case fleetSessions((any FleetSessionStore) -> Storage)
        /// The PostgreSQL store `name` at `url` (`migrate-store`'s source or destination).
        case postgres(url: String, name: String, (any FleetSessionStore) -> Storage)
    }

    /// Which storage.
    let target: Target
    /// Opened or created.
    let access: Access
    /// Whether a weak new passphrase is accepted (the vault file only: `init`, `passwd`, `migrate-store`).
    let allowsWeakPassphrase: Bool
}

extension StorageRequest where Storage == SecretStore {
    /// The vault file; a PostgreSQL store selected by the options is refused (sessions, `passwd`,
    /// `rotate`, `upgrade-format`, the credential helpers).
    static func vaultFile(_ access: Access = .open, allowingWeakPassphrase: Bool = false) -> Self {
        Self(target: .vaultFile(refusingPostgres: true) { $0 }, access: access, allowsWeakPassphrase: allowingWeakPassphrase)
    }

    /// The vault file in `--vault DIR` whatever store the options select (`migrate-store`).
    static func vaultFileWhateverSelected(_ access: Access = .open, allowingWeakPassphrase: Bool = false) -> Self {
        Self(target: .vaultFile(refusingPostgres: false) { $0 }, access: access, allowsWeakPassphrase: allowingWeakPassphrase)
    }
}

extension StorageRequest where Storage == any SecretStorage {
    /// The entry commands' store (`get`, `list`, `inspect`, `add`, `rm`, `exec`, `inject`,
    /// `import`): through the user's agent when one answers and holds this vault unlocked, else
    /// the selected store, opened.
    static var entries: Self { Self(target: .entries { $0 }, access: .open, allowsWeakPassphrase: false) }

    /// The selected store (the vault file, or PostgreSQL in `vault-postgres`), opened or created.
    static func selected(_ access: Access = .open, allowingWeakPassphrase: Bool = false) -> Self {
        Self(target: .selected { $0 }, access: access, allowsWeakPassphrase: allowingWeakPassphrase)
    }
}

extension StorageRequest where Storage == any FleetSessionStore {
    /// The selected PostgreSQL store, opened, for the fleet-session commands.
    static var fleetSessions: Self { Self(target: .fleetSessions { $0 }, access: .open, allowsWeakPassphrase: false) }

    /// The PostgreSQL store `name` at `url`, opened or created.
    static func postgres(url: String, name: String, _ access: Access = .open) -> Self {
        Self(target: .postgres(url: url, name: name) { $0 }, access: access, allowsWeakPassphrase: false)
    }
}

/// Whether a `StorageRequest` opens what exists, creates a new one, or either.
enum StorageAccess: Sendable {
    /// Opened once, then kept; a missing vault file is `.notFound` before a key is asked for.
    case open
    /// Created; an existing vault file is `.alreadyExists` before a key is asked for, and a
    /// passphrase typed on the terminal is asked twice.
    case create
    /// Opened when it exists, else created (the vault file; a PostgreSQL store is opened).
    case openOrCreate
}
