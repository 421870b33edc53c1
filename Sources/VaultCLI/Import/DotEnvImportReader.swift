import CredentialVault
import VaultCrypto

/// `vault import --from dotenv FILE`: each variable becomes an entry named after it.
enum DotEnvImportReader {
    static func read(_ path: String) throws -> ImportSource {
        var bytes = try SecureFileSystem.readInputFile(path, maxBytes: ImportFormat.maximumFileBytes)
        defer { SecureWipe.wipe(&bytes) }
        let file = try DotEnvFile(parsing: bytes, path: path)
        var source = ImportSource()
        for binding in file.bindings {
            guard let value = binding.value else {
                source.unsupported.append((binding.key, "line \(binding.line) has no value (no '=')"))
                continue
            }
            source.candidates.append(.init(name: binding.key, secret: SecureBytes(copying: Array(value.utf8)), label: nil))
        }
        return source
    }
}
