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
    }

    /// The vault's id, in hex.
    public let vaultID: String
    /// The generation that was verified.
    public let generation: UInt64
    /// How many entries were checked.
    public let entriesChecked: Int
    /// Entries whose secret did not authenticate. Empty when the vault is intact.
    public let failures: [Failure]

    /// True when the header, the index and every secret authenticated.
    public var isIntact: Bool { failures.isEmpty }
}
