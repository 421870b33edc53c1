import CredentialVault

/// Reads the secrets that references name (`vault://NAME?owner=…`), for `exec` and `inject`.
struct ReferenceResolver {
    let storage: any SecretStorage

    /// The secret of `reference`.
    /// - Parameter origin: where the reference was written ("app.env, line 3"), for the message.
    /// - Throws: `VaultError` `.notFound` naming the reference and where it was written (never a value);
    ///   `.invalidInput` for an entry of the session's (`ReservedEntryNames`), which is never handed out.
    func secret(for reference: SecretReference, origin: String) async throws -> SecureBytes {
        do {
            try ReservedEntryNames.check(name: reference.name, owner: reference.owner, for: .read)
        } catch let error as VaultError {
            throw VaultError(error.code, "\(origin): \(error.message)", fix: error.fix)
        }
        do {
            return try await storage.readEntry(named: reference.name, owner: reference.owner).secret
        } catch VaultError.Code.notFound {
            throw VaultError(.notFound, "\(origin): \(reference) names no entry of this vault",
                             fix: "add it with 'vault add \(reference.name)', or correct the reference (vault list shows the names)")
        }
    }
}
