import ArgumentParser
import CredentialVault

/// The formats `vault import --from` reads (a contract: these names are public).
enum ImportFormat: String, CaseIterable, ExpressibleByArgument, Sendable {
    /// A password-store folder (`pass`), decrypted with the user's gpg.
    case pass
    /// A `.env` file: each variable an entry.
    case dotenv
    /// KeePassXC's CSV export.
    case keepassxcCSV = "keepassxc-csv"
    /// Bitwarden's unencrypted JSON export.
    case bitwardenJSON = "bitwarden-json"
    /// The items of the Secret Service provider that owns `org.freedesktop.secrets` now (no SOURCE):
    /// read over D-Bus by `vault-secret-service` (`SecretServiceImportReader`).
    case secretService = "secret-service"

    /// Whether SOURCE names a file or folder (every format but `secret-service`).
    var readsFiles: Bool { self != .secretService }

    /// Reads `source` in this format.
    /// - Parameter readSecrets: false for `--dry-run` of a password store: names only, nothing decrypted.
    func read(_ source: String, readSecrets: Bool) throws -> ImportSource {
        switch self {
        case .pass: try PassStoreReader.read(source, decrypt: readSecrets)
        case .dotenv: try DotEnvImportReader.read(source)
        case .keepassxcCSV: try KeePassXCCSVReader.read(source)
        case .bitwardenJSON: try BitwardenJSONReader.read(source)
        case .secretService:
            throw VaultError(.invalidInput, "secret-service is read from the session bus, not from \(TerminalText.escaped(source))")
        }
    }

    /// The largest export file read (64 MiB).
    static let maximumFileBytes = 64 * 1024 * 1024
}

/// What a source holds: the entries to import, in source order, and what it holds that vault does not take.
struct ImportSource {
    /// One entry of the source.
    struct Candidate {
        /// Its name in vault.
        let name: String
        /// Its secret (empty for a dry run of a password store, which decrypts nothing).
        let secret: SecureBytes
        /// A label (`Username @ URL`), or nil.
        let label: String?
        /// Why the source's own data makes it invalid (a name that is not UTF-8), or nil.
        var invalidReason: String? = nil
        /// The entry's owner ("" but for `secret-service`).
        var owner = ""
        /// The entry's kind: `generic`, or `totp` for a login's TOTP seed (`TOTPImport`), `password`
        /// for a Secret Service item.
        var kind = EntryKind.generic
        /// The entry's attributes (a Secret Service item's).
        var attributes: [String: String] = [:]
        /// How messages show it, when not by its name (a Secret Service item: "NAME (Collection/Label)").
        var shown: String? = nil

        /// A candidate; the members after `label` as for the file formats unless given.
        init(name: String, secret: SecureBytes, label: String?, invalidReason: String? = nil, owner: String = "",
             kind: EntryKind = .generic, attributes: [String: String] = [:], shown: String? = nil) {
            self.name = name
            self.secret = secret
            self.label = label
            self.invalidReason = invalidReason
            self.owner = owner
            self.kind = kind
            self.attributes = attributes
            self.shown = shown
        }
    }

    /// The entries, in source order.
    var candidates: [Candidate] = []
    /// Items of the source that are not imported, with why (a note, a card, a login without a password).
    var unsupported: [(name: String, reason: String)] = []
}

extension ImportSource.Candidate {
    /// `Username @ URL`, or whichever of the two there is, or nil.
    static func label(username: String?, url: String?) -> String? {
        let user = username.flatMap { $0.isEmpty ? nil : $0 }, address = url.flatMap { $0.isEmpty ? nil : $0 }
        switch (user, address) {
        case let (user?, address?): return "\(user) @ \(address)"
        case let (user?, nil): return user
        case let (nil, address?): return address
        case (nil, nil): return nil
        }
    }
}
