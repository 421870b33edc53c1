import VaultCrypto

extension SecretStore {
    /// The key of this vault's audit log: HKDF(IKM = the vault's state key, salt = the vault id,
    /// info = "vault/v3/audit-log"). The state key is random, sealed in the index and fixed for the
    /// vault's life, so the log's chain stays verifiable across `rotate`, `passwd` and sign-outs
    /// (each a new data key), and only a holder of the vault's key can extend or verify it.
    /// - Throws: `.invalidInput` for a version 1 file that was never written since (no state key
    ///   yet), and the errors of `open`.
    package func auditKey() throws -> SymmetricKey {
        let (stateKey, vaultID) = try snapshot { ($0.image.stateKey, $0.image.vaultID) }
        guard let stateKey else {
            throw VaultError(.invalidInput, "this vault file is format version 1 and has no audit key until its next write",
                             path: vaultPath, fix: "write to the vault once (or upgrade its format) first")
        }
        return SymmetricKey(bytes: try HKDFSHA256.deriveKey(inputKeyMaterial: stateKey, salt: vaultID, info: AuditLog.keyInfo,
                                                            outputByteCount: 32))
    }

    /// The vault id of the vault file in `directory`, read from its header without any key (it is
    /// in the clear: it names the vault's rollback record and audit log).
    /// - Throws: `.notFound`, `.corrupt` for a file that is not a vault, and the file checks' errors.
    package static func vaultIDWithoutKey(in directory: String) throws -> String {
        let path = PathText.joining(directory, FileNames.vault)
        let bytes = try SecureFileSystem.readPrivateFile(path, maxBytes: VaultLimits.maximumFileBytes)
        guard VaultFileHeader.majorVersion(of: bytes) != nil, bytes.count >= 12 + VaultFileLayout.vaultIDByteCount else {
            throw VaultError.corrupt("not a vault file (bad magic bytes)", path: path)
        }
        return bytes[12..<(12 + VaultFileLayout.vaultIDByteCount)].hexString
    }
}
