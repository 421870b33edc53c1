#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VaultCrypto

/// The secret that opens a vault: a passphrase, or 32 bytes of key material
/// (from a key file or handed in by an app).
public enum VaultKey: Sendable, CustomStringConvertible {
    /// A passphrase, stretched with scrypt. Must not be empty.
    case passphrase(SecureBytes)
    /// 32 random bytes, expanded with HKDF-SHA256 (no stretching needed).
    case keyMaterial(SecureBytes)

    /// The length of key material and of key files: 32 bytes.
    public static let keyMaterialByteCount = 32

    /// Reads a key file: exactly 32 bytes, a regular file owned by you with no group or world access
    /// — or, directly inside `$CREDENTIALS_DIRECTORY`, a systemd credential (root's, 0400, with an ACL
    /// for this user alone: the shape `LoadCredential=` gives a `User=` service).
    /// - Throws: `VaultError` `.invalidKey` for a wrong size, `.insecurePermissions`, `.notFound`, `.io`.
    public static func fromKeyFile(path: String) throws -> VaultKey {
        var bytes = try SecureFileSystem.readKeyFile(path, maxBytes: 4096)
        defer { SecureWipe.wipe(&bytes) }
        guard bytes.count == keyMaterialByteCount else {
            throw VaultError(.invalidKey, "a key file must hold exactly \(keyMaterialByteCount) bytes; this one holds \(bytes.count)",
                             path: path, fix: "create a new key file; this one is not a vault key", topic: .keyFileMalformed)
        }
        return .keyMaterial(SecureBytes(copying: bytes))
    }

    /// The key in the key file at `path`, made first when there is none (an app's first launch, in
    /// one call): a new random key, mode 0600, its missing folders made 0700. Two processes
    /// launching at once make one key between them (the file is created exclusively; the one that
    /// loses reads the winner's). An existing file is read and checked as by `fromKeyFile(path:)`,
    /// never replaced.
    /// - Throws: as `fromKeyFile(path:)` and `generateKeyFile(path:createMissingFolders:)`.
    public static func fromKeyFile(path: String, createIfMissing: Bool) throws -> VaultKey {
        guard createIfMissing, !SecureFileSystem.exists(path) else { return try fromKeyFile(path: path) }
        do {
            try generateKeyFile(path: path, createMissingFolders: true)
            return try fromKeyFile(path: path)
        } catch let error as VaultError where error.code == .alreadyExists {
            // Another process made it between the check and ours, and may still be writing its 32
            // bytes: read theirs once complete (bounded: 100 tries, 10 ms apart).
            for _ in 0..<100 {
                if let key = try? fromKeyFile(path: path) { return key }
                usleep(10_000)
            }
            return try fromKeyFile(path: path)
        }
    }

    /// Writes a new random 32-byte key file with mode 0600; refuses to overwrite.
    /// - Parameters:
    ///   - path: where to write it.
    ///   - createMissingFolders: make the missing folders on the way, each 0700 (`mkdir -p`
    ///     with a private mode); folders that exist are left as they are.
    /// - Throws: `.alreadyExists` when the file exists, `.notFound` when its folder is missing
    ///   (and `createMissingFolders` is false), `.io` on failure.
    public static func generateKeyFile(path: String, createMissingFolders: Bool = false) throws {
        let folder = PathText.parent(of: path)
        // Only a missing folder is made (0700, through descriptors, ancestors checked as for
        // a vault folder); an existing one is left as it is, whatever its mode.
        if createMissingFolders, !folder.isEmpty, !SecureFileSystem.exists(folder) {
            _ = try SecureFileSystem.openPrivateDirectory(folder, create: true)
        }
        // createFileExclusively refuses an existing path atomically (O_EXCL): no check first.
        let key = try SecureRandom.secureBytes(count: keyMaterialByteCount)
        var bytes = key.withUnsafeBytes { Array($0) }
        defer { SecureWipe.wipe(&bytes) }
        try SecureFileSystem.createFileExclusively(path, contents: bytes)
    }

    /// The key slot kind this key fits.
    package var slotKind: KeySlotKind {
        switch self {
        case .passphrase: .scrypt
        case .keyMaterial: .keyMaterial
        }
    }

    /// Checks the key's shape before any file is touched.
    package func validate() throws {
        switch self {
        case let .passphrase(bytes):
            guard !bytes.isEmpty else {
                throw VaultError(.invalidKey, "the passphrase is empty", fix: "use a non-empty passphrase")
            }
        case let .keyMaterial(bytes):
            guard bytes.count == Self.keyMaterialByteCount else {
                throw VaultError(.invalidKey, "key material must be exactly \(Self.keyMaterialByteCount) bytes; got \(bytes.count)",
                                 fix: "use 32 bytes from a new key file", topic: .keyFileMalformed)
            }
        }
    }

    /// Says which kind of key, never the key.
    public var description: String {
        switch self {
        case .passphrase: "VaultKey.passphrase(redacted)"
        case .keyMaterial: "VaultKey.keyMaterial(redacted)"
        }
    }
}
