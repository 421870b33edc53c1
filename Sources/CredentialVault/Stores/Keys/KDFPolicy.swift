import VaultCrypto

/// The compiled-in scrypt policy for passphrase vaults.
///
/// A file whose parameters fall outside it is refused before scrypt runs, so a
/// tampered header can neither weaken the KDF nor make us burn minutes and gigabytes.
public struct KDFPolicy: Sendable, Hashable {
    /// logN used for new vaults.
    public let defaultLogN: UInt8
    /// Lowest logN accepted when opening.
    public let minimumLogN: UInt8
    /// Highest logN accepted when opening.
    public let maximumLogN: UInt8
    /// The only accepted r.
    public let r: UInt32
    /// The only accepted p.
    public let p: UInt32
    /// Salt length in bytes.
    public let saltByteCount: Int

    /// The policy every user gets: scrypt N = 2^17 (floor 2^17, ceiling 2^20), r = 8, p = 1, 32-byte salt (OWASP).
    public static let standard = KDFPolicy(defaultLogN: 17, minimumLogN: 17, maximumLogN: 20, r: 8, p: 1, saltByteCount: 32)

    /// A fast policy for this package's own tests. `package` access: no user-settable switch reaches it.
    package static let testing = KDFPolicy(defaultLogN: 10, minimumLogN: 10, maximumLogN: 12, r: 8, p: 1, saltByteCount: 32)

    init(defaultLogN: UInt8, minimumLogN: UInt8, maximumLogN: UInt8, r: UInt32, p: UInt32, saltByteCount: Int) {
        self.defaultLogN = defaultLogN
        self.minimumLogN = minimumLogN
        self.maximumLogN = maximumLogN
        self.r = r
        self.p = p
        self.saltByteCount = saltByteCount
    }

    /// The parameters new vaults get.
    var defaultParameters: Scrypt.Parameters { .init(logN: defaultLogN, r: r, p: p) }

    /// Throws `kdfOutsidePolicy` unless `parameters` are allowed. Runs before any KDF work.
    package func check(_ parameters: Scrypt.Parameters, path: String?) throws {
        guard parameters.r == r, parameters.p == p,
              (minimumLogN...maximumLogN).contains(parameters.logN) else {
            throw VaultError(.kdfOutsidePolicy,
                             "KDF parameters outside policy: the file asks for scrypt \(parameters), "
                                 + "this build accepts logN \(minimumLogN)...\(maximumLogN), r=\(r), p=\(p)",
                             path: path,
                             fix: "the header was altered or the vault was made by an incompatible tool; restore it from a backup")
        }
    }

    /// Throws `suspiciousKDFParameters` when a passphrase slot asks for more scrypt work than
    /// this build writes (`defaultLogN`). Runs before any KDF work: raising the cost in a header
    /// (logN 20 costs 1 GiB and seconds per open) is an edit, not a wrong passphrase.
    /// - Parameter parameters: the header's parameters (already inside the policy).
    ///
    /// The ceiling is the build's alone. This machine's rollback record is read before the key is
    /// derived, so it cannot be authenticated: it may neither raise the ceiling (a forged logN 20
    /// would make an open run scrypt at 1 GiB) nor lower it (a forged logN below the floor would
    /// block every open). No honest record could lower it anyway: the floor is the default.
    /// A cost above the ceiling opens only with `SecretStore.Options.acceptsRaisedKDFCost`.
    func checkCost(_ parameters: Scrypt.Parameters, path: String?) throws {
        guard parameters.logN > defaultLogN else { return }
        throw VaultError(.suspiciousKDFParameters,
                         "suspicious KDF parameters: the file asks for scrypt logN \(parameters.logN) "
                             + "(\(Self.memoryDescription(parameters)) per open), more than logN \(defaultLogN) this build writes; "
                             + "refused before scrypt runs",
                         path: path,
                         fix: "the header was probably altered to make every open slow; restore the vault from a backup, "
                             + "or accept it explicitly if its key was changed on purpose elsewhere",
                         topic: .kdfCostRaised)
    }

    /// "1 GiB" for logN 20, r 8: scrypt needs 128·r·N bytes.
    static func memoryDescription(_ parameters: Scrypt.Parameters) -> String {
        let mebibytes = ((128 * UInt64(parameters.r)) << UInt64(min(parameters.logN, 40))) >> 20
        return mebibytes >= 1024 ? "\(mebibytes / 1024) GiB" : "\(mebibytes) MiB"
    }

    /// Bounds handed to the crypto layer, matching this policy.
    var scryptBounds: Scrypt.Bounds {
        Scrypt.Bounds(logN: minimumLogN...maximumLogN, r: r...r, p: p...p, maximumMemoryBytes: Scrypt.Bounds.standard.maximumMemoryBytes)
    }
}
