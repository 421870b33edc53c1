import CredentialVault
import VaultCrypto

/// `vault import --from bitwarden-json FILE`: Bitwarden's unencrypted JSON export. Each login becomes an
/// entry: the name is Folder/Name (Name without a folder), the secret the password, the label the
/// username. A login's `totp` (an otpauth:// URI, or the bare base32 secret Bitwarden also accepts)
/// gives a `totp` entry `<name>/totp` (`TOTPImport`). Notes, cards, identities and logins without a
/// password are reported, not imported. An encrypted ("password protected" or account-restricted)
/// export is refused.
enum BitwardenJSONReader {
    static func read(_ path: String) throws -> ImportSource {
        var bytes = try SecureFileSystem.readInputFile(path, maxBytes: ImportFormat.maximumFileBytes)
        defer { SecureWipe.wipe(&bytes) }
        let document: JSONValue
        do {
            document = try JSONValue(parsing: bytes)
        } catch {
            throw VaultError(.invalidInput, "\(TerminalText.escaped(path)) is not JSON", fix: "give Bitwarden's export in the .json format")
        }
        if document["encrypted"]?.boolValue == true {
            throw VaultError(.invalidInput, "\(TerminalText.escaped(path)) is an encrypted Bitwarden export, which vault cannot read",
                             fix: "export again choosing the .json format (not \"Encrypted JSON\"), import that, then shred it")
        }
        guard let items = document["items"]?.arrayValue else {
            throw VaultError(.invalidInput, "\(TerminalText.escaped(path)) is not a Bitwarden JSON export: it has no \"items\" list")
        }
        var folders: [String: String] = [:]
        for folder in document["folders"]?.arrayValue ?? [] {
            if let id = folder["id"]?.stringValue, let name = folder["name"]?.stringValue { folders[id] = name }
        }
        var source = ImportSource()
        for item in items {
            let itemName = item["name"]?.stringValue ?? ""
            let name = item["folderId"]?.stringValue.flatMap { folders[$0] }.map { "\($0)/\(itemName)" } ?? itemName
            guard item["type"]?.intValue == 1, let login = item["login"] else {
                source.unsupported.append((name, "not a login (\(kindName(item["type"]?.intValue)))"))
                continue
            }
            let label = login["username"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 }
            if let totp = login["totp"]?.stringValue {
                TOTPImport.add(SecureBytes(copying: Array(totp.utf8)), login: name, label: label, to: &source)
            }
            guard let password = login["password"]?.stringValue, !password.isEmpty else {
                source.unsupported.append((name, "no password"))
                continue
            }
            source.candidates.append(.init(name: name, secret: SecureBytes(copying: Array(password.utf8)), label: label))
        }
        return source
    }

    private static func kindName(_ type: Int?) -> String {
        switch type {
        case 2: "a secure note"
        case 3: "a card"
        case 4: "an identity"
        case 5: "an SSH key"
        default: "an item of another type"
        }
    }
}
