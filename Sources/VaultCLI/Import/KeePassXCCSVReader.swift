import CredentialVault
import VaultCrypto

/// `vault import --from keepassxc-csv FILE`: KeePassXC's CSV export (`keepassxc-cli export --format csv`,
/// or Database > Export > CSV): the name is Group/Title without the root group's name, the secret the
/// Password, the label `Username @ URL`. A `TOTP` column (KeePassXC 2.7 and later write the entry's
/// `otp` attribute there as an otpauth://totp/ URI) gives a `totp` entry `<name>/totp` (`TOTPImport`).
enum KeePassXCCSVReader {
    static func read(_ path: String) throws -> ImportSource {
        var bytes = try SecureFileSystem.readInputFile(path, maxBytes: ImportFormat.maximumFileBytes)
        defer { SecureWipe.wipe(&bytes) }
        let records: [[SecureBytes]]
        do {
            records = try CSVRecords(parsing: bytes).records
        } catch let error as CSVRecords.Malformed {
            throw VaultError(.invalidInput, "\(TerminalText.escaped(path)), line \(error.line): not well-formed CSV (a quote is not closed, or text follows one)")
        }
        guard let header = records.first?.map(text) else {
            throw VaultError(.invalidInput, "\(TerminalText.escaped(path)) is empty", fix: "export the database again as CSV")
        }
        func column(_ name: String) throws -> Int {
            guard let index = header.firstIndex(of: name) else {
                throw VaultError(.invalidInput, "\(TerminalText.escaped(path)) is not a KeePassXC CSV export: its first line has no \"\(name)\" column",
                                 fix: "export with keepassxc-cli export --format csv, or Database > Export > CSV File")
            }
            return index
        }
        let group = try column("Group"), title = try column("Title"), password = try column("Password")
        let username = try column("Username"), url = try column("URL")
        // Older exports have no TOTP column.
        let totp = header.firstIndex(of: "TOTP")
        var source = ImportSource()
        for (offset, record) in records.dropFirst().enumerated() {
            guard record.count == header.count else {
                if record.count == 1, record[0].isEmpty { continue }
                throw VaultError(.invalidInput, "\(TerminalText.escaped(path)), record \(offset + 2): \(record.count) fields where the header has \(header.count)")
            }
            // The Group column is the group's path from the root group, whose own name ("Root",
            // "Passwords", anything) is not part of the entry's name.
            let groups = text(record[group]).split(separator: "/", omittingEmptySubsequences: false).dropFirst()
            let name = (groups.map(String.init) + [text(record[title])]).joined(separator: "/")
            let isUTF8 = [record[group], record[title]].allSatisfy { field in
                field.withUnsafeBytes { String(validating: $0, as: UTF8.self) != nil }
            }
            let label = ImportSource.Candidate.label(username: text(record[username]), url: text(record[url]))
            if let totp, isUTF8 { TOTPImport.add(record[totp], login: name, label: label, to: &source) }
            guard !record[password].isEmpty else {
                source.unsupported.append((name, "no password"))
                continue
            }
            source.candidates.append(.init(name: name, secret: record[password], label: label,
                                           invalidReason: isUTF8 ? nil : "the group or title is not UTF-8 text"))
        }
        return source
    }

    /// A non-secret field as text (invalid UTF-8 is replaced; a name with such bytes is marked invalid).
    private static func text(_ field: SecureBytes) -> String {
        field.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
    }
}
