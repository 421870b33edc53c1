import Logging
import VaultCrypto

/// What this machine remembers of a bucketed PostgreSQL store (layout version 3): the highest
/// generation seen of each bucket, so that a bucket row put back to an older state (with its old
/// entry rows) is refused by every later process too, as `StoreGenerationMemory` does for the
/// single generation of a version 2 store.
///
/// Kept in the rollback-memory directory (`RollbackMemory`) as `pg-<store id in hex>.buckets`:
/// "VAULTPGB" ‖ u8 version 1 ‖ store id (16) ‖ u8 bucket bits ‖ 2^bits × u64 generation ‖
/// HMAC-SHA256 (32) over everything before it, under HKDF(`key`, store id, "vault-pg bucket record v1").
/// A forged, altered or malformed record is ignored (logged), never trusted.
package struct StoreBucketMemory: Sendable {
    private static let magic = Array("VAULTPGB".utf8)
    private static let version: UInt8 = 1
    private static let info = Array("vault-pg bucket record v1".utf8)
    private static let headerByteCount = 8 + 1 + 16 + 1

    private let directory: String?
    private let logger: Logger

    /// A memory in `memory`'s directory (none when disabled); its warnings go to `logger`.
    package init(memory: RollbackMemory, logger: Logger = Logger(label: "vault.postgres", factory: { _ in SwiftLogNoOpLogHandler() })) {
        self.directory = memory.directory()
        self.logger = logger
    }

    /// The remembered generation of each of `storeID`'s 2^`bucketBits` buckets, or nil (none,
    /// disabled, unreadable, of another bucket count or not authentic: logged).
    package func read(storeID: [UInt8], bucketBits: UInt8, key: SymmetricKey) -> [UInt64]? {
        guard let path = path(storeID), SecureFileSystem.exists(path), bucketBits <= 16 else { return nil }
        let bucketCount = 1 << Int(bucketBits)
        let size = Self.headerByteCount + bucketCount * 8 + 32
        do {
            let bytes = try SecureFileSystem.readPrivateFile(path, maxBytes: Self.headerByteCount + (1 << 16) * 8 + 32)
            guard bytes.count == size else {
                logger.warning("ignoring a store bucket record of the wrong size", metadata: ["path": "\(path)"])
                return nil
            }
            var reader = ByteReader(bytes, region: "store bucket record")
            let magic = try reader.readBytes(Self.magic.count), version = try reader.readUInt8()
            let id = try reader.readBytes(storeID.count), bits = try reader.readUInt8()
            guard magic.elementsEqual(Self.magic), version == Self.version, id.elementsEqual(storeID), bits == bucketBits,
                  try HMACSHA256.isValidAuthenticationCode(Array(bytes.suffix(32)), for: Array(bytes.prefix(size - 32)),
                                                           using: macKey(storeID: storeID, key: key)) else {
                logger.warning("ignoring a store bucket record that is malformed or not authentic", metadata: ["path": "\(path)"])
                return nil
            }
            return try (0..<bucketCount).map { _ in try reader.readUInt64() }
        } catch {
            logger.warning("ignoring an unreadable store bucket record", metadata: ["path": "\(path)", "error": "\(error)"])
            return nil
        }
    }

    /// True when this machine holds an authentic record of `storeID` (of any bucket count): the
    /// store was seen in layout 3, so a version 1 or 2 state of it is the database put back to
    /// before its upgrade.
    package func remembers(storeID: [UInt8], key: SymmetricKey) -> Bool {
        guard let path = path(storeID), SecureFileSystem.exists(path),
              let bytes = try? SecureFileSystem.readPrivateFile(path, maxBytes: Self.headerByteCount + (1 << 16) * 8 + 32),
              bytes.count > Self.headerByteCount else { return false }
        let bits = bytes[Self.headerByteCount - 1]
        return bits <= 16 && read(storeID: storeID, bucketBits: bits, key: key) != nil
    }

    /// Remembers `generations` (one per bucket) for `storeID`; a failure is logged, not thrown.
    /// Each bucket keeps the higher of the remembered and the given generation (another process
    /// may have closed later), except the buckets in `replacing` (a rollback accepted on purpose,
    /// for the buckets actually read then), which take the given one.
    ///
    /// The read, merge and write run under an exclusive `flock` on `pg-<id>.buckets.lock` (two
    /// processes closing at once keep each other's buckets), and the file is written durably
    /// (synced, then its folder): a crash leaves the old record or the new one, never a torn file.
    package func write(storeID: [UInt8], bucketBits: UInt8, generations: [UInt64], key: SymmetricKey,
                       replacing: Set<UInt32> = []) {
        guard let directory, let path = path(storeID), generations.count == 1 << Int(bucketBits) else { return }
        let lock: FileLock
        do {
            try SecureFileSystem.ensurePrivateDirectory(directory, create: true)
            lock = try FileLock.acquire(path: path + ".lock", mode: .exclusive, timeout: .seconds(5))
        } catch {
            logger.warning("could not remember the store's bucket generations", metadata: ["path": "\(path)", "error": "\(error)"])
            return
        }
        defer { lock.release() }
        var merged = generations
        if let remembered = read(storeID: storeID, bucketBits: bucketBits, key: key) {
            merged = generations.indices.map { index in
                replacing.contains(UInt32(index)) ? generations[index] : max(generations[index], remembered[index])
            }
            if merged == remembered { return }
        }
        do {
            var writer = ByteWriter(capacity: Self.headerByteCount + merged.count * 8 + 32)
            writer.append(contentsOf: Self.magic)
            writer.append(Self.version)
            writer.append(contentsOf: storeID)
            writer.append(bucketBits)
            for generation in merged { writer.append(generation) }
            let mac = try HMACSHA256.authenticationCode(for: writer.bytes, using: macKey(storeID: storeID, key: key))
            try SecureFileSystem.writeFileAtomically(path, contents: writer.bytes + mac, durable: true)
        } catch {
            logger.warning("could not remember the store's bucket generations", metadata: ["path": "\(path)", "error": "\(error)"])
        }
    }

    private func macKey(storeID: [UInt8], key: SymmetricKey) throws -> SymmetricKey {
        SymmetricKey(bytes: try HKDFSHA256.deriveKey(inputKeyMaterial: key.bytes, salt: storeID, info: Self.info, outputByteCount: 32))
    }

    private func path(_ storeID: [UInt8]) -> String? {
        directory.map { $0 + "/pg-" + storeID.hexString + ".buckets" }
    }
}
