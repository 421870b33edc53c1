/// What `SecretStore.upgradeFormat()` did: the file's format version before and after.
public struct FormatUpgrade: Sendable, Equatable {
    /// The major format version the file had.
    public let previousVersion: Int
    /// The major format version the file has now.
    public let version: Int

    /// True when the file was rewritten.
    public var changed: Bool { previousVersion != version }
}
