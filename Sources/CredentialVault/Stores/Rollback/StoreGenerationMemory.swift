import Logging
import VaultCrypto

/// What this machine remembers of a store that is not a vault file (a PostgreSQL store): the
/// highest generation seen, so that a database put back to an older state is refused by every
/// later process, as the vault file's `RollbackRecord` does for the file.
///
/// Kept in the rollback-memory directory (`RollbackMemory`) as `pg-<store id in hex>.generation`,
/// 65 bytes: "VAULTPGG" ‖ u8 version 1 ‖ store id (16) ‖ u64 generation ‖ HMAC-SHA256 (32) over
/// everything before it, under HKDF(`key`, store id, "vault-pg generation record v1"), a key only
/// the store's key holders can derive: a forged or altered record is ignored (logged), never trusted.
package struct StoreGenerationMemory: Sendable {
    private static let magic = Array("VAULTPGG".utf8)
    private static let version: UInt8 = 1
    private static let info = Array("vault-pg generation record v1".utf8)

    private let directory: String?
    private let logger: Logger

    /// A memory in `memory`'s directory (none when disabled).
    package init(memory: RollbackMemory, logger: Logger) {
        self.directory = memory.directory()
        self.logger = logger
    }

    /// The remembered generation of `storeID`, or nil (none, disabled, unreadable or not authentic: logged).
    package func read(storeID: [UInt8], key: SymmetricKey) -> UInt64? {
        guard let path = path(storeID), SecureFileSystem.exists(path) else { return nil }
        do {
            let bytes = try SecureFileSystem.readPrivateFile(path, maxBytes: 4096)
            guard bytes.count == 65 else {
                logger.warning("ignoring a store generation record of the wrong size", metadata: ["path": "\(path)"])
                return nil
            }
            var reader = ByteReader(bytes, region: "store generation record")
            let magic = try reader.readBytes(Self.magic.count), version = try reader.readUInt8()
            let id = try reader.readBytes(storeID.count), generation = try reader.readUInt64()
            guard magic.elementsEqual(Self.magic), version == Self.version, id.elementsEqual(storeID),
                  try HMACSHA256.isValidAuthenticationCode(Array(bytes.suffix(32)), for: Array(bytes.prefix(33)),
                                                           using: macKey(storeID: storeID, key: key)) else {
                logger.warning("ignoring a store generation record that is malformed or not authentic", metadata: ["path": "\(path)"])
                return nil
            }
            return generation
        } catch {
            logger.warning("ignoring an unreadable store generation record", metadata: ["path": "\(path)", "error": "\(error)"])
            return nil
        }
    }

    /// Remembers `generation` for `storeID` (atomically; a failure is logged, not thrown). Unless
    /// `replacing` (a rollback accepted on purpose), a higher generation already remembered (by
    /// another process that closed later) is kept.
    package func write(storeID: [UInt8], generation: UInt64, key: SymmetricKey, replacing: Bool = false) {
        guard let directory, let path = path(storeID) else { return }
        if !replacing, let remembered = read(storeID: storeID, key: key), remembered >= generation { return }
        do {
            var writer = ByteWriter(capacity: 65)
            writer.append(contentsOf: Self.magic)
            writer.append(Self.version)
            writer.append(contentsOf: storeID)
            writer.append(generation)
            let mac = try HMACSHA256.authenticationCode(for: writer.bytes, using: macKey(storeID: storeID, key: key))
            try SecureFileSystem.ensurePrivateDirectory(directory, create: true)
            try SecureFileSystem.writeFileAtomically(path, contents: writer.bytes + mac, durable: false)
        } catch {
            logger.warning("could not remember the store's generation", metadata: ["path": "\(path)", "error": "\(error)"])
        }
    }

    private func macKey(storeID: [UInt8], key: SymmetricKey) throws -> SymmetricKey {
        SymmetricKey(bytes: try HKDFSHA256.deriveKey(inputKeyMaterial: key.bytes, salt: storeID, info: Self.info, outputByteCount: 32))
    }

    private func path(_ storeID: [UInt8]) -> String? {
        directory.map { $0 + "/pg-" + storeID.hexString + ".generation" }
    }
}
