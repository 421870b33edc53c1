import VaultCrypto

extension VaultKey {
    /// The largest passphrase file accepted: 64 KiB.
    public static let maximumPassphraseFileBytes = 64 * 1024

    /// Reads a passphrase from a file, checked like a key file: a regular file owned by you
    /// with no group or world access. One trailing "\n" (or "\r\n") is dropped, so
    /// `printf 'x\n' > FILE` and `printf x > FILE` give the same passphrase.
    /// - Parameter path: the passphrase file.
    /// - Returns: a `.passphrase` key.
    /// - Throws: `VaultError` `.notFound`, `.insecurePermissions`, `.invalidKey` when it is empty,
    ///   `.corrupt` when larger than 64 KiB, `.io`.
    public static func fromPassphraseFile(path: String) throws -> VaultKey {
        var bytes = try SecureFileSystem.readPrivateFile(path, maxBytes: maximumPassphraseFileBytes)
        defer { SecureWipe.wipe(&bytes) }
        var end = bytes.count
        if end > 0, bytes[end - 1] == UInt8(ascii: "\n") {
            end -= 1
            if end > 0, bytes[end - 1] == UInt8(ascii: "\r") { end -= 1 }
        }
        guard end > 0 else {
            throw VaultError(.invalidKey, "the passphrase file is empty", path: path, fix: "write the passphrase into it")
        }
        return .passphrase(SecureBytes(copying: bytes[0..<end]))
    }
}
