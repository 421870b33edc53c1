import VaultCrypto

/// What this machine remembers of one vault: the highest generation seen and the KDF
/// parameters of its key slot, authenticated with a key only the vault's key holders can
/// derive (HMAC-SHA256 under HKDF(state key, vault id, "vault/v2/state-record"); the state
/// key lives in the encrypted index of formats v2 and v3 and is fixed for the vault's life).
///
/// The file is 75 bytes: "VAULTGEN" ‖ u8 version 1 ‖ vault id (16) ‖ u64 generation ‖
/// u8 slot kind ‖ u8 log_n ‖ u32 r ‖ u32 p ‖ HMAC (32) over everything before it.
struct RollbackRecord: Sendable, Equatable {
    static let magic = Array("VAULTGEN".utf8)
    static let version: UInt8 = 1
    static let byteCount = 75
    static let macedByteCount = 43

    var vaultID: [UInt8]
    var generation: UInt64
    var slotKind: UInt8
    var scrypt: Scrypt.Parameters
    var mac: [UInt8]

    /// The file name of a vault's record: its id in hex.
    static func fileName(vaultID: [UInt8]) -> String { vaultID.hexString + ".generation" }

    /// Makes a record authenticated with `stateKey`.
    init(vaultID: [UInt8], generation: UInt64, slot: KeySlot, stateKey: [UInt8]) throws {
        self.vaultID = vaultID
        self.generation = generation
        self.slotKind = slot.kind.rawValue
        self.scrypt = slot.scrypt
        self.mac = []
        self.mac = try HMACSHA256.authenticationCode(for: macedBytes(), using: Self.key(stateKey: stateKey, vaultID: vaultID))
    }

    private init(vaultID: [UInt8], generation: UInt64, slotKind: UInt8, scrypt: Scrypt.Parameters, mac: [UInt8]) {
        self.vaultID = vaultID
        self.generation = generation
        self.slotKind = slotKind
        self.scrypt = scrypt
        self.mac = mac
    }

    static func key(stateKey: [UInt8], vaultID: [UInt8]) throws -> SymmetricKey {
        SymmetricKey(bytes: try HKDFSHA256.deriveKey(inputKeyMaterial: stateKey, salt: vaultID,
                                                     info: VaultFileLayout.stateRecordInfo, outputByteCount: 32))
    }

    func macedBytes() -> [UInt8] {
        var writer = ByteWriter(capacity: Self.byteCount)
        writer.append(contentsOf: Self.magic)
        writer.append(Self.version)
        writer.append(contentsOf: vaultID)
        writer.append(generation)
        writer.append(slotKind)
        writer.append(scrypt.logN)
        writer.append(scrypt.r)
        writer.append(scrypt.p)
        return writer.bytes
    }

    func encoded() -> [UInt8] { macedBytes() + mac }

    /// True when the MAC verifies under the vault's state key.
    func isAuthentic(stateKey: [UInt8]) -> Bool {
        guard let key = try? Self.key(stateKey: stateKey, vaultID: vaultID),
              let valid = try? HMACSHA256.isValidAuthenticationCode(mac, for: macedBytes(), using: key) else { return false }
        return valid
    }

    /// True when `slot` has the same kind and scrypt parameters.
    func matches(_ slot: KeySlot) -> Bool { slotKind == slot.kind.rawValue && scrypt == slot.scrypt }

    /// Parses a record file; nil when it is not one (a damaged record counts as absent).
    static func parse(_ bytes: [UInt8]) -> RollbackRecord? {
        guard bytes.count == byteCount, Array(bytes[0..<8]) == magic, bytes[8] == version else { return nil }
        var reader = ByteReader(bytes, region: "rollback record", offset: 9)
        guard let vaultID = try? reader.readBytes(VaultFileLayout.vaultIDByteCount),
              let generation = try? reader.readUInt64(), let kind = try? reader.readUInt8(),
              let logN = try? reader.readUInt8(), let r = try? reader.readUInt32(), let p = try? reader.readUInt32(),
              let mac = try? reader.readBytes(VaultFileLayout.macByteCount) else { return nil }
        return RollbackRecord(vaultID: Array(vaultID), generation: generation, slotKind: kind,
                              scrypt: Scrypt.Parameters(logN: logN, r: r, p: p), mac: Array(mac))
    }
}
