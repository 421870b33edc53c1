/// Constants of the vault file formats (v1, read only; v2 and v3, read and written).
/// `docs/FORMAT.md` is the byte-by-byte specification; keep the two in step.
enum VaultFileLayout {
    /// "\u{89}VAULT\r\n": the high byte and CR LF catch 7-bit and text-mode mangling.
    static let magic: [UInt8] = [0x89, 0x56, 0x41, 0x55, 0x4C, 0x54, 0x0D, 0x0A]
    /// The major version this build gives a new vault, and a file after `SecretStore.upgradeFormat()`.
    /// A write keeps a v2 file at v2 (a v1 file becomes v2), so an older build can still read it.
    static let currentMajorVersion: UInt8 = 3
    /// The minor version this build writes (it reads any minor of majors 1, 2 and 3 with the same layout).
    static let minorVersion: UInt8 = 0

    static let vaultIDByteCount = 16
    static let saltByteCount = 32
    static let nonceByteCount = 12
    static let tagByteCount = 16
    static let dekByteCount = 32
    static let macByteCount = 32
    static let checksumByteCount = 8
    /// Length of the v2 rollback-record key held in the index.
    static let stateKeyByteCount = 32

    /// End of the part authenticated as the AAD of the wrapped data key (both versions).
    static let wrapAADEnd = 70
    /// Offset of the wrapped key (nonce ‖ ciphertext ‖ tag), both versions.
    static let wrapStart = 70
    /// End of the wrapped key, both versions.
    static let wrapEnd = 130

    /// The longest header of any version (what a reader compares to spot an unchanged file).
    static let longestHeaderByteCount = 190

    /// The file (v1) or the header plus the index region, and the values region (v2, v3), are
    /// padded to multiples of this many bytes.
    static let paddingQuantum = 1024

    /// v3: the values region is salt ‖ AES-256-CTR(values ‖ zero padding), under a key made for
    /// this write from the salt (`valuesLayerInfo`), so padding and unchanged values look new and
    /// random each write.
    static let valuesLayerSaltByteCount = 32
    /// v3: the bytes of the values region that are not the values or their padding (the salt).
    static let valuesLayerOverhead = valuesLayerSaltByteCount
    /// v3: the values layer's initial counter block. Each key covers exactly one region (its salt is
    /// 32 random bytes drawn for that write), so a key stream is never used twice.
    static let valuesLayerCounterBlock = [UInt8](repeating: 0, count: 16)

    /// HKDF labels (the `info` input); the salt is always the vault id.
    static let kekInfo = Array("vault/v1/kek/key-material".utf8)
    static let headerMACInfoV1 = Array("vault/v1/header-mac".utf8)
    static let indexKeyInfoV1 = Array("vault/v1/index".utf8)
    static let headerMACInfoV2 = Array("vault/v2/header-mac".utf8)
    static let indexKeyInfoV2 = Array("vault/v2/index".utf8)
    /// The value key and the value AAD are the same in v1, v2 and v3 (and in the PostgreSQL backend).
    static let valueKeyInfo = Array("vault/v1/value".utf8)
    static let valueAADPrefix = Array("vault/v1/value".utf8)
    /// The key of the rollback record: HKDF(state key, vault id, this label).
    static let stateRecordInfo = Array("vault/v2/state-record".utf8)
    /// v3: the key of one write's values layer: HKDF(DEK, vault id ‖ the region's salt, this label).
    static let valuesLayerInfo = Array("vault/v3/values-layer".utf8)
    /// v3: the history key, HKDF(DEK, vault id, this label), and the prefix of a history value's AAD.
    static let historyInfo = Array("vault/v3/history".utf8)

    /// Header flag bit 0 (v3 only): the index carries a history section after the entries. Set only
    /// when there is one, so a vault without history is written as before; a release older than
    /// history refuses the bit as an unsupported version (its check of the header flags).
    static let headerFlagHistory: UInt16 = 1 << 0
    /// Header flag bit 1 (v3 only): some entry has attributes (entry flag bit 3). Set exactly then, so
    /// a release older than attributes refuses such a file as an unsupported version before asking
    /// for its key, instead of calling its index tampered.
    static let headerFlagAttributes: UInt16 = 1 << 1
    /// Header flag bit 2 (v3 only): some entry is of a kind newer than the first five (6, `totp`).
    /// Set exactly then, so a release that knows kinds 1–5 only refuses such a file as an
    /// unsupported version before asking for its key, instead of calling its index tampered.
    static let headerFlagNewerKinds: UInt16 = 1 << 2
    /// The highest kind code every release reads; a higher one sets `headerFlagNewerKinds`.
    static let originalKindsMaximumCode: UInt8 = 5

    /// Entry flag bits in the index.
    static let flagHasLabel: UInt8 = 1 << 0
    static let flagHasExpiry: UInt8 = 1 << 1
    static let flagTransferable: UInt8 = 1 << 2
    /// Set only when the entry has at least one attribute, so an entry without any is encoded as
    /// before; a release older than attributes refuses the bit (its check of unknown flags).
    static let flagHasAttributes: UInt8 = 1 << 3
    static let knownEntryFlags: UInt8 = flagHasLabel | flagHasExpiry | flagTransferable | flagHasAttributes

    /// Rounds `count` up to a multiple of the padding quantum (0 stays 0).
    static func paddedUp(_ count: Int) -> Int {
        let quantum = paddingQuantum
        return (count + quantum - 1) / quantum * quantum
    }

}

/// Where the fields of one major version's header sit.
struct HeaderLayout: Sendable, Equatable {
    let majorVersion: UInt8
    /// End of the bytes covered by the header MAC.
    let macedEnd: Int
    /// End of the bytes covered by the checksum (= start of the checksum).
    let checksummedEnd: Int
    /// Total header length.
    let headerByteCount: Int
    /// Offset of index_length (u32) and values_length (u64).
    let lengthsOffset: Int
    /// HKDF labels of the header MAC and index keys.
    let headerMACInfo: [UInt8]
    let indexKeyInfo: [UInt8]

    /// Version 1: generation and exact lengths in the clear, 190-byte header.
    static let v1 = HeaderLayout(majorVersion: 1, macedEnd: 150, checksummedEnd: 182, headerByteCount: 190, lengthsOffset: 138,
                                 headerMACInfo: VaultFileLayout.headerMACInfoV1, indexKeyInfo: VaultFileLayout.indexKeyInfoV1)
    /// Version 2: padded region sizes only, 182-byte header.
    static let v2 = HeaderLayout(majorVersion: 2, macedEnd: 142, checksummedEnd: 174, headerByteCount: 182, lengthsOffset: 130,
                                 headerMACInfo: VaultFileLayout.headerMACInfoV2, indexKeyInfo: VaultFileLayout.indexKeyInfoV2)
    /// Version 3: the v2 header and index (and their keys: the major version is in the MAC'd
    /// bytes and the index's AAD), with the values region sealed anew on every write.
    static let v3 = HeaderLayout(majorVersion: 3, macedEnd: 142, checksummedEnd: 174, headerByteCount: 182, lengthsOffset: 130,
                                 headerMACInfo: VaultFileLayout.headerMACInfoV2, indexKeyInfo: VaultFileLayout.indexKeyInfoV2)

    /// The layout of `major`, or nil for a version this build does not read.
    static func forMajor(_ major: UInt8) -> HeaderLayout? {
        switch major {
        case 1: .v1
        case 2: .v2
        case 3: .v3
        default: nil
        }
    }

    /// Start of the index region (its nonce).
    var indexStart: Int { headerByteCount }

    /// v3 and later: the values region carries the values layer (`ValuesLayer`).
    var hasValuesLayer: Bool { majorVersion >= 3 }

    /// The bytes of the values region that are not values or padding: the layer's salt in v3, none before.
    var valuesLayerOverhead: Int { hasValuesLayer ? VaultFileLayout.valuesLayerOverhead : 0 }

    /// The size of the values region that holds `valuesLength` bytes of value ciphertexts (v2:
    /// padded; v3: padded together with the layer's salt).
    func valuesRegionByteCount(valuesLength: Int) -> Int {
        VaultFileLayout.paddedUp(valuesLength + valuesLayerOverhead)
    }
}

/// How the key-encryption key is made from the user's key.
package enum KeySlotKind: UInt8, Sendable {
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
