import CredentialVault

/// The TOTP seed of an imported login (KeePassXC's `TOTP` column, Bitwarden's `login.totp`) as an
/// entry of its own: kind `totp`, named `<login's name>/totp`, holding an otpauth://totp/ URI.
enum TOTPImport {
    /// What goes after the login's name: "Work/GitHub" → "Work/GitHub/totp".
    static let nameSuffix = "/totp"

    /// Adds the seed in `value` (a URI, or a bare base32 secret given the defaults SHA1, 6
    /// digits, 30 s) to `source`; an empty value adds nothing. A URI is kept as the export wrote
    /// it once it parses; a malformed one becomes an invalid candidate whose reason names the
    /// parameter (never the seed); a Steam Guard seed (`steam://`) is reported as not imported.
    static func add(_ value: SecureBytes, login name: String, label: String?, to source: inout ImportSource) {
        guard !value.isEmpty else { return }
        let entryName = name + nameSuffix
        if value.withUnsafeBytes({ $0.starts(with: Array("steam://".utf8)) }) {
            source.unsupported.append((entryName, "a Steam Guard seed, whose codes are not RFC 6238 codes"))
            return
        }
        do {
            let secret = OTPAuthURI.looksLikeURI(value) ? try checked(value) : try OTPAuthURI(base32Secret: value, label: name).uri
            source.candidates.append(.init(name: entryName, secret: secret, label: label, kind: .totp))
        } catch let error as VaultError {
            source.candidates.append(.init(name: entryName, secret: .empty, label: label, invalidReason: error.message, kind: .totp))
        } catch {
            source.candidates.append(.init(name: entryName, secret: .empty, label: label, invalidReason: "\(error)", kind: .totp))
        }
    }

    private static func checked(_ uri: SecureBytes) throws -> SecureBytes {
        _ = try OTPAuthURI(parsing: uri)
        return uri
    }
}
