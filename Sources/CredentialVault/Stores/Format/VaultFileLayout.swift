/// Constants of vault file format v1. `docs/FORMAT.md` is the byte-by-byte specification;
/// keep the two in step.
enum VaultFileLayout {
    /// "\u{89}VAULT\r\n": the high byte and CR LF catch 7-bit and text-mode mangling.
    static let magic: [UInt8] = [0x89, 0x56, 0x41, 0x55, 0x4C, 0x54, 0x0D, 0x0A]
    /// The only major version this build reads and writes.
    static let majorVersion: UInt8 = 1
    /// The minor version this build writes (it reads any minor of major 1 with the same layout).
    static let minorVersion: UInt8 = 0

    static let vaultIDByteCount = 16
    static let saltByteCount = 32
    static let nonceByteCount = 12
    static let tagByteCount = 16
    static let dekByteCount = 32
    static let macByteCount = 32
    static let checksumByteCount = 8

    // Offsets inside the fixed-size header.
    /// End of the part authenticated as the AAD of the wrapped data key.
    static let wrapAADEnd = 70
    static let macedEnd = 150
    static let checksummedEnd = 182
    /// Total header length.
    static let headerByteCount = 190

    /// The index is padded so that the whole file is a multiple of this many bytes.
    static let paddingQuantum = 1024

    /// HKDF labels (the `info` input); the salt is always the vault id.
    static let kekInfo = Array("vault/v1/kek/key-material".utf8)
    static let headerMACInfo = Array("vault/v1/header-mac".utf8)
    static let indexKeyInfo = Array("vault/v1/index".utf8)
    static let valueKeyInfo = Array("vault/v1/value".utf8)
    static let valueAADPrefix = Array("vault/v1/value".utf8)

    /// Entry flag bits in the index.
    static let flagHasLabel: UInt8 = 1 << 0
    static let flagHasExpiry: UInt8 = 1 << 1
    static let flagTransferable: UInt8 = 1 << 2
    static let knownEntryFlags: UInt8 = flagHasLabel | flagHasExpiry | flagTransferable
}

/// How the key-encryption key is made from the user's key.
enum KeySlotKind: UInt8, Sendable {
    /// scrypt over a passphrase.
    case scrypt = 1
    /// HKDF-SHA256 over 32 bytes of key material (a key file).
    case keyMaterial = 2

    var userFacingName: String {
        switch self {
        case .scrypt: "a passphrase"
        case .keyMaterial: "a key file"
        }
    }
}
