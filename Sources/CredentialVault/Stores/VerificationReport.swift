/// The result of `SecretStore.verify()`: every entry's secret was authenticated.
public struct VerificationReport: Sendable, Equatable {
    /// One entry that failed to authenticate.
    public struct Failure: Sendable, Equatable {
        /// The entry's owner namespace.
        public let owner: String
        /// The entry's name.
        public let name: String
        /// What failed.
        public let error: VaultError

        /// One failure; `package` for the same reason as the report's initialiser.
        package init(owner: String, name: String, error: VaultError) {
            self.owner = owner
            self.name = name
            self.error = error
        }
    }

    /// The vault's id, in hex.
    public let vaultID: String
    /// The generation that was verified.
    public let generation: UInt64
    /// How many entries were checked.
    public let entriesChecked: Int
    /// Entries whose secret did not authenticate. Empty when the vault is intact.
    public let failures: [Failure]
    /// The vault file's major format version (`SecretStore.currentFormatVersion` is the newest);
    /// nil for a store that has no file format (PostgreSQL).
    public let formatVersion: Int?

    /// A report; `package` so that every store of this package (file, PostgreSQL) makes the same one.
    package init(vaultID: String, generation: UInt64, entriesChecked: Int, failures: [Failure], formatVersion: Int? = nil) {
        self.vaultID = vaultID
        self.generation = generation
        self.entriesChecked = entriesChecked
        self.failures = failures
        self.formatVersion = formatVersion
    }

    /// True when the header, the index and every secret authenticated.
    public var isIntact: Bool { failures.isEmpty }
}
