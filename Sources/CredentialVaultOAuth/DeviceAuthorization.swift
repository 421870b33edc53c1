import FoundationEssentials
import VaultCrypto

/// A started device sign-in (RFC 8628 §3.2): show `verificationURI` and `userCode` to the
/// user, then poll with `OAuthClient.pollDeviceAuthorization(_:)`.
public struct DeviceAuthorization: Sendable, CustomStringConvertible {
    /// The code the user types at the verification page (shown to the user; not a secret of ours).
    public let userCode: String
    /// Where the user goes.
    public let verificationURI: String
    /// The page with the code filled in, when the server gives one.
    public let verificationURIComplete: String?
    /// When the device code stops working.
    public let expiresAt: Date
    /// How long to wait between polls (the server's `interval`, 5 s when absent).
    public let interval: Duration
    /// The device code (kept out of descriptions).
    let deviceCode: SecureBytes

    /// "DeviceAuthorization(user code ABCD-EFGH at https://…, expires …)". Never the device code.
    public var description: String {
        "DeviceAuthorization(user code \(userCode) at \(verificationURI), expires \(expiresAt))"
    }
}
